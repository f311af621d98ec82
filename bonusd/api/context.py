"""What every route of the API shares: the `ApiContext` (the stores and desks a route may
use) and `guard`, the dependency that admits only the tokens of given roles."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from bonusd.access.auth import AuthError, Principal, Role, TokenStore, authorize
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import Clock, GamingCalendar
from bonusd.draws.desk import DrawDesk
from bonusd.floor.store import FloorStore
from bonusd.infra.health import Health
from bonusd.infra.metrics import Metrics
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.push.hub import PushHub
from bonusd.raps.desk import JackpotDesk


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
    draws: DrawDesk
    jackpots: JackpotDesk
    reload_promotions: Callable[[str], Awaitable[list[dict[str, Any]]]]
    push: PushHub | None = None  # the live push (/ws/signage, /ws/crew)


_bearer = HTTPBearer(auto_error=False, description="A bonusd token: bd_<id>_<secret>")


def guard(ctx: ApiContext, *roles: Role) -> Any:
    """A dependency admitting only tokens of `roles` (admin is always admitted).

    The allowed roles are kept on the dependency (`.roles`) so the test suite can check
    every route of the application, not only the ones someone remembered.
    """
    allowed = frozenset({*roles, Role.ADMIN})

    async def dependency(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Principal:
        need = " or ".join(sorted(r.value for r in allowed))
        if credentials is None:
            raise AuthError(401, f"a bearer token is required (role {need})")
        client = request.client.host if request.client else ""  # failed checks are counted
        now = ctx.clock.now()
        principal = await ctx.tokens.check(credentials.credentials, now, client=client)
        authorize(principal, allowed)
        return principal

    dependency.roles = allowed  # type: ignore[attr-defined]
    return Depends(dependency)
