"""Request rate limits: counters in Redis, per window of the daemon's clock.

Counting lives in Redis under the site's keys, so every daemon of a site shares one count
(a flood spread over several daemons behind a load balancer is counted once), and time
is the injected clock's, so a test moves past a window by advancing the clock.

Windows are fixed: a count belongs to window `floor(t / window_s)` of the clock, and a
refused caller is told to come back when that window ends (`Retry-After`). Two limits use
it: failed token checks (per client address and per token id, `auth.TokenStore`) and
activations (per card and per kiosk token, the activation route).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from redis.asyncio import Redis

from bonusd.keys import Keys

if TYPE_CHECKING:
    from bonusd.settings import Settings

# Redis expiry is housekeeping only (the count is judged by the clock's window); keep a
# window's key long enough for a slow simulated clock to finish with it.
_KEEP_S = 3600


@dataclass(frozen=True, slots=True)
class Limit:
    """At most `count` per `window_s` seconds of the clock."""

    count: int
    window_s: int


@dataclass(frozen=True, slots=True)
class RateLimits:
    """The limits of one daemon (settings `BONUSD_LIMIT_*`)."""

    auth_failures_per_client: Limit = Limit(20, 300)
    auth_failures_per_token: Limit = Limit(10, 300)
    activations_per_card: Limit = Limit(6, 60)
    activations_per_token: Limit = Limit(1200, 60)

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimits:
        auth_s, act_s = settings.limit_auth_window_s, settings.limit_activation_window_s
        return cls(
            auth_failures_per_client=Limit(settings.limit_auth_failures_per_client, auth_s),
            auth_failures_per_token=Limit(settings.limit_auth_failures_per_token, auth_s),
            activations_per_card=Limit(settings.limit_activations_per_card, act_s),
            activations_per_token=Limit(settings.limit_activations_per_token, act_s),
        )


@dataclass(frozen=True, slots=True)
class Exceeded:
    """A limit was reached: what, by whom, and when the window ends."""

    bucket: str
    subject: str
    limit: Limit
    retry_after_s: int

    def message(self) -> str:
        return (
            f"too many {self.bucket.replace('-', ' ')} for {self.subject} "
            f"(at most {self.limit.count} in {self.limit.window_s} s); "
            f"retry in {self.retry_after_s} s"
        )


class RateLimiter:
    """Fixed-window counters of one site in Redis."""

    def __init__(self, redis: Redis, keys: Keys, limits: RateLimits | None = None) -> None:
        self._redis = redis
        self._keys = keys
        self.limits = limits or RateLimits()

    def _window(self, limit: Limit, now: dt.datetime) -> tuple[int, int]:
        """(window index, whole seconds until it ends, at least 1)."""
        t = now.timestamp()
        index = math.floor(t / limit.window_s)
        left = math.ceil((index + 1) * limit.window_s - t)
        return index, max(left, 1)

    def _key(self, bucket: str, subject: str, index: int) -> str:
        return f"{self._keys.base}rate:{bucket}:{subject}:{index}"

    async def exceeded(
        self, checks: list[tuple[str, str, Limit]], now: dt.datetime
    ) -> Exceeded | None:
        """The first (bucket, subject, limit) already at its limit in this window, without
        counting anything."""
        if not checks:
            return None
        windows = [self._window(limit, now) for _, _, limit in checks]
        keys = [
            self._key(b, s, index) for (b, s, _), (index, _) in zip(checks, windows, strict=True)
        ]
        counts: list[Any] = await self._redis.mget(keys)
        for (bucket, subject, limit), (_, left), count in zip(checks, windows, counts, strict=True):
            if count is not None and int(count) >= limit.count:
                return Exceeded(bucket, subject, limit, left)
        return None

    async def hit(self, checks: list[tuple[str, str, Limit]], now: dt.datetime) -> list[int]:
        """Count one more for each (bucket, subject, limit); return the counts after it."""
        if not checks:
            return []
        async with self._redis.pipeline(transaction=True) as pipe:
            for bucket, subject, limit in checks:
                key = self._key(bucket, subject, self._window(limit, now)[0])
                pipe.incr(key)
                pipe.expire(key, limit.window_s + _KEEP_S)
            replies: list[Any] = await pipe.execute()
        return [int(n) for n in replies[0::2]]

    async def admit(
        self, checks: list[tuple[str, str, Limit]], now: dt.datetime
    ) -> Exceeded | None:
        """Count a request against each limit; the first limit it goes over, if any (the
        request is then to be refused; it still counts)."""
        counts = await self.hit(checks, now)
        for (bucket, subject, limit), n in zip(checks, counts, strict=True):
            if n > limit.count:
                return Exceeded(bucket, subject, limit, self._window(limit, now)[1])
        return None


TOO_MANY: dict[int | str, dict[str, Any]] = {
    429: {
        "description": "Too many requests (or too many failed token checks) from this client, "
        "token or card in the current window; the `Retry-After` header says when to retry.",
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}


def document_throttling(app: FastAPI) -> None:
    """List 429 among the responses of every route behind a role guard (they all check a
    token, and failed checks are rate limited), so the OpenAPI schema says so."""
    for route in app.routes:
        if isinstance(route, APIRoute) and any(
            getattr(dep.call, "roles", None) for dep in route.dependant.dependencies
        ):
            route.responses = {**TOO_MANY, **route.responses}
