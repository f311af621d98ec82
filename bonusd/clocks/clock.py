"""Time: the `Clock` every time-dependent part takes, and gaming-day arithmetic.

Nothing in the daemon reads the wall clock except through a `Clock`. A `SimulatedClock`
starts at any instant and runs at any speed, so a ten-week campaign can replay in minutes;
a `SharedClock` (bonusd/infra/sharedclock.py, docs/clock.md) is one such simulated time
kept in Redis, shared by the floor simulator and every daemon, that can be paused and
jumped. Pure: this module imports no I/O library.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Literal, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "UTC",
    "Clock",
    "ClockMode",
    "GamingCalendar",
    "ManualClock",
    "SimulatedClock",
    "WallClock",
    "known_zone",
    "sleep_until_or_stop",
]

UTC = dt.UTC


class Clock(Protocol):
    """The source of 'now' for domain rules, schedulers and ingest checks."""

    def now(self) -> dt.datetime:
        """The current instant, timezone-aware (UTC)."""
        ...

    async def sleep_until(self, instant: dt.datetime) -> None:
        """Return once `now()` has reached `instant`."""
        ...


class WallClock:
    """Real time."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(UTC)

    async def sleep_until(self, instant: dt.datetime) -> None:
        delay = (instant - self.now()).total_seconds()
        if delay > 0:
            await asyncio.sleep(delay)


class SimulatedClock:
    """Time that starts at `start` and runs `speed` times faster than the wall clock."""

    def __init__(self, start: dt.datetime, speed: float = 1.0) -> None:
        if start.tzinfo is None:
            raise ValueError("SimulatedClock start must be timezone-aware")
        if speed <= 0:
            raise ValueError("SimulatedClock speed must be > 0")
        self._start = start.astimezone(UTC)
        self._speed = speed
        self._origin = time.monotonic()

    @property
    def speed(self) -> float:
        return self._speed

    def now(self) -> dt.datetime:
        elapsed = (time.monotonic() - self._origin) * self._speed
        return self._start + dt.timedelta(seconds=elapsed)

    async def sleep_until(self, instant: dt.datetime) -> None:
        while True:
            remaining = (instant - self.now()).total_seconds()
            if remaining <= 0:
                return
            await asyncio.sleep(remaining / self._speed)


class ManualClock:
    """A clock that moves only when told to; for exact, instant tests."""

    def __init__(self, start: dt.datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock start must be timezone-aware")
        self._now = start.astimezone(UTC)
        self._changed = asyncio.Event()

    def now(self) -> dt.datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        self.set(self._now + dt.timedelta(seconds=seconds))

    def set(self, instant: dt.datetime) -> None:
        self._now = instant.astimezone(UTC)
        self._changed.set()
        self._changed = asyncio.Event()

    async def sleep_until(self, instant: dt.datetime) -> None:
        while self._now < instant:
            await self._changed.wait()

    async def changed(self) -> None:
        """Return at the next `set` or `advance` (the live push tells the screens at once)."""
        await self._changed.wait()


ClockMode = Literal["", "wall", "simulated", "shared"]


def known_zone(name: str) -> str:
    """`name` if it is an IANA time zone, else ValueError saying so (for validators)."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r} (use an IANA name)") from exc
    return name


class GamingCalendar:
    """Maps instants to gaming days: a gaming day runs from `day_start` to just before it
    the next morning, in local time (08:00 to 07:59:59 in Johannesburg by default)."""

    def __init__(self, zone: ZoneInfo, day_start: dt.time) -> None:
        self.zone = zone
        self.day_start = day_start
        self._offset = dt.timedelta(hours=day_start.hour, minutes=day_start.minute)

    def gaming_day(self, instant: dt.datetime) -> dt.date:
        """The gaming day `instant` belongs to."""
        return (instant.astimezone(self.zone) - self._offset).date()

    def day_opens(self, day: dt.date) -> dt.datetime:
        """The instant gaming day `day` starts (aware, local zone)."""
        return dt.datetime.combine(day, self.day_start, tzinfo=self.zone)

    def day_closes(self, day: dt.date) -> dt.datetime:
        """The instant gaming day `day` ends: the next day's opening (exclusive)."""
        return self.day_opens(day + dt.timedelta(days=1))


async def sleep_until_or_stop(clock: Clock, instant: dt.datetime, *stops: asyncio.Event) -> bool:
    """Sleep on `clock` until `instant`; return True at once if any of `stops` is set."""
    sleeper = asyncio.ensure_future(clock.sleep_until(instant))
    stoppers = [asyncio.ensure_future(s.wait()) for s in stops]
    try:
        await asyncio.wait([sleeper, *stoppers], return_when=asyncio.FIRST_COMPLETED)
    finally:
        sleeper.cancel()
        for stopper in stoppers:
            stopper.cancel()
    return any(s.is_set() for s in stops)
