"""What the rules engine is told about a member's play in one draw's earning window.

`MemberWindowStats` is the already-aggregated input of `rules.standing`: multiplied window
points per side, gaming visits (any side, and per side), rated plays, and when each side
reached its total (for leaderboard ties). For a draw whose window is a play window (Festa
Fortuna), the window points *are* the play-window points.

`aggregate` builds the stats from individual plays; the live store keeps running totals
instead, but this is the reference it must agree with, and what the tests drive.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from bonusd.promotions.kinds import BOTH_SIDES, Side
from bonusd.promotions.multipliers import multiplied, multiplier_windows
from bonusd.promotions.schema import Draw, Promotion
from bonusd.promotions.timing import earning_window


@dataclass(frozen=True)
class SideStats:
    """One side (slots or tables) of a member's window."""

    points: int = 0  # multiplied window points
    visits: int = 0  # gaming visits in the window with play on this side
    plays: int = 0  # rated plays in the window on this side
    reached_at: dt.datetime | None = None  # when `points` reached its current total

    def __post_init__(self) -> None:
        if min(self.points, self.visits, self.plays) < 0:
            raise ValueError(f"side stats must not be negative: {self}")


@dataclass(frozen=True)
class MemberWindowStats:
    """A member's play in one draw's earning window.

    `telemetry_since` is the first gaming day telemetry covers for this member; a member
    `last_visit` before it (and inside the window) counts as one more visit for the
    "3 months actives" rule. Left None, a `last_visit` in the window guarantees at least
    one visit but adds none to those telemetry saw.
    """

    slots: SideStats = field(default_factory=SideStats)
    tables: SideStats = field(default_factory=SideStats)
    visits: int = 0  # gaming visits in the window, any side (a day with both counts once)
    telemetry_since: dt.date | None = None

    def __post_init__(self) -> None:
        if self.visits < max(self.slots.visits, self.tables.visits):
            raise ValueError("visits must be at least the visits of either side")

    def side(self, side: Side) -> SideStats:
        return self.slots if side is Side.SLOTS else self.tables


@dataclass(frozen=True)
class RatedPlay:
    """One rated play as telemetry reports it: an EGM game or a table rating update."""

    at: dt.datetime
    side: Side
    base_points: int


def aggregate(
    promotion: Promotion,
    draw: Draw,
    plays: Iterable[RatedPlay],
    *,
    telemetry_since: dt.date | None = None,
) -> MemberWindowStats:
    """One member's window stats for `draw` from their plays (any order, any instants)."""
    window = earning_window(promotion, draw)
    windows = multiplier_windows(promotion)
    cal = promotion.calendar
    points = dict.fromkeys(BOTH_SIDES, 0)
    counts = dict.fromkeys(BOTH_SIDES, 0)
    reached: dict[Side, dt.datetime | None] = dict.fromkeys(BOTH_SIDES, None)
    days: dict[Side, set[dt.date]] = {side: set() for side in BOTH_SIDES}
    for play in sorted(plays, key=lambda p: p.at):
        if play.at.tzinfo is None:
            raise ValueError(f"play instants must be aware: {play}")
        if play.at not in window:
            continue
        factor = next((w.factor for w in windows if w.applies(play.at, play.side)), None)
        gained = multiplied(play.base_points, factor) if factor else play.base_points
        points[play.side] += gained
        counts[play.side] += 1
        days[play.side].add(cal.gaming_day(play.at))
        if gained:
            reached[play.side] = play.at

    def side(which: Side) -> SideStats:
        return SideStats(points[which], len(days[which]), counts[which], reached[which])

    return MemberWindowStats(
        slots=side(Side.SLOTS),
        tables=side(Side.TABLES),
        visits=len(days[Side.SLOTS] | days[Side.TABLES]),
        telemetry_since=telemetry_since,
    )
