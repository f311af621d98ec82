"""Promotion accounting on the ingest path: which draws a play counts for, and how much.

For every running promotion of the site, each rated play (an EGM game or a table rating
event) inside a draw's earning window adds, per member, draw and side: multiplied window
points, a rated play, the gaming day (for visits), when the total last grew (leaderboard
ties), and the points to the draw's live leaderboard. Multipliers are judged by the play's
own event time and never change base points. Eligibility (tiers, exclusions, age) is not
judged here but when standings are read, so an exclusion takes effect at once.

This module is pure: it turns a `FloorEvent` into store operations (see `floor.py`).

    pw:{promotion}:{draw}:{card}              hash  {side}_points, {side}_plays, {side}_reached
    pwd:{promotion}:{draw}:{card}:{side|any}  set   gaming days with play on that side
    lb:{promotion}:{draw}:{side}              zset  live leaderboard, score = window points
    pm:{promotion}:{draw}                     set   members with play in the window
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from bonusd.promotions import Promotion, Side
from bonusd.promotions.multipliers import MultiplierWindow, multiplied, multiplier_windows
from bonusd.promotions.timing import EarningWindow, earning_window
from bonusd.telemetry import FloorEvent

PLAY_TYPES = frozenset({"game", "rating_start", "rating_update", "rating_end"})


@dataclass(frozen=True, slots=True)
class _Counted:
    promotion: str
    draw: str
    window: EarningWindow
    opens_ms: int
    closes_ms: int
    multipliers: tuple[MultiplierWindow, ...]


class PromotionBook:
    """The earning windows and multipliers of a site's promotions, ready for the hot path."""

    def __init__(self, promotions: Sequence[Promotion]) -> None:
        self.promotions = tuple(promotions)
        counted = []
        for p in self.promotions:
            windows = multiplier_windows(p)
            for draw in p.draw_list:
                w = earning_window(p, draw)
                counted.append(_Counted(p.id, draw.id, w, _ms(w.opens), _ms(w.closes), windows))
        self._counted = tuple(counted)
        self.first_ms = min((c.opens_ms for c in counted), default=0)
        self.last_ms = max((c.closes_ms for c in counted), default=0)

    def operations(self, event: FloorEvent) -> list[str]:
        """The promotion operations of one event (empty when it counts for no draw)."""
        if event.type not in PLAY_TYPES or not self.first_ms <= event.ts_ms < self.last_ms:
            return []
        side = Side.SLOTS if event.kind == "egm" else Side.TABLES
        instant: dt.datetime | None = None
        ops: list[str] = []
        for c in self._counted:
            if not c.opens_ms <= event.ts_ms < c.closes_ms:
                continue
            if instant is None:
                instant = dt.datetime.fromtimestamp(event.ts_ms / 1000, dt.UTC)
            factor = next((w.factor for w in c.multipliers if w.applies(instant, side)), None)
            gained = multiplied(event.points, factor) if factor else event.points
            head = f"{c.promotion}:{c.draw}"
            member = f"pw:{head}:{event.card}"
            days = f"pwd:{head}:{event.card}"
            ops += ["H", member, f"{side}_plays", "1"]
            ops += ["S", f"{days}:{side}", event.gaming_day, "S", f"{days}:any", event.gaming_day]
            ops += ["S", f"pm:{head}", event.card]
            if gained:
                ops += ["H", member, f"{side}_points", str(gained)]
                ops += ["HMAX", member, f"{side}_reached", str(event.ts_ms)]
                ops += ["Z", f"lb:{head}:{side}", event.card, str(gained)]
        return ops


def _ms(instant: dt.datetime) -> int:
    return int(instant.timestamp() * 1000)
