"""Promotion accounting on the ingest path: which draws a play counts for, and how much.

For every running promotion of the site, each rated play (an EGM game or a table rating
event) inside a draw's earning window adds, per member, draw and side: multiplied window
points, a rated play, the gaming day (for visits), when the total last grew (leaderboard
ties), and the points to the draw's live leaderboard. Multipliers are judged by the play's
own event time and never change base points. An aggregated `play` event (N games' meter
deltas) counts as N rated plays at its end time `ts`, its points multiplied as one total
(docs/telemetry.md, "Aggregated play"). Eligibility (tiers, exclusions, age) is not
judged here but when standings are read, so an exclusion takes effect at once.

This module is pure: it describes a `FloorEvent`'s effects (see `bonusd/floor/effects.py`).

    pwf:{promotion}:{draw}:{field}            hash  card -> value, for the fields
                                                    {side}_points, {side}_plays, {side}_reached,
                                                    {side}_visits, visits (distinct days)
    (one hash per field rather than per member: a whole draw reads back in a few replies)
    pwd:{promotion}:{draw}:{card}:{side|any}  set   gaming days with play on that side
    lb:{promotion}:{draw}:{side}              zset  live leaderboard, score = window points
    pm:{promotion}:{draw}                     set   members with play in the window
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from bonusd.floor.effects import Effects
from bonusd.floor.telemetry import FloorEvent
from bonusd.infra.keys import Relative
from bonusd.promotions import Promotion
from bonusd.promotions.multipliers import multiplied, multiplier_windows
from bonusd.promotions.timing import earning_window

PLAY_TYPES = frozenset({"game", "play", "rating_start", "rating_update", "rating_end"})


@dataclass(frozen=True, slots=True)
class _Window:
    """A multiplier window in epoch milliseconds, for the hot path."""

    opens_ms: int
    closes_ms: int
    sides: frozenset[str]
    factor: Decimal


@dataclass(frozen=True, slots=True)
class _Indexed:
    """One promotion: its multiplier windows and its draws' earning windows, in ms."""

    promotion: str
    multipliers: tuple[_Window, ...]
    draws: tuple[tuple[str, int, int], ...]  # (draw id, opens ms, closes ms)


class PromotionBook:
    """The earning windows and multipliers of a site's promotions, ready for the hot path."""

    def __init__(self, promotions: Sequence[Promotion]) -> None:
        self.promotions = tuple(promotions)
        indexed = []
        for promotion in self.promotions:
            windows = tuple(
                _Window(_ms(w.opens), _ms(w.closes), frozenset(str(s) for s in w.sides), w.factor)
                for w in multiplier_windows(promotion)
            )
            draws = []
            for draw in promotion.draw_list:
                window = earning_window(promotion, draw)
                draws.append((draw.id, _ms(window.opens), _ms(window.closes)))
            indexed.append(_Indexed(promotion.id, windows, tuple(draws)))
        self._indexed = tuple(indexed)
        spans = [(o, c) for i in indexed for _, o, c in i.draws]
        self.first_ms = min((o for o, _ in spans), default=0)
        self.last_ms = max((c for _, c in spans), default=0)

    def describe(self, event: FloorEvent, fx: Effects) -> None:
        """Add the promotion effects of one event to `fx` (none outside every window)."""
        ts = event.ts_ms
        if event.type not in PLAY_TYPES or not self.first_ms <= ts < self.last_ms:
            return
        side = "slots" if event.kind == "egm" else "tables"
        for promo in self._indexed:
            gained = event.points
            for window in promo.multipliers:
                if window.opens_ms <= ts < window.closes_ms and side in window.sides:
                    gained = multiplied(event.points, window.factor)
                    break
            for draw_id, opens_ms, closes_ms in promo.draws:
                if not opens_ms <= ts < closes_ms:
                    continue
                pid, card, day = promo.promotion, event.card, event.gaming_day
                fields = Relative.window_field(pid, draw_id, "")  # + the field's name
                days = Relative.window_days(pid, draw_id, card, "")  # + the side or "any"
                fx.incr(f"{fields}{side}_plays", card, event.games)  # `play`: N games
                fx.add_counted(f"{days}{side}", day, f"{fields}{side}_visits", card)
                fx.add_counted(f"{days}any", day, f"{fields}visits", card)
                fx.add(Relative.played(pid, draw_id), card)
                if gained:
                    fx.incr(f"{fields}{side}_points", card, gained)
                    fx.maximum(f"{fields}{side}_reached", card, ts)
                    fx.score(Relative.board(pid, draw_id, side), card, gained)


def _ms(instant: dt.datetime) -> int:
    return int(instant.timestamp() * 1000)
