"""The HTTP API (FastAPI): health, the live floor, members, dead letters and metrics.

Handlers are thin: they read the floor store and shape JSON. Routes that change data
take the raw file body a casino exports (CSV or JSON), validated as a whole.
"""

from __future__ import annotations

import redis.exceptions
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute

from bonusd.access.auth import AuthError
from bonusd.api import (
    appapi,
    audit,
    changes,
    docs,
    draws,
    floor,
    jackpots,
    kiosk,
    logos,
    members,
    notices,
    operations,
    pages,
    promotions,
    push,
    screens,
    signin,
)
from bonusd.api.context import ApiContext, attach
from bonusd.api.errors import GENERAL_ERRORS, document_guarded
from bonusd.api.floor import IMPORT_PATHS
from bonusd.api.httpguard import (
    BodyLimits,
    SecureHeaders,
    validation_refused,
)
from bonusd.api.push import KeepTransport
from bonusd.draws.book import LedgerError
from bonusd.draws.claims import ClaimError, RoleError
from bonusd.draws.rounds import DrawError
from bonusd.errors import ConflictError, ImportFileError, NotFoundError, SeedRefused
from bonusd.notices.outbox import OutboxError
from bonusd.raps.rules import RapsError


def include(app: FastAPI, router: APIRouter) -> None:
    """Add a resource's routes to `app`, the refusals of its guarded routes documented."""
    document_guarded(router)  # 401, 403, 409, 429 where a token is checked
    app.include_router(router)


def api_routes(app: FastAPI) -> list[BaseRoute]:
    """Every route of `app` as it was declared, those of included routers too (FastAPI
    keeps an included router as one entry of `app.routes`)."""
    return [rc.original_route for rc in iter_route_contexts(app.routes)]


def create_app(ctx: ApiContext) -> FastAPI:
    """Build the application around one daemon's context."""
    app = FastAPI(
        title="bonusd",
        version="1",
        summary="Real-time casino floor bonusing: the live floor and its promotions.",
        docs_url=None,  # served from a local copy of Swagger UI (bonusd/api/docs.py)
        redoc_url=None,
        responses=GENERAL_ERRORS,  # one error body (bonusd/api/errors.py), on every route
    )
    app.add_middleware(BodyLimits, streamed=IMPORT_PATHS)
    app.add_middleware(SecureHeaders)  # outermost: also on BodyLimits' refusals
    app.add_exception_handler(RequestValidationError, validation_refused)
    attach(app, ctx)

    @app.exception_handler(redis.exceptions.ConnectionError)
    async def _redis_down(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(
            {"detail": f"Redis is unavailable ({exc}); the daemon keeps retrying"}, status_code=503
        )

    @app.exception_handler(AuthError)
    async def _auth(_: Request, exc: AuthError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(DrawError)
    @app.exception_handler(ClaimError)
    @app.exception_handler(RapsError)
    @app.exception_handler(ConflictError)
    @app.exception_handler(OutboxError)
    async def _refused(_: Request, exc: Exception) -> JSONResponse:
        status = 403 if isinstance(exc, RoleError) else 409
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.exception_handler(NotFoundError)
    async def _not_found(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(LedgerError)
    @app.exception_handler(SeedRefused)  # the data is wrong, not the request: 500, said why
    async def _ledger(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=500)

    @app.exception_handler(ImportFileError)
    async def _bad_import(_: Request, exc: ImportFileError) -> JSONResponse:
        rows = [{"row": e.row, "field": e.field, "problem": e.problem} for e in exc.errors]
        return JSONResponse({"detail": str(exc), "errors": rows}, status_code=422)

    for router in (operations.router, floor.router, members.router):
        include(app, router)

    include(app, promotions.router)
    include(app, audit.router)
    include(app, draws.router)
    include(app, changes.router)
    include(app, jackpots.router)
    include(app, kiosk.router)  # the eHost kiosks and their receipts
    include(app, appapi.router)  # the casino app's back end (docs/app-api.md)
    include(app, notices.router)
    include(app, signin.router)  # staff sign-in and accounts (docs/security.md)
    include(app, screens.router)  # paired screens, machine credentials (docs/security.md)
    include(app, pages.router)
    include(app, logos.router)  # the promotions' logos on the floor screens
    if ctx.push is not None:  # the live push: /ws/signage, /ws/crew
        app.add_middleware(KeepTransport)
        include(app, push.router)
    include(app, docs.router)  # build the app with docs_url=None

    return app
