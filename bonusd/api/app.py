"""The HTTP API (FastAPI): health, the live floor, members, dead letters and metrics.

Handlers are thin: they read the floor store and shape JSON. Routes that change data
take the raw file body a casino exports (CSV or JSON), validated as a whole.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import redis.exceptions
from fastapi import FastAPI, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from bonusd.access.auth import AuthError, Role
from bonusd.api.context import ApiContext, guard
from bonusd.api.docs import add_docs_routes
from bonusd.api.draws import add_draw_routes
from bonusd.api.errors import GENERAL_ERRORS, ImportErrorOut, document_guarded
from bonusd.api.httpguard import (
    MAX_IMPORT_BYTES,
    BodyLimits,
    SecureHeaders,
    validation_refused,
)
from bonusd.api.importer import Importer
from bonusd.api.jackpots import add_jackpot_routes
from bonusd.api.notices import add_notice_routes
from bonusd.api.pages import add_page_routes
from bonusd.api.promotions import add_promotion_routes
from bonusd.api.push import add_push_routes
from bonusd.draws.book import LedgerError
from bonusd.draws.claims import ClaimError, RoleError
from bonusd.draws.rounds import DrawError
from bonusd.errors import ConflictError, ImportFileError, NotFoundError
from bonusd.floor.activeview import ActiveFloor
from bonusd.raps.rules import RapsError
from bonusd.registry.records import CARD_PATTERN, Member

CARD = Path(pattern=CARD_PATTERN, description="Member card number")


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    site: str
    mqtt: Literal["connected", "reconnecting"]  # connected: the session confirmed alive
    redis: Literal["ok", "unavailable"]
    ingest: Literal["ok", "stalled"]  # stalled: a message waits uncommitted too long
    mqtt_error: str
    redis_error: str
    ingest_error: str
    ingest_lag_seconds: float
    pending_messages: int
    clock: dt.datetime
    gaming_day: dt.date
    role: Literal["leader", "standby"]  # docs/leader.md
    leader_token: int | None  # the fencing token while this daemon leads


class ActiveOut(BaseModel):
    card: str
    kind: str
    device: str
    seat: int | None
    area: str
    since: str | None
    last_play: str | None
    last_seen: str | None


class DayOut(BaseModel):
    card: str
    gaming_day: dt.date
    slots_points: int
    tables_points: int
    spend_cents: int
    slots_spend_cents: int
    tables_spend_cents: int
    win_cents: int
    games: int
    ratings: int
    visit: bool


class MemberOut(BaseModel):
    card: str
    registered: bool
    flagged_unregistered: bool
    member: Member | None
    active: ActiveOut | None


class ImportOut(BaseModel):
    imported: int


IMPORT_PATHS = {"/members/import": MAX_IMPORT_BYTES, "/devices/import": MAX_IMPORT_BYTES}


def _file_body(what: str, header: str) -> dict[str, Any]:
    text = {"schema": {"type": "string"}}
    return {
        "requestBody": {
            "required": True,
            "description": f"The {what} file: CSV with the header `{header}`, or a JSON array.",
            "content": {"text/csv": text, "application/json": {"schema": {"type": "array"}}},
        }
    }


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
    importer = Importer(ctx.store)  # off the event loop: bonusd/api/importer.py

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
    async def _refused(_: Request, exc: Exception) -> JSONResponse:
        status = 403 if isinstance(exc, RoleError) else 409
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.exception_handler(NotFoundError)
    async def _not_found(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(LedgerError)
    async def _ledger(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=500)

    floor_readers = guard(ctx, Role.CREW, Role.DESK)
    active_floor = ActiveFloor(ctx.store.redis, ctx.store.keys)
    desk_only = guard(ctx, Role.DESK)
    admin_only = guard(ctx, Role.ADMIN)

    @app.exception_handler(ImportFileError)
    async def _bad_import(_: Request, exc: ImportFileError) -> JSONResponse:
        rows = [{"row": e.row, "field": e.field, "problem": e.problem} for e in exc.errors]
        return JSONResponse({"detail": str(exc), "errors": rows}, status_code=422)

    @app.get("/health", response_model=HealthOut, tags=["operations"])
    async def health() -> HealthOut:
        h = ctx.health
        now = ctx.clock.now()
        return HealthOut(
            status=h.status(),
            site=ctx.site,
            mqtt="connected" if h.mqtt_alive() else "reconnecting",
            redis="ok" if h.redis_ok else "unavailable",
            ingest="stalled" if h.ingest_stalled() else "ok",
            mqtt_error=h.mqtt_problem(),
            redis_error=h.redis_error,
            ingest_error=h.ingest_problem(),
            ingest_lag_seconds=round(h.ingest_lag_s(), 3),
            pending_messages=h.pending,
            clock=now,
            gaming_day=ctx.calendar.gaming_day(now),
            role=h.role,
            leader_token=h.leader_token,
        )

    @app.get("/metrics", tags=["operations"], response_class=Response)
    async def metrics() -> Response:
        return Response(ctx.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get(
        "/floor/active",
        response_model=list[ActiveOut],
        tags=["floor"],
        dependencies=[floor_readers],
    )
    async def active(
        area: Annotated[str | None, Query(pattern=r"^[a-z0-9_-]{1,32}$")] = None,
        kind: Literal["egm", "table"] | None = None,
        limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
        cursor: Annotated[str, Query(pattern=r"^[A-Za-z0-9-]{0,32}$")] = "",
    ) -> Response:
        """Who is active now, in card order. With `limit`, one page: the header
        `X-Next-Cursor` (absent on the last page) is the `cursor` of the next one."""
        page = await active_floor.page(area=area, kind=kind, limit=limit or 0, cursor=cursor)
        headers = {"X-Next-Cursor": page.next_cursor} if page.next_cursor else None
        return Response(page.body, media_type="application/json", headers=headers)

    @app.get(
        "/members/{card}", response_model=MemberOut, tags=["members"], dependencies=[desk_only]
    )
    async def member(card: Annotated[str, CARD]) -> MemberOut:
        record = await ctx.store.member(card)
        unregistered = await ctx.store.is_unregistered(card)
        session = await ctx.store.session(card)
        if record is None and not unregistered and session is None:
            raise HTTPException(404, f"card {card} is neither registered nor seen on the floor")
        return MemberOut(
            card=card,
            registered=record is not None,
            flagged_unregistered=unregistered,
            member=record,
            active=ActiveOut(**session) if session else None,
        )

    @app.get(
        "/members/{card}/days/{day}",
        response_model=DayOut,
        tags=["members"],
        dependencies=[desk_only],
    )
    async def member_day(card: Annotated[str, CARD], day: dt.date) -> DayOut:
        totals = await ctx.store.member_day(card, day)
        return DayOut(card=card, gaming_day=day, **totals)

    @app.post(
        "/members/import",
        response_model=ImportOut,
        responses={422: {"model": ImportErrorOut, "description": "The file, refused whole"}},
        tags=["members"],
        dependencies=[admin_only],
        openapi_extra=_file_body("members", "card,name,tier,app_user,date_of_birth,..."),
    )
    async def import_members(request: Request) -> ImportOut:
        """Create or update members from a CSV or JSON file; all rows valid or none written."""
        return ImportOut(imported=await importer.members(request.stream(), source="request body"))

    @app.post(
        "/devices/import",
        response_model=ImportOut,
        responses={422: {"model": ImportErrorOut, "description": "The file, refused whole"}},
        tags=["floor"],
        dependencies=[admin_only],
        openapi_extra=_file_body("devices", "device,kind,area,bank,position"),
    )
    async def import_devices(request: Request) -> ImportOut:
        """Create or update EGMs and tables from a CSV or JSON file."""
        return ImportOut(imported=await importer.devices(request.stream(), source="request body"))

    add_promotion_routes(app, ctx, guard)
    add_draw_routes(app, ctx, guard, ctx.draws)
    add_jackpot_routes(app, ctx, guard, ctx.jackpots)
    add_notice_routes(app, ctx, guard)
    add_page_routes(app, ctx, guard)
    add_push_routes(app, ctx)
    add_docs_routes(app)

    @app.get("/deadletters", tags=["operations"], dependencies=[desk_only])
    async def deadletters(
        count: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[dict[str, str]]:
        return await ctx.store.deadletters(count)

    document_guarded(app)  # 401, 403, 409, 429 where a token is checked
    return app
