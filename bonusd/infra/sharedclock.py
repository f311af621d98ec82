"""The shared simulated clock: one simulated time for the floor simulator and every daemon.

The clock's parameters live in a Redis hash, `{prefix}:clock`; every change is one
WATCH/MULTI transaction announced on the channel `{prefix}:clock:changes`. Each process
caches the parameters and computes `now()` locally, so reading the time costs no I/O; a
watcher task keeps the cache fresh. The layout, the formula and the API are documented in
docs/clock.md, which the simulator follows.

The clock only moves forward: scheduled actions, de-duplication windows and idle sweeps
all assume so, and a request to go back is refused with a `ClockError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import math
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

import redis.asyncio as aioredis
import redis.exceptions

from bonusd.clocks.clock import Clock, ClockMode, SimulatedClock, WallClock
from bonusd.clocks.clockstate import (
    MAX_SPEED,
    MIN_SPEED,
    ClockState,
    check_speed,
    instant_of,
    ms_of,
)
from bonusd.errors import ClockError
from bonusd.infra.backoff import Backoff, pause
from bonusd.infra.redisclient import REDIS_ERRORS

__all__ = ["MAX_SPEED", "MIN_SPEED", "REFRESH_S", "ClockState", "SharedClock", "clock_from"]

logger = logging.getLogger(__name__)

REFRESH_S = 1.0  # wall seconds between re-reads: the most a missed notification costs

Wall = Callable[[], float]
Step = Callable[[ClockState, float], ClockState]  # (state read, wall now) -> next state


class SharedClock:
    """The clock of a site shared through Redis; satisfies the `Clock` protocol.

    `start` and `speed` only create the clock if its hash does not exist yet. Run `watch()`
    while the clock is used, so changes made by others are seen.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        prefix: str,
        *,
        start: dt.datetime | None = None,
        speed: float = 1.0,
        changed_by: str = "bonusd",
        wall: Wall = time.time,
    ) -> None:
        if start is not None:
            ms_of(start)  # refuses a naive instant now rather than at the first use
        self._redis = redis
        self.key = f"{prefix}:clock"
        self.channel = f"{prefix}:clock:changes"
        self._start = start
        self._speed = check_speed(speed)
        self._by = changed_by
        self._wall = wall
        self._state: ClockState | None = None
        self._floor_ms = -math.inf  # now() never goes below this: it never runs backwards
        self._changed = asyncio.Event()

    @staticmethod
    def site_prefix(key_prefix: str, site: str) -> str:
        """The clock prefix of a site: its keys' prefix and hash tag, `bonusd:{site}`."""
        return f"{key_prefix}:{{{site}}}"

    @classmethod
    async def connect(
        cls,
        redis: aioredis.Redis,
        prefix: str,
        *,
        start: dt.datetime | None = None,
        speed: float = 1.0,
        changed_by: str = "bonusd",
    ) -> SharedClock:
        """Open the clock at `prefix`, creating it at `start`/`speed` if it does not exist."""
        clock = cls(redis, prefix, start=start, speed=speed, changed_by=changed_by)
        await clock.open()
        return clock

    # -- reading ------------------------------------------------------------------------------

    @property
    def state(self) -> ClockState:
        if self._state is None:
            raise ClockError(f"the shared clock {self.key} was used before open()")
        return self._state

    @property
    def opened(self) -> bool:
        return self._state is not None

    def now_ms(self) -> int:
        """The simulated instant, Unix milliseconds."""
        return math.floor(self._now_ms())

    def now(self) -> dt.datetime:
        return instant_of(self._now_ms())

    def _now_ms(self) -> float:
        ms = max(self.state.sim_ms(self._wall()), self._floor_ms)
        self._floor_ms = ms
        return ms

    async def sleep_until(self, instant: dt.datetime) -> None:
        """Return once `now()` has reached `instant`. A change of the clock (pause, resume,
        jump, speed) wakes the wait, which is then computed again from the new state."""
        target = ms_of(instant)
        while True:
            changed = self._changed
            now = self._now_ms()
            if now >= target:
                return
            state = self.state
            timeout = None if state.paused else (target - now) / 1000.0 / state.speed
            try:
                async with asyncio.timeout(timeout):
                    await changed.wait()
            except TimeoutError:
                pass

    async def changed(self) -> None:
        """Return at the next change this process learns of, its own or one its watcher
        heard: a pause, resume, jump or change of speed (the live push tells the screens)."""
        await self._changed.wait()

    # -- Redis --------------------------------------------------------------------------------

    async def open(self) -> ClockState:
        """Read the clock, creating it from `start`/`speed` if its hash does not exist."""
        start = self._start or instant_of(self._wall() * 1000.0)
        initial = ClockState(
            origin_wall=0.0,
            origin_sim_ms=ms_of(start),
            speed=self._speed,
            paused=False,
            version=0,
            epoch=secrets.token_hex(8),
            changed_by=self._by,
        )
        state = await self._create_if_missing(initial)
        self._adopt(state)
        return state

    async def open_existing(self) -> ClockState:
        """Read the clock without ever creating it: a `ClockError` if there is none."""
        raw = await self._redis.hgetall(self.key)
        if not raw:
            raise ClockError(
                f"no shared clock at {self.key}: a daemon started with BONUSD_CLOCK=shared "
                "creates it (from BONUSD_CLOCK_START and BONUSD_CLOCK_SPEED), and so does "
                "the simulator; check BONUSD_SITE, BONUSD_KEY_PREFIX and BONUSD_REDIS_URL"
            )
        self._adopt(ClockState.from_fields(self.key, raw))
        return self.state

    async def open_when_available(self, stop: asyncio.Event | None = None) -> None:
        """`open()`, waiting out a Redis outage with backoff (a WARNING each time): without
        Redis there is no shared time to run on. Returns early, unopened, if `stop` is set."""
        backoff = Backoff(cap=REFRESH_S * 5)
        while stop is None or not stop.is_set():
            try:
                await self.open()
                return
            except REDIS_ERRORS as exc:
                logger.warning("shared clock %s: waiting for Redis (%s)", self.key, exc)
                await _wait(stop, backoff.next_delay())

    async def refresh(self) -> ClockState:
        """Re-read the hash now; re-create it from the cache if it vanished."""
        raw = await self._redis.hgetall(self.key)
        if raw:
            self._adopt(ClockState.from_fields(self.key, raw))
        elif self._state is not None:
            logger.warning("shared clock %s is missing (Redis restarted?): restoring it", self.key)
            self._adopt(await self._create_if_missing(self._state))
        return self.state

    async def _create_if_missing(self, base: ClockState) -> ClockState:
        """Write `base` continued to now (version + 1) if the hash is missing; return the
        clock as it is afterwards (ours, or whoever created it first)."""
        async with self._redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(self.key)
                    raw = await pipe.hgetall(self.key)
                    if raw:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        return ClockState.from_fields(self.key, raw)
                    wall = self._wall()
                    if base.version == 0:  # a new clock: its origin is `start`, now
                        state = dataclasses.replace(base, origin_wall=wall, version=1)
                    else:
                        state = base.changed(wall, self._by)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hset(self.key, mapping=cast(Mapping[Any, Any], state.to_fields()))
                    await pipe.execute()
                except redis.exceptions.WatchError:
                    continue
                await self._announce(state)
                return state

    async def _change(
        self, what: str, step: Callable[[ClockState, float], ClockState]
    ) -> ClockState:
        """One atomic change: read the hash, compute the next state at the wall time of
        writing, write it unless someone else changed the clock meanwhile (then retry)."""
        async with self._redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(self.key)
                    raw = await pipe.hgetall(self.key)
                    if raw:
                        current = ClockState.from_fields(self.key, raw)
                    elif self._state is not None:
                        current = self._state  # Redis lost it: continue from what we know
                    else:
                        raise ClockError(
                            f"no shared clock at {self.key}: start a daemon with "
                            "BONUSD_CLOCK=shared or open it with SharedClock.connect()"
                        )
                    state = step(current, self._wall())
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hset(self.key, mapping=cast(Mapping[Any, Any], state.to_fields()))
                    await pipe.execute()
                except redis.exceptions.WatchError:
                    continue
                break
        self._adopt(state)
        await self._announce(state)
        logger.info("shared clock %s: %s -> %s (x%g)", self.key, what, self.now(), state.speed)
        return state

    async def _announce(self, state: ClockState) -> None:
        await self._redis.publish(self.channel, str(state.version))

    def _adopt(self, state: ClockState) -> None:
        old = self._state
        if not state.supersedes(old):
            return  # a read older than what we already know
        if old is not None and state.epoch != old.epoch:
            logger.warning("shared clock %s was created anew: following it", self.key)
            self._floor_ms = -math.inf
        self._state = state
        woken, self._changed = self._changed, asyncio.Event()
        woken.set()

    # -- changes ------------------------------------------------------------------------------

    async def set(self, start: dt.datetime | None = None, speed: float | None = None) -> ClockState:
        """Move the clock forward to `start` and/or change its speed, in one change."""
        new_speed = None if speed is None else check_speed(speed)
        target = None if start is None else ms_of(start)

        def step(state: ClockState, wall: float) -> ClockState:
            jump = 0
            if target is not None:
                now = math.floor(state.sim_ms(wall))
                if target < now:
                    raise ClockError(
                        f"the shared clock only moves forward: cannot set it to "
                        f"{instant_of(target).isoformat()}, it is already "
                        f"{instant_of(now).isoformat()}"
                    )
                jump = target - now
            return state.changed(wall, self._by, jump_ms=jump, speed=new_speed)

        return await self._change("set", step)

    async def set_speed(self, speed: float) -> ClockState:
        return await self.set(speed=speed)

    async def pause(self) -> ClockState:
        return await self._change("paused", lambda s, w: s.changed(w, self._by, paused=True))

    async def resume(self) -> ClockState:
        return await self._change("resumed", lambda s, w: s.changed(w, self._by, paused=False))

    async def jump(self, delta: dt.timedelta) -> ClockState:
        """Move the clock forward by `delta` (> 0)."""
        if delta <= dt.timedelta(0):
            raise ClockError(
                "the shared clock only moves forward: jump by a positive duration, got "
                f"{'-' + str(-delta) if delta < dt.timedelta(0) else delta}"
            )
        ms = delta // dt.timedelta(milliseconds=1)
        return await self._change(
            f"jumped {delta}", lambda s, w: s.changed(w, self._by, jump_ms=ms)
        )

    async def jump_to(self, instant: dt.datetime) -> ClockState:
        """Move the clock forward to `instant` (not before now)."""
        return await self.set(start=instant)

    # -- the watcher --------------------------------------------------------------------------

    async def watch(self, stop: asyncio.Event | None = None) -> None:
        """Keep the cached parameters fresh until `stop` is set (or cancelled): re-read on
        every change notification and once per second of wall time anyway. Survives Redis
        outages and restarts (a hash lost with Redis is restored from the cache)."""
        backoff = Backoff(cap=REFRESH_S * 5)
        failing = False
        while stop is None or not stop.is_set():
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(self.channel)
                await self.refresh()
                if failing:
                    logger.warning("shared clock %s can be read again", self.key)
                failing = False
                backoff.reset()
                while stop is None or not stop.is_set():
                    await pubsub.get_message(ignore_subscribe_messages=True, timeout=REFRESH_S)
                    await self.refresh()
            except (*REDIS_ERRORS, ClockError) as exc:  # an outage, or a corrupt hash
                if not failing:
                    logger.warning(
                        "shared clock %s cannot be read (%s); running on the cached parameters",
                        self.key,
                        exc,
                    )
                failing = True
                await _wait(stop, backoff.next_delay())
            finally:
                with contextlib.suppress(*REDIS_ERRORS):
                    await pubsub.aclose()


async def _wait(stop: asyncio.Event | None, seconds: float) -> None:
    if stop is None:
        await asyncio.sleep(seconds)
    else:
        await pause(stop, seconds)


def clock_from(
    start: dt.datetime | None,
    speed: float,
    mode: ClockMode = "",
    *,
    redis: aioredis.Redis | None = None,
    prefix: str = "",
    changed_by: str = "bonusd",
) -> Clock:
    """The daemon's clock for the `BONUSD_CLOCK`, `BONUSD_CLOCK_START` and
    `BONUSD_CLOCK_SPEED` settings. A shared clock is returned unopened: `open()` it (it
    needs Redis) before use, and run its `watch()`."""
    if mode == "shared":
        if redis is None or not prefix:
            raise ClockError("BONUSD_CLOCK=shared needs a Redis connection and a key prefix")
        return SharedClock(redis, prefix, start=start, speed=speed, changed_by=changed_by)
    if mode == "wall" or (mode == "" and start is None and speed == 1.0):
        return WallClock()
    return SimulatedClock(start or dt.datetime.now(dt.UTC), speed)
