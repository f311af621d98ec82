"""Who comes, and when: the floor's target occupancy over the week, and picking members.

`Demand.occupancy(t)` is the share of EGMs the floor should have carded in at `t`:
`peak_occupancy` x the hour's share (`hourly_occupancy`) x the night's factor
(`weekday_factor`; hours before 06:00 belong to the previous night) x the late-night boost
on Friday and Saturday nights, capped at 97%. Arrivals are a Poisson process whose rate
(occupancy x capacity / mean visit, Little's law) is constant within a local hour, so
the floor fills and empties with the profile; `next_arrival` draws it exactly.

`MemberPicker` picks who arrives: members in proportion to their visit weight (higher
tiers come more often), plus the boosts a promotion adds (chasers, draw nights);
`habits` says where each member likes to sit.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import random
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from simulators import profiles as pf
from simulators.config import FloorConfig

_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000
_MAX_OCCUPANCY = 0.97
_FRIDAY, _SATURDAY = 4, 5


class Demand:
    """Target occupancy by local time, for one floor config and time zone."""

    __slots__ = ("_cached", "_config", "_zone")

    def __init__(self, config: FloorConfig, zone: ZoneInfo) -> None:
        self._config = config
        self._zone = zone
        self._cached: tuple[int, int, float] = (-1, -1, 0.0)  # the last hour: [from, to), value

    def occupancy(self, t_ms: int) -> float:
        """Share of EGMs carded in that the floor aims for at `t_ms`."""
        return self._hour(t_ms)[0]

    def hour_ends(self, t_ms: int) -> int:
        """The end of the local hour `t_ms` is in (epoch ms)."""
        return self._hour(t_ms)[1]

    def _hour(self, t_ms: int) -> tuple[float, int]:
        start, end, value = self._cached
        if start <= t_ms < end:
            return value, end
        local = dt.datetime.fromtimestamp(t_ms / 1000, tz=self._zone)
        top = local.replace(minute=0, second=0, microsecond=0)
        begin = int(top.timestamp() * 1000)
        end = begin + _HOUR_MS
        value = self.at(local)
        self._cached = (begin, end, value)
        return value, end

    def at(self, local: dt.datetime) -> float:
        """The target occupancy at a local time."""
        c = self._config
        hour = local.hour
        night = (local - dt.timedelta(hours=pf.NIGHT_ENDS_HOUR)).weekday()
        value = c.peak_occupancy * c.hourly_occupancy[hour] * c.weekday_factor[night]
        if night in (_FRIDAY, _SATURDAY) and hour in pf.LATE_NIGHT_HOURS:
            value *= 1.0 + c.late_night_boost
        return min(_MAX_OCCUPANCY, value)

    def visits_per_day(self, capacity: float, visit_ms: float) -> float:
        """Expected arrivals a day, averaged over the 168 hours of a week."""
        monday = dt.datetime(2026, 1, 5)
        mean = sum(self.at(monday + dt.timedelta(hours=h)) for h in range(168)) / 168
        return mean * capacity * 24 * _HOUR_MS / visit_ms

    def next_arrival(self, t_ms: int, rng: random.Random, capacity: float, visit_ms: float) -> int:
        """The next arrival after `t_ms`: exact for a rate that is constant per hour."""
        while True:
            occupancy, end = self._hour(t_ms)
            rate = occupancy * capacity / visit_ms
            if rate > 0:
                at = t_ms + 1 + int(rng.expovariate(rate))
                if at < end:
                    return at
            t_ms = end


def habits(
    tiers: Sequence[int], config: FloorConfig, rng: random.Random
) -> tuple[list[str], list[str], list[float]]:
    """Per member: the EGM area and the table area they prefer, and the chance that a
    visit starts at a table (privé by tier, a quarter of slot players smoke)."""
    egm_pref: list[str] = []
    table_pref: list[str] = []
    table_affinity: list[float] = []
    for tier in tiers:
        prive = rng.random() < pf.TIER_PRIVE_PREFERENCE[tier]
        smoker = rng.random() < pf.SMOKER_RATE
        egm_pref.append("prive" if prive else "smoking" if smoker else "main")
        table_pref.append("prive" if prive else "main")
        table_affinity.append(min(1.0, config.table_share * pf.TIER_TABLE_FACTOR[tier]))
    return egm_pref, table_pref, table_affinity


class MemberPicker:
    """Weighted choice of a member who is not on the floor, with promotion boosts."""

    __slots__ = ("_boost_cum", "_boosted", "_cum")

    def __init__(self, weights: Sequence[float]) -> None:
        self._cum = list(itertools.accumulate(weights))
        self._boosted: list[int] = []
        self._boost_cum: list[float] = []

    def set_boosts(self, members: Sequence[int], extra: Sequence[float]) -> None:
        """Extra visit weight for these members (replaces the previous boosts)."""
        self._boosted = list(members)
        self._boost_cum = list(itertools.accumulate(extra))

    def pick(self, rng: random.Random, present: Sequence[bool]) -> int:
        """A member not on the floor, or -1 if none was found quickly."""
        if not self._cum:
            return -1
        base = self._cum[-1]
        boost = self._boost_cum[-1] if self._boost_cum else 0.0
        last = len(self._cum) - 1
        for _ in range(32):
            r = rng.random() * (base + boost)
            if r < base:
                m = min(bisect.bisect_right(self._cum, r), last)
            else:
                i = bisect.bisect_right(self._boost_cum, r - base)
                m = self._boosted[min(i, len(self._boosted) - 1)]
            if not present[m]:
                return m
        return -1
