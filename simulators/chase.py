"""Players chasing a threshold: what members believe their window points are, and what it
makes them do.

For every draw of the promotion that qualifies by a points threshold, the simulator keeps
each member's multiplied window points per side, from the play it generates plus an
estimate of the play before the run started (`prior`). A member whose best side is at
least `chase_from` of the threshold but not there yet, within `chase_days` of the window
closing, chases it with an urgency `u` that grows from 0 to 1 as the close approaches:

- visits: the member's visit weight grows by `chase_visit_boost * u`;
- visit length: x (1 + `chase_length_boost * u`);
- stake: with chance `chase_stake_step * u` one step higher (slots stake, table bet).

In the `draw_night_hours` before a draw's last round, members of the tiers it is open to
come `draw_night_boost` more often (twice that when they qualified for it).
These beliefs only steer behaviour; the standings are the daemon's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from simulators import profiles as pf
from simulators.campaign import Campaign
from simulators.config import FloorConfig
from simulators.games import STAKES, Ints

_DAY_MS = 86_400_000
_TABLE_HANDS_PER_HOUR = 50.0
Floats = npt.NDArray[np.float64]


class Chase:
    """Members' believed window points per threshold draw and side, and their urgency."""

    def __init__(
        self,
        campaign: Campaign,
        config: FloorConfig,
        *,
        tiers: Sequence[int],
        weights: Sequence[float],
        table_affinity: Sequence[float],
        visits_per_day: float,
        start_ms: int,
        gen: np.random.Generator,
    ) -> None:
        self._campaign = campaign
        self._config = config
        self._tiers = np.asarray(tiers, dtype=np.int64)
        self._weights = np.asarray(weights, dtype=np.float64)
        n = len(tiers)
        self.points = np.zeros((len(campaign.thresholds), 2, n), dtype=np.int64)
        self.intensity: Floats = np.zeros(n, dtype=np.float64)
        self._eligible = [np.isin(self._tiers, sorted(d.tiers)) for d in campaign.thresholds]
        self._night_tiers = [np.isin(self._tiers, sorted(n.tiers)) for n in campaign.nights]
        if n and len(campaign.thresholds):
            self._prior(np.asarray(table_affinity), visits_per_day, start_ms, gen)

    def _prior(
        self, affinity: Floats, visits_per_day: float, start_ms: int, gen: np.random.Generator
    ) -> None:
        """Window points earned before the run started: the expected points of a member's
        visits so far, with a wide spread (gamma, shape 0.6)."""
        c = self._config
        low, high, mode = c.session_minutes
        hours = (low + high + mode) / 3 / 60
        slot_points = np.asarray(
            [
                float(s.stakes @ s.probs) * c.games_per_hour * c.tier_pace[i] * hours / 100
                for i, s in enumerate(STAKES)
            ]
        )
        table_points = np.asarray(
            [np.mean(b) * _TABLE_HANDS_PER_HOUR * hours / 100 for b in pf.TABLE_BETS]
        )
        share = self._weights / max(self._weights.sum(), 1e-9)
        daily = visits_per_day * share
        spread = gen.gamma(0.6, 1 / 0.6, size=(2, len(share)))
        per_side = (
            daily * (1 - affinity) * slot_points[self._tiers] * spread[0],
            daily * affinity * table_points[self._tiers] * spread[1],
        )
        for k, draw in enumerate(self._campaign.thresholds):
            days = max(0.0, (min(start_ms, draw.closes_ms) - draw.opens_ms) / _DAY_MS)
            for side in draw.sides:
                self.points[k, side] = (per_side[side] * days).astype(np.int64)

    def add(self, member: int, side: int, times: Ints, points: Ints) -> None:
        """Count a member's plays (base points) for every threshold draw they fall in."""
        if not len(times):
            return
        multiplied = self._campaign.multiplied(side, times, points)
        for k, draw in enumerate(self._campaign.thresholds):
            if side not in draw.sides or times[-1] < draw.opens_ms or times[0] >= draw.closes_ms:
                continue
            inside = (times >= draw.opens_ms) & (times < draw.closes_ms)
            self.points[k, side, member] += int(multiplied[inside].sum())

    def refresh(self, t_ms: int) -> tuple[list[int], list[float]]:
        """Update every member's urgency at `t_ms`; return the visit boosts (members, extra
        weight) for `MemberPicker.set_boosts`."""
        c = self._config
        urgency = np.zeros_like(self.intensity)
        qualified = np.zeros((len(self._campaign.thresholds), len(urgency)), dtype=bool)
        for k, draw in enumerate(self._campaign.thresholds):
            best = self.points[k][list(draw.sides)].max(axis=0)
            qualified[k] = best >= draw.threshold
            if not draw.opens_ms <= t_ms < draw.closes_ms:
                continue
            days_left = (draw.closes_ms - t_ms) / _DAY_MS
            if days_left > c.chase_days:
                continue
            u = 1.0 - days_left / c.chase_days
            chasing = self._eligible[k] & (best >= c.chase_from * draw.threshold) & ~qualified[k]
            urgency = np.maximum(urgency, np.where(chasing, u, 0.0))
        self.intensity = urgency
        boost = self._weights * c.chase_visit_boost * urgency
        for i, night in enumerate(self._campaign.nights):
            if night.from_ms <= t_ms < night.until_ms and c.draw_night_boost > 0:
                factor = np.where(self._night_tiers[i], c.draw_night_boost, 0.0)
                if night.threshold >= 0:
                    factor = factor * np.where(qualified[night.threshold], 2.0, 1.0)
                boost = boost + self._weights * factor
        members = np.flatnonzero(boost > 0)
        return members.tolist(), boost[members].tolist()
