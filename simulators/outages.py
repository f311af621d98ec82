"""Machines going offline: when each EGM's interface board goes silent, and for how long.

Each EGM's outages are a Poisson process (`FloorConfig.offline_per_egm_day` per day)
with triangular lengths (`offline_minutes`), drawn from the EGM's own random stream: an
EGM's outages depend only on the seed and its id, never on the rest of the floor or the
length of the run, so a longer run starts with the outages of a shorter one and a test
can list them (`plan_outages`). During an outage the EGM sends nothing and nobody cards
in; a player on it when it fails leaves without a `card_out` and moves to another
machine, so bonusd ends that session by its idle timeout or the next card-in.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import NamedTuple

from simulators.floor import Floor
from simulators.timefmt import to_ms

NEVER = 2**62
_DAY_MS = 86_400_000
_MINUTE_MS = 60_000


class Outage(NamedTuple):
    """One EGM offline from `start_ms` (included) to `end_ms` (excluded)."""

    device: str
    start_ms: int
    end_ms: int


class Outages:
    """The next outage of every device (tables never go offline: `NEVER`)."""

    __slots__ = ("_length", "_next", "_rate_ms", "_rngs")

    def __init__(self, floor: Floor, seed: int, start_ms: int) -> None:
        config = floor.config
        self._rate_ms = config.offline_per_egm_day / _DAY_MS
        self._length = config.offline_minutes
        self._rngs: list[random.Random | None] = []
        self._next: list[int] = []
        for d in floor.devices:
            if d.kind != "egm" or self._rate_ms <= 0:
                self._rngs.append(None)
                self._next.append(NEVER)
                continue
            rng = random.Random(f"bonusd-sim/outage/{seed}/{d.device}")
            self._rngs.append(rng)
            self._next.append(start_ms + 1 + int(rng.expovariate(self._rate_ms)))

    def next_start(self, device: int) -> int:
        """When device (index) `device` next goes offline; `NEVER` for tables."""
        return self._next[device]

    def take(self, device: int) -> tuple[int, int]:
        """The device's next outage (start, end); draws the one after it."""
        rng = self._rngs[device]
        if rng is None:
            raise ValueError(f"device {device} never goes offline")
        start = self._next[device]
        low, high, mode = self._length
        end = start + max(_MINUTE_MS, int(rng.triangular(low, high, mode) * _MINUTE_MS))
        self._next[device] = end + 1 + int(rng.expovariate(self._rate_ms))
        return start, end


def plan_outages(
    floor: Floor, *, seed: int, start: dt.datetime, duration: dt.timedelta
) -> list[Outage]:
    """Every outage that starts in the run (the generator follows exactly these)."""
    start_ms = to_ms(start)
    end_ms = start_ms + duration // dt.timedelta(milliseconds=1)
    outages = Outages(floor, seed, start_ms)
    found: list[Outage] = []
    for i, device in enumerate(floor.devices):
        while outages.next_start(i) < end_ms:
            begin, end = outages.take(i)
            found.append(Outage(device.device, begin, end))
    return sorted(found, key=lambda o: (o.start_ms, o.device))
