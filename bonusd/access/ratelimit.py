"""Request rate limits: counters in Redis, per window of the daemon's clock.

Counting lives in Redis under the site's keys, so every daemon of a site shares one count
(a flood spread over several daemons behind a load balancer is counted once), and time
is the injected clock's, so a test moves past a window by advancing the clock.

Windows are fixed: a count belongs to window `floor(t / window_s)` of the clock, and a
refused caller is told to come back when that window ends (`Retry-After`).

Every limit is counted and judged in one Redis step, never read first and counted later
(two hundred requests arriving together would all read a count below the limit):
- `admit` counts every request (INCR in a MULTI) and judges the count it got back:
  activations, kiosk standings lookups and receipt prints, per card and per token;
- `attempt` counts only failures, for failed token checks (per client address and per
  token id, `auth.TokenStore`): a Lua script refuses while a count is at its limit, else
  compares the offered digest with the stored one and counts a mismatch, all at once.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from redis.asyncio import Redis

from bonusd.infra.keys import Keys

if TYPE_CHECKING:
    from bonusd.settings import Settings

# Redis expiry is housekeeping only (the count is judged by the clock's window); keep a
# window's key long enough for a slow simulated clock to finish with it.
_KEEP_S = 3600
_ATTEMPT_LUA = resources.files("bonusd").joinpath("lua", "guarded_attempt.lua")


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
    standings_per_card: Limit = Limit(10, 60)
    standings_per_token: Limit = Limit(600, 60)
    receipts_per_card: Limit = Limit(5, 60)  # kiosk prints and reprints
    receipts_per_token: Limit = Limit(600, 60)

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimits:
        auth_s, act_s = settings.limit_auth_window_s, settings.limit_activation_window_s
        look_s = settings.limit_standings_window_s
        receipt_s = settings.limit_receipts_window_s
        return cls(
            auth_failures_per_client=Limit(settings.limit_auth_failures_per_client, auth_s),
            auth_failures_per_token=Limit(settings.limit_auth_failures_per_token, auth_s),
            activations_per_card=Limit(settings.limit_activations_per_card, act_s),
            activations_per_token=Limit(settings.limit_activations_per_token, act_s),
            standings_per_card=Limit(settings.limit_standings_per_card, look_s),
            standings_per_token=Limit(settings.limit_standings_per_token, look_s),
            receipts_per_card=Limit(settings.limit_receipts_per_card, receipt_s),
            receipts_per_token=Limit(settings.limit_receipts_per_token, receipt_s),
        )


# (bucket, subject, limit): e.g. ("activations", "card 1001", limits.activations_per_card)
Check = tuple[str, str, Limit]


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


@dataclass(frozen=True, slots=True)
class Attempt:
    """What a guarded attempt came to: refused (`exceeded`, nothing compared or counted),
    passed, or failed (`counts`: each limit's count after this failure)."""

    passed: bool
    exceeded: Exceeded | None = None
    counts: tuple[int, ...] = ()


class RateLimiter:
    """Fixed-window counters of one site in Redis."""

    def __init__(self, redis: Redis, keys: Keys, limits: RateLimits | None = None) -> None:
        self._redis = redis
        self._keys = keys
        self.limits = limits or RateLimits()
        self._attempt = redis.register_script(_ATTEMPT_LUA.read_text(encoding="utf-8"))

    def _window(self, limit: Limit, now: dt.datetime) -> tuple[int, int]:
        """(window index, whole seconds until it ends, at least 1)."""
        epoch_s = now.timestamp()
        index = math.floor(epoch_s / limit.window_s)
        left = math.ceil((index + 1) * limit.window_s - epoch_s)
        return index, max(left, 1)

    def _key(self, bucket: str, subject: str, limit: Limit, now: dt.datetime) -> str:
        return self._keys.rate(bucket, subject, self._window(limit, now)[0])

    async def count(self, checks: list[Check], now: dt.datetime) -> tuple[int, ...]:
        """Count one more against each limit (one MULTI); each count after it."""
        if not checks:
            return ()
        async with self._redis.pipeline(transaction=True) as pipe:
            for bucket, subject, limit in checks:
                key = self._key(bucket, subject, limit, now)
                pipe.incr(key)
                pipe.expire(key, limit.window_s + _KEEP_S)
            replies: list[Any] = await pipe.execute()
        return tuple(int(n) for n in replies[0::2])

    def over(
        self, checks: list[Check], counts: tuple[int, ...], now: dt.datetime
    ) -> Exceeded | None:
        """The first limit whose count (as `count` answered it) is past the limit."""
        for (bucket, subject, limit), counted in zip(checks, counts, strict=True):
            if counted > limit.count:
                return Exceeded(bucket, subject, limit, self._window(limit, now)[1])
        return None

    async def admit(self, checks: list[Check], now: dt.datetime) -> Exceeded | None:
        """Count a request against each limit and judge the counts Redis answered: the
        first limit it goes over, if any. The request is then to be refused; it still
        counts. Of any number arriving at once, exactly a limit's count get through."""
        return self.over(checks, await self.count(checks, now), now)

    async def attempt(
        self, checks: list[Check], now: dt.datetime, *, key: str, field: str, value: str
    ) -> Attempt:
        """One guarded attempt, judged and counted in one step (a Lua script): refused
        while any limit is reached; otherwise it passes if `field` of hash `key` holds
        `value` ("" never does), and a failure counts one against every limit."""
        counters = [self._key(b, s, limit, now) for b, s, limit in checks]
        args: list[str | int] = [field, value]
        for _, _, limit in checks:
            args += [limit.count, limit.window_s + _KEEP_S]
        reply: list[Any] = await self._attempt(keys=[key, *counters], args=args)
        outcome = int(reply[0])
        if outcome == 0:
            bucket, subject, limit = checks[int(reply[1]) - 1]
            return Attempt(False, Exceeded(bucket, subject, limit, self._window(limit, now)[1]))
        if outcome == 1:
            return Attempt(True)
        return Attempt(False, counts=tuple(int(n) for n in reply[1:]))
