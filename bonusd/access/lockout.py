"""Lockouts after wrong secrets: a member card at the kiosks after wrong PINs (scope
"kiosk-pin"), later a staff number or a client address (issue 19: "staff-pin",
"staff-addr").

The rule: `attempts` wrong tries within `window_s` (by default `lock_s`) of the first lock
the subject for `lock_s` from the try that reached the count; when the lock lifts the count
starts afresh, and a right secret (`cleared`) forgets the count. While locked, nothing is
checked and nothing counted.

Counts live in Redis under the site's keys (`Keys.lockout`), so every daemon and kiosk of a
site shares them, and each try is counted in one Lua step (lua/lockout.lua): fifty tries
arriving together count exactly `attempts` before the lock. Time is the injected clock's,
so a test moves past a lock by advancing a ManualClock; the Redis expiry on the hash is
housekeeping only.

Counting before checking closes a race: were a try counted only once its (slow, ~30 ms)
PIN check had failed, fifty tries sent together would all be checked before the first
was counted. So a caller counts first and forgives a right secret:

    state = await lockout.failed(card, now)     # this try, counted before it is checked
    if not state.counted:                       # locked before this try: refuse it
        ...423, Retry-After: state.retry_after_s
    if await asyncio.to_thread(verify_pin, pin_hash, pin):
        await lockout.cleared(card)             # right: the count (and a lock it made) goes
    elif state.locked:                          # this wrong try locked the card
        ...423
    else:                                       # wrong: state.left tries left
        ...401
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.infra.keys import Keys

_LOCKOUT_LUA = resources.files("bonusd").joinpath("lua", "lockout.lua")
# Redis expiry past the window or the lock, whichever is longer: housekeeping only (the
# clock judges), long enough for a slow simulated clock to finish with a count.
_KEEP_S = 3600


KIOSK_PIN = "kiosk-pin"  # the scope of members' kiosk PINs (bonusd/kiosk/desk.py)


@dataclass(frozen=True, slots=True)
class LockState:
    """Where a subject stands: `locked` (then `retry_after_s` > 0 and `left` 0), else how
    many wrong tries are `left` before the lock. `counted`: `Lockout.failed` counted this
    try (False: the lock already held, and `state` never counts)."""

    locked: bool
    retry_after_s: int
    left: int
    counted: bool = False


class Lockout:
    """Wrong-try counts and locks of one scope ("kiosk-pin", "staff-pin", ...) of a site."""

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        scope: str,
        *,
        attempts: int,
        lock_s: int,
        window_s: int | None = None,
    ) -> None:
        if attempts < 1 or lock_s < 1 or (window_s is not None and window_s < 1):
            raise ValueError("a lockout needs attempts >= 1, lock_s >= 1 and window_s >= 1")
        self._redis = redis
        self._keys = keys
        self.scope = scope
        self.attempts = attempts
        self.lock_s = lock_s
        self.window_s = lock_s if window_s is None else window_s
        self._try = redis.register_script(_LOCKOUT_LUA.read_text(encoding="utf-8"))

    def _key(self, subject: str) -> str:
        return self._keys.lockout(self.scope, subject)

    def _state(self, count: int, until_ms: int, now_ms: int, *, counted: bool) -> LockState:
        if until_ms > now_ms:
            wait = max(math.ceil((until_ms - now_ms) / 1000), 1)
            return LockState(True, wait, 0, counted)
        return LockState(False, 0, max(self.attempts - count, 0), counted)

    async def state(self, subject: str, now: dt.datetime) -> LockState:
        """Where `subject` stands at `now`; counts nothing."""
        raw = await self._redis.hmget(self._key(subject), ["n", "first", "until"])
        count, first, until = (int(v) if v else 0 for v in cast(list[Any], raw))
        now_ms = _ms(now)
        if (until and until <= now_ms) or (count and now_ms - first >= self.window_s * 1000):
            count = 0  # the lock has lifted, or the tries are too old to count
        return self._state(count, until, now_ms, counted=False)

    async def failed(self, subject: str, now: dt.datetime) -> LockState:
        """Count one wrong try of `subject` at `now`, atomically; the `attempts`-th within
        the window locks it for `lock_s`. While the lock holds nothing is counted
        (`counted` False). Call it before checking the secret (see the module's text)."""
        now_ms = _ms(now)
        keep_s = max(self.lock_s, self.window_s) + _KEEP_S
        args = [now_ms, self.attempts, self.lock_s * 1000, self.window_s * 1000, keep_s]
        reply = cast(list[Any], await self._try(keys=[self._key(subject)], args=args))
        counted, count, until = (int(v) for v in reply)
        return self._state(count, until, now_ms, counted=bool(counted))

    async def cleared(self, subject: str) -> None:
        """A right secret: forget `subject`'s wrong tries, and the lock they made."""
        await self._redis.delete(self._key(subject))


def _ms(now: dt.datetime) -> int:
    return math.floor(now.timestamp() * 1000)
