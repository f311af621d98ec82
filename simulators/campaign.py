"""A promotion as the simulator sees it: its instants, multipliers, thresholds and draw nights.

Read from bonusd's own promotion engine (`bonusd.promotions`), never re-implemented:

- `edges`: every instant at which counting changes (multiplier windows, earning windows,
  bin closes, draw rounds, jackpot times and sessions, board publications); aggregated
  play never straddles one (aggregate.py);
- `multiplied`: a stint's base points times the multiplier in force at each game;
- `thresholds`: the draws that qualify by a points threshold, with their windows, sides and
  tiers, which members chase (chase.py);
- `nights`: the evenings of draws, when the members a draw is open to come more often.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bonusd.promotions import Promotion, earning_window, schedule
from bonusd.promotions.kinds import QualificationKind, Side
from bonusd.promotions.multipliers import multiplier_windows
from bonusd.promotions.timing import local, round_instants
from simulators.config import TIERS
from simulators.games import Ints
from simulators.timefmt import to_ms

SIDES = (Side.SLOTS, Side.TABLES)
"""Side index 0 is slots, 1 is tables."""


@dataclass(frozen=True, slots=True)
class ThresholdDraw:
    """A draw whose sides qualify by reaching `threshold` window points."""

    id: str
    threshold: int
    opens_ms: int
    closes_ms: int
    sides: tuple[int, ...]
    tiers: frozenset[int]


@dataclass(frozen=True, slots=True)
class DrawNight:
    """The hours before a draw's last round, and who it is open to."""

    id: str
    from_ms: int
    until_ms: int
    tiers: frozenset[int]
    threshold: int
    """Index into `Campaign.thresholds` of this draw, or -1 if it has no threshold."""


class Campaign:
    """The simulator's view of one promotion (`hours_before` sizes the draw nights)."""

    def __init__(self, promotion: Promotion, *, hours_before: float = 4.0) -> None:
        self.promotion = promotion
        self.zone = promotion.zone
        self.day_start = promotion.gaming_day_start
        self.edges = _edges(promotion)
        self._windows = [_side_windows(promotion, side) for side in SIDES]
        self.thresholds = _thresholds(promotion)
        ids = [d.id for d in self.thresholds]
        nights: list[DrawNight] = []
        for draw in promotion.draw_list:
            rounds = round_instants(promotion, draw)
            nights.append(
                DrawNight(
                    id=draw.id,
                    from_ms=to_ms(rounds[0]) - int(hours_before * 3_600_000),
                    until_ms=to_ms(rounds[-1]),
                    tiers=frozenset(TIERS.index(t.value) for t in promotion.draw_tiers(draw)),
                    threshold=ids.index(draw.id) if draw.id in ids else -1,
                )
            )
        self.nights = tuple(nights)

    def multiplied(self, side: int, times: Ints, points: Ints) -> Ints:
        """Each play's points times the factor in force at its time (rounded down)."""
        opens, closes, factors = self._windows[side]
        if not len(opens):
            return points
        i = np.searchsorted(opens, times, side="right") - 1
        inside = (i >= 0) & (times < closes[np.maximum(i, 0)])
        factor = np.where(inside, factors[np.maximum(i, 0)], 1.0)
        return np.floor(points * factor).astype(np.int64)


def _edges(promotion: Promotion) -> tuple[int, ...]:
    """Instants (epoch ms) at which the promotion's counting changes."""
    randomly_timed = {s.id for s in promotion.jackpot_sessions if s.times.random}
    instants = {
        to_ms(a.at)
        for a in schedule(promotion, rng=random.Random(0))
        if not (a.action.value == "jackpot" and a.ids[1] in randomly_timed)
    }
    for draw in promotion.draw_list:
        instants.add(to_ms(earning_window(promotion, draw).opens))
    for session in promotion.jackpot_sessions:
        instants.add(to_ms(local(promotion, session.date, session.start)))
    return tuple(sorted(instants))


def _side_windows(promotion: Promotion, side: Side) -> tuple[Ints, Ints, npt.NDArray[np.float64]]:
    windows = [w for w in multiplier_windows(promotion) if side in w.sides]
    return (
        np.asarray([to_ms(w.opens) for w in windows], dtype=np.int64),
        np.asarray([to_ms(w.closes) for w in windows], dtype=np.int64),
        np.asarray([float(w.factor) for w in windows], dtype=np.float64),
    )


def _thresholds(promotion: Promotion) -> tuple[ThresholdDraw, ...]:
    out: list[ThresholdDraw] = []
    for draw in promotion.draw_list:
        q = draw.qualification
        if q.kind is not QualificationKind.THRESHOLD or q.threshold is None:
            continue
        window = earning_window(promotion, draw)
        out.append(
            ThresholdDraw(
                id=draw.id,
                threshold=q.threshold,
                opens_ms=to_ms(window.opens),
                closes_ms=to_ms(window.closes),
                sides=tuple(SIDES.index(s) for s in q.sides),
                tiers=frozenset(TIERS.index(t.value) for t in promotion.draw_tiers(draw)),
            )
        )
    return tuple(out)
