"""What every route of the API shares: the `ApiContext` (the stores and runners a route may
use), found on the application's state by the `Ctx` dependency, and `require`, the
dependency that admits only the tokens of given roles.

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
    # built from the above
    importer: Importer = field(init=False)  # one registry import at a time, off the loop
    active_floor: ActiveFloor = field(init=False)  # the paged reads of /floor/active
    displays: DisplayFiles = field(init=False)  # the pages' folder (bonusd/api/pages.py)
    handshakes: asyncio.Semaphore = field(init=False)  # push token checks at once

    def __post_init__(self) -> None:
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


def require(*roles: Role) -> Any:
    """A dependency admitting only tokens of `roles` (admin is always admitted); its
    value is the caller's `Principal`.

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
        if credentials is None:
            raise AuthError(401, f"a bearer token is required (role {need})")
        client = request.client.host if request.client else ""  # failed checks are counted
        principal = await ctx.tokens.check(credentials.credentials, ctx.clock.now(), client=client)
        authorize(principal, allowed)
        return principal

    dependency.roles = allowed  # type: ignore[attr-defined]
    return Depends(dependency)


# the guards routes use most, named once
Desk = Annotated[Principal, require(Role.DESK)]
Admin = Annotated[Principal, require(Role.ADMIN)]
