"""What every route of the API shares: the `ApiContext` (the stores and runners a route may
use), found on the application's state by the `Ctx` dependency, and `require`, the
dependency that admits only the tokens of given roles: a bearer token (machines, scripts)
or a staff member's session cookie (`bonusd.access.sessions`; a cookie-borne request that
changes state must come from a page of this host).

Routes live in one `APIRouter` per resource (bonusd/api/*.py) and take what they need as
parameters: `ctx: Ctx`, and `principal: Annotated[Principal, require(Role.DESK)]` (or
`dependencies=[require(...)]` when the caller's name is not needed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, WebSocket
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from bonusd.access.auth import AuthError, Principal, Role, TokenStore, authorize
from bonusd.access.sessions import COOKIE, SAFE_METHODS, StaffSessions, same_origin
from bonusd.api.displayfiles import DisplayFiles
from bonusd.api.importer import Importer
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import Clock, GamingCalendar
from bonusd.draws.runner import DrawRunner
from bonusd.floor.activeview import ActiveFloor
from bonusd.floor.store import FloorStore
from bonusd.infra.health import Health
from bonusd.infra.metrics import Metrics
from bonusd.kiosk.desk import KioskDesk
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.push.hub import PushHub
from bonusd.raps.runner import RapsRunner

# websocket token checks at once: each is a Redis call, and the daemon's Redis pool
# (redis-py's default, 100 connections) fails rather than waits when a burst goes over it
HANDSHAKES = 32


@dataclass(frozen=True, slots=True)
class ApiContext:
    store: FloorStore
    health: Health
    metrics: Metrics
    clock: Clock
    calendar: GamingCalendar
    site: str
    tokens: TokenStore
    promotions: PromotionStore
    summaries: DrawSummaries
    audit: AuditStore
    draws: DrawRunner
    jackpots: RapsRunner
    reload_promotions: Callable[[str], Awaitable[list[dict[str, Any]]]]
    push: PushHub | None = None  # the live push (/ws/signage, /ws/crew)
    promotions_folder: Path | None = None  # where the promotions' logo files are; None: none
    kiosk: KioskDesk | None = None  # the eHost kiosks and receipts (bonusd/api/kiosk.py)
    staff: StaffSessions | None = None  # staff sign-in (bonusd/api/signin.py); None: defaults
    # built from the above
    importer: Importer = field(init=False)  # one registry import at a time, off the loop
    active_floor: ActiveFloor = field(init=False)  # the paged reads of /floor/active
    displays: DisplayFiles = field(init=False)  # the pages' folder (bonusd/api/pages.py)
    handshakes: asyncio.Semaphore = field(init=False)  # push token checks at once
    sessions: StaffSessions = field(init=False)  # `staff`, or one with the default policy

    def __post_init__(self) -> None:
        sessions = self.staff or StaffSessions(self.store.redis, self.store.keys, self.tokens)
        object.__setattr__(self, "sessions", sessions)
        object.__setattr__(self, "importer", Importer(self.store))
        object.__setattr__(self, "active_floor", ActiveFloor(self.store.redis, self.store.keys))
        object.__setattr__(self, "displays", DisplayFiles.locate())
        object.__setattr__(self, "handshakes", asyncio.Semaphore(HANDSHAKES))


def attach(app: FastAPI, ctx: ApiContext) -> None:
    """Hand `ctx` to every route of `app` (read back by the `Ctx` dependency)."""
    app.state.ctx = ctx


def context_of(connection: Request | WebSocket) -> ApiContext:
    ctx: ApiContext = connection.app.state.ctx
    return ctx


def _context(request: Request) -> ApiContext:
    return context_of(request)


Ctx = Annotated[ApiContext, Depends(_context)]
"""A route parameter of this type receives the daemon's `ApiContext`."""

_bearer = HTTPBearer(auto_error=False, description="A bonusd token: bd_<id>_<secret>")


def offered_token(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str:
    """The token a request offers: its bearer header, else its staff session cookie, which
    a request that changes state may carry only from a page of this host (403)."""
    if credentials is not None:
        return credentials.credentials
    cookie = request.cookies.get(COOKIE, "")
    changes = request.method not in SAFE_METHODS
    if cookie and changes and not same_origin(request.headers, request.headers.get("host", "")):
        raise AuthError(
            403,
            "a signed-in page's request that changes something must come from this "
            "site's own pages (its Origin); refused as cross-site",
        )
    return cookie


def require(*roles: Role) -> Any:
    """A dependency admitting only tokens of `roles` (admin is always admitted), from the
    bearer header or a staff session's cookie; its value is the caller's `Principal`.

    The allowed roles are kept on the dependency (`.roles`) so the test suite can check
    every route of the application, not only the ones someone remembered.
    """
    allowed = frozenset({*roles, Role.ADMIN})

    async def dependency(
        request: Request,
        ctx: Ctx,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Principal:
        need = " or ".join(sorted(r.value for r in allowed))
        token = offered_token(request, credentials)
        if not token:
            raise AuthError(401, f"a bearer token or a staff sign-in is required (role {need})")
        client = request.client.host if request.client else ""  # failed checks are counted
        principal = await ctx.tokens.check(token, ctx.clock.now(), client=client)
        authorize(principal, allowed)
        return principal

    dependency.roles = allowed  # type: ignore[attr-defined]
    return Depends(dependency)


# the guards routes use most, named once
Desk = Annotated[Principal, require(Role.DESK)]
Admin = Annotated[Principal, require(Role.ADMIN)]
