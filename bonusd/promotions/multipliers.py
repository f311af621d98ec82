"""Points multiplier windows: which factor applies to a play, by its event time and side.

A window multiplies the base points of play whose *event time* falls in [opens, closes)
local time, for that promotion's counting only. Windows of one side never overlap (the
loader refuses it), so at most one factor applies; outside every window it is 1.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from bonusd.promotions.kinds import Side
from bonusd.promotions.schema import Promotion
from bonusd.promotions.timing import local

ONE = Decimal(1)


@dataclass(frozen=True)
class MultiplierWindow:
    id: str
    opens: dt.datetime
    closes: dt.datetime
    factor: Decimal
    sides: frozenset[Side]

    def applies(self, instant: dt.datetime, side: Side) -> bool:
        return side in self.sides and self.opens <= instant < self.closes


def multiplier_windows(promotion: Promotion) -> tuple[MultiplierWindow, ...]:
    """The promotion's windows as aware instants, in time order."""
    windows = (
        MultiplierWindow(
            id=m.id,
            opens=local(promotion, m.date, m.start),
            closes=local(promotion, m.date, m.end),
            factor=m.factor,
            sides=frozenset(m.sides),
        )
        for m in promotion.multipliers
    )
    return tuple(sorted(windows, key=lambda w: (w.opens, w.id)))


def multiplier_at(promotion: Promotion, instant: dt.datetime, side: Side) -> Decimal:
    """The factor for play on `side` at `instant` (aware); 1 outside every window."""
    if instant.tzinfo is None:
        raise ValueError("multiplier_at needs an aware instant")
    for window in multiplier_windows(promotion):
        if window.applies(instant, side):
            return window.factor
    return ONE


def multiplied(base_points: int, factor: Decimal) -> int:
    """Whole multiplied points; a fractional factor rounds down, play by play."""
    return int((Decimal(base_points) * factor).to_integral_value(rounding=ROUND_FLOOR))
