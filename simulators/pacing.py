"""When to publish an event: flat out, at a fixed speed-up, or by the shared clock.

- `WallPacer`: simulated time runs `speed` times faster than the wall clock from the first
  wait (`speed` 60: an event a simulated minute after `origin` goes out a wall second
  after the first);
- `SharedPacer`: simulated time is the site's shared clock in Redis (docs/clock.md), the
  one the daemons run on, so the floor and the daemons agree at any speed-up and when the
  clock is paused, sped up or jumped. An event goes out once that clock has reached its
  `ts`. The clock is created at `start`/`speed` if it does not exist yet (through
  `bonusd.infra.sharedclock.SharedClock`, the same atomic creation the daemon uses); otherwise
  it is followed as it is. It is read the way docs/clock.md says: the hash's fields give
  the time by formula; a subscription to the change channel wakes a wait at once, and the
  hash is re-read at least once a wall second. While Redis is away the cached clock runs on.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import time
from typing import Protocol

import redis
import redis.asyncio as aioredis
import redis.exceptions

from bonusd.infra.sharedclock import ClockState, SharedClock

logger = logging.getLogger(__name__)

_REFRESH_S = 1.0
_POLL_S = 0.01
_REDIS_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


class Pacer(Protocol):
    """Blocks until an event of simulated time `t_ms` may be published."""

    def wait_until(self, t_ms: int) -> None: ...

    def now_ms(self) -> float:
        """The simulated time now (epoch ms), for progress displays."""
        ...

    def close(self) -> None: ...


class WallPacer:
    """Simulated time from `origin_ms` at `speed` x the wall clock (0: no waiting)."""

    def __init__(self, speed: float, origin_ms: int | None = None) -> None:
        if speed < 0:
            raise ValueError(f"speed must be >= 0, got {speed}")
        self._speed = speed
        self._origin = origin_ms
        self._wall0: float | None = None  # wall time of the first wait

    def wait_until(self, t_ms: int) -> None:
        if self._speed <= 0:
            return
        if self._origin is None:
            self._origin = t_ms
        if self._wall0 is None:
            self._wall0 = time.monotonic()
        delay = self._wall0 + (t_ms - self._origin) / 1000 / self._speed - time.monotonic()
        if delay > 0.002:
            time.sleep(delay)

    def now_ms(self) -> float:
        if self._speed <= 0:
            return math.inf
        if self._origin is None or self._wall0 is None:
            return -math.inf
        return self._origin + (time.monotonic() - self._wall0) * 1000 * self._speed

    def close(self) -> None:
        pass


class SharedPacer:
    """Paces by the shared clock of `site` in Redis (created at `start`/`speed` if missing)."""

    def __init__(
        self,
        *,
        redis_url: str,
        site: str,
        key_prefix: str = "bonusd",
        start: dt.datetime,
        speed: float,
    ) -> None:
        prefix = SharedClock.site_prefix(key_prefix, site)
        self.key = f"{prefix}:clock"
        self._state = asyncio.run(_open(redis_url, prefix, start, speed))
        self._redis = redis.Redis.from_url(redis_url)
        self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        self._pubsub.subscribe(f"{prefix}:clock:changes")
        self._read_at = self._polled_at = time.monotonic()
        self._floor = -math.inf
        logger.info(
            "following the shared clock %s: %s at x%g%s",
            self.key,
            self._state.instant(time.time()).isoformat(),
            self._state.speed,
            " (paused)" if self._state.paused else "",
        )

    @property
    def state(self) -> ClockState:
        return self._state

    def now_ms(self) -> float:
        """The shared clock's time (never backwards within this process). A publisher that
        is behind never waits, so this looks for changes of the clock every few ms itself:
        one slowed down while the publisher catches up is seen at once, not when it next
        waits (it would otherwise run ahead on the old speed)."""
        if time.monotonic() - self._polled_at >= _POLL_S:
            self._polled_at = time.monotonic()
            if self._listen(0.0) or time.monotonic() - self._read_at >= _REFRESH_S:
                self.refresh()
        self._floor = max(self._floor, self._state.sim_ms(time.time()))
        return self._floor

    def wait_until(self, t_ms: int) -> None:
        while True:
            now = self.now_ms()
            if now >= t_ms:
                return
            state = self._state
            timeout = _REFRESH_S
            if not state.paused:
                timeout = min(timeout, (t_ms - now) / 1000 / state.speed)
            changed = self._listen(max(0.0, timeout))
            if changed or time.monotonic() - self._read_at >= _REFRESH_S:
                self.refresh()

    def _listen(self, timeout: float) -> bool:
        """Wait up to `timeout` wall seconds for a change of the clock; True if one came."""
        try:
            return self._pubsub.get_message(timeout=timeout) is not None
        except _REDIS_ERRORS as exc:
            logger.warning("shared clock %s: Redis unavailable (%s); running on", self.key, exc)
            time.sleep(min(timeout, _REFRESH_S))
            return False

    def refresh(self) -> None:
        """Re-read the clock's hash now (waits do it on a change and every wall second)."""
        self._read_at = time.monotonic()
        try:
            raw = self._redis.hgetall(self.key)
        except _REDIS_ERRORS as exc:
            logger.warning("shared clock %s: Redis unavailable (%s); running on", self.key, exc)
            return
        if raw:
            state = ClockState.from_fields(self.key, raw)
            if state.supersedes(self._state):
                self._state = state

    def close(self) -> None:
        try:
            self._pubsub.close()
        finally:
            self._redis.close()


async def _open(redis_url: str, prefix: str, start: dt.datetime, speed: float) -> ClockState:
    """Open (or create) the clock once, with bonusd's own atomic creation."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        clock = await SharedClock.connect(
            client, prefix, start=start, speed=speed, changed_by="simulator"
        )
        return clock.state
    finally:
        await client.aclose()
