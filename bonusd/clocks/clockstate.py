"""The shared clock's state: the parameters kept in its Redis hash, and the arithmetic
that turns them into a simulated instant (docs/clock.md). Pure: no I/O."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass

from bonusd.errors import ClockError

MIN_SPEED = 1.0
MAX_SPEED = 10_000.0
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_FIELDS = ("origin_wall", "origin_sim_ms", "speed", "paused", "version", "epoch")


def ms_of(instant: dt.datetime) -> int:
    if instant.tzinfo is None:
        raise ClockError(f"clock instants must carry a UTC offset, got {instant.isoformat()}")
    return (instant - _EPOCH) // dt.timedelta(milliseconds=1)


def instant_of(sim_ms: float) -> dt.datetime:
    """The aware (UTC) instant of a simulated time in Unix milliseconds."""
    return _EPOCH + dt.timedelta(microseconds=math.floor(sim_ms * 1000))


def check_speed(speed: float) -> float:
    """`speed` if it is a speed-up the shared clock supports, else a `ClockError`."""
    if not MIN_SPEED <= speed <= MAX_SPEED:  # also refuses NaN
        raise ClockError(
            f"clock speed must be between x{MIN_SPEED:g} and x{MAX_SPEED:,.0f}, got x{speed:g}"
        )
    return float(speed)


@dataclass(frozen=True, slots=True)
class ClockState:
    """The shared clock's parameters, as stored in its Redis hash."""

    origin_wall: float  # Unix seconds of the writer's wall clock at the last change
    origin_sim_ms: int  # the simulated instant then, Unix milliseconds
    speed: float
    paused: bool
    version: int
    epoch: str
    changed_by: str = ""

    def sim_ms(self, wall: float) -> float:
        """Simulated Unix milliseconds at wall time `wall` (Unix seconds)."""
        if self.paused:
            return float(self.origin_sim_ms)
        return self.origin_sim_ms + (wall - self.origin_wall) * 1000.0 * self.speed

    def instant(self, wall: float) -> dt.datetime:
        return instant_of(self.sim_ms(wall))

    def supersedes(self, other: ClockState | None) -> bool:
        """True if this state is newer than `other` (or another life of the clock)."""
        return other is None or self.epoch != other.epoch or self.version > other.version

    def changed(
        self,
        wall: float,
        by: str,
        *,
        jump_ms: int = 0,
        speed: float | None = None,
        paused: bool | None = None,
    ) -> ClockState:
        """The next state: a new origin at `wall`, so the clock is continuous across it."""
        return dataclasses.replace(
            self,
            origin_wall=wall,
            origin_sim_ms=math.floor(self.sim_ms(wall)) + jump_ms,
            speed=self.speed if speed is None else speed,
            paused=self.paused if paused is None else paused,
            version=self.version + 1,
            changed_by=by,
        )

    def to_fields(self) -> dict[str, str]:
        return {
            "origin_wall": repr(self.origin_wall),  # round-trips exactly
            "origin_sim_ms": str(self.origin_sim_ms),
            "speed": repr(self.speed),
            "paused": "1" if self.paused else "0",
            "version": str(self.version),
            "epoch": self.epoch,
            "changed_by": self.changed_by,
        }

    @classmethod
    def from_fields(cls, key: str, raw: Mapping[bytes | str, bytes | str]) -> ClockState:
        fields = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in raw.items()
        }
        missing = [f for f in _FIELDS if f not in fields]
        try:
            if missing:
                raise ValueError(f"missing field(s) {', '.join(missing)}")
            return cls(
                origin_wall=float(fields["origin_wall"]),
                origin_sim_ms=int(fields["origin_sim_ms"]),
                speed=check_speed(float(fields["speed"])),
                paused=fields["paused"] == "1",
                version=int(fields["version"]),
                epoch=fields["epoch"],
                changed_by=fields.get("changed_by", ""),
            )
        except (ValueError, ClockError) as exc:
            raise ClockError(
                f"the shared clock hash {key} is corrupt ({exc}); stop every daemon and the "
                f"simulator, delete the key, and start again (see docs/clock.md)"
            ) from exc
