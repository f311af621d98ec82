"""The daemon's clock as the screens are told it (docs/push.md, "The clock").

Every message of a stream carries `clock`: the daemon's instant at the daemon's wall time
of writing it, the speed, whether the clock stands still, and an epoch that changes at
every change of the clock (a jump, a pause or resume, a change of speed). A change goes
out to every stream as a delta the moment the hub learns of it, so a page runs the clock
forward from the last state it was told and never guesses a rate from message timing.

`ClockWatch` reads any `Clock`. A shared clock (docs/clock.md) names its changes by its
epoch and version, and its watcher wakes `follow` the moment one is heard; a test's
`ManualClock` wakes it at each `set`/`advance`. A wall or private simulated clock never
changes speed; any clock whose instant strays from what its last change predicts (by more
than `STRAY_MS`; by anything for a clock standing still) is taken as moved, and the hub's
one-second tick polls for that.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from bonusd.clocks.clock import UTC, Clock, ManualClock
from bonusd.clocks.clockstate import instant_of
from bonusd.infra.sharedclock import SharedClock

__all__ = ["STRAY_MS", "ClockReading", "ClockWatch"]

STRAY_MS = 250.0  # simulated ms a running clock may stray from its prediction unnoticed
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ClockReading:
    """The clock at one moment: `instant_ms` (simulated Unix ms) at `wall_ms` (the
    daemon's Unix ms), running at `speed` unless `paused`, in epoch `epoch`."""

    epoch: str
    wall_ms: float
    instant_ms: float
    speed: float
    paused: bool

    @property
    def rate(self) -> float:
        """Simulated ms per wall ms now: 0 while the clock stands still."""
        return 0.0 if self.paused else self.speed

    def predict(self, wall_ms: float) -> float:
        """The instant this reading says the clock shows at `wall_ms`."""
        return self.instant_ms + (wall_ms - self.wall_ms) * self.rate

    def message(self, zone: ZoneInfo) -> dict[str, Any]:
        """The `clock` object of a message (docs/push.md)."""
        instant = instant_of(self.instant_ms).astimezone(zone)
        return {
            "epoch": self.epoch,
            "instant": instant.isoformat(timespec="milliseconds"),
            "wall": round(self.wall_ms),
            "speed": self.speed,
            "paused": self.paused,
        }


class ClockWatch:
    """Reads the daemon's clock for the streams and tells the hub when it changed."""

    def __init__(
        self, clock: Clock, zone: ZoneInfo, *, wall: Callable[[], float] = time.time
    ) -> None:
        self._clock, self._zone, self._wall = clock, zone, wall
        self._life = secrets.token_hex(4)  # this daemon's epochs of a clock kept in-process
        self._changes = 0
        self._anchor: ClockReading | None = None  # the first reading of the current epoch
        self._told: ClockReading | None = None  # the reading of the last change announced

    def read(self) -> ClockReading:
        """The clock now, in the epoch of its latest change."""
        wall_ms = self._wall() * 1000.0
        clock = self._clock
        if isinstance(clock, SharedClock):
            state = clock.state
            reading = ClockReading(
                f"{state.epoch}.{state.version}",
                wall_ms,
                state.sim_ms(wall_ms / 1000.0),
                state.speed,
                state.paused,
            )
        else:
            reading = self._private(wall_ms)
        if self._anchor is None or self._anchor.epoch != reading.epoch:
            self._anchor = reading
        return reading

    def _private(self, wall_ms: float) -> ClockReading:
        """A clock of this process: a new epoch whenever it strays from its anchor."""
        clock = self._clock
        manual = isinstance(clock, ManualClock)
        speed = 1.0 if manual else float(getattr(clock, "speed", 1.0))
        instant_ms = (clock.now() - _EPOCH) / dt.timedelta(milliseconds=1)
        anchor = self._anchor
        stray = 0.0 if manual else STRAY_MS
        if (
            anchor is None
            or anchor.speed != speed
            or abs(anchor.predict(wall_ms) - instant_ms) > stray
        ):
            self._changes += 1
        return ClockReading(f"{self._life}.{self._changes}", wall_ms, instant_ms, speed, manual)

    def message(self) -> dict[str, Any]:
        """The `clock` object for a message written now."""
        return self.read().message(self._zone)

    def poll(self) -> bool | None:
        """None if the clock has not changed since the last call; else whether it went back
        (a test clock set back, a shared clock created anew), which resyncs the screens."""
        now = self.read()
        told, self._told = self._told, now
        if told is None or told.epoch == now.epoch:
            return None
        return now.instant_ms < told.predict(now.wall_ms) - STRAY_MS

    async def follow(self, moved: Callable[[], None]) -> None:
        """Call `moved` at each change a clock announces (a shared clock's watcher heard
        one; a test clock was set), until cancelled. A clock that never announces one
        returns at once: the hub's tick polls it."""
        clock = self._clock
        self.poll()  # the state the screens are told first
        while isinstance(clock, SharedClock | ManualClock):
            await clock.changed()
            # the clock's other followers woken by the same change act first (a token
            # expiring at this instant closes its sockets before they are told of it)
            await asyncio.sleep(0)
            moved()
