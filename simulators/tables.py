"""Gaming tables: their seats, and the ratings of the players in them.

A rating starts with the player's average bet (`profiles.TABLE_BETS` by tier; a chaser
sometimes one step higher), is updated about every `rating_update_minutes` with the
play since its previous event (hands at the game's pace x the average bet, points 1 per
R1), and ends with the last increments when the visit ends. The pit adjusts the
average bet now and then (`TABLE_BET_DRIFT_RATE`). An update never covers an edge of the
promotion or a gaming day: it is sent just before it, so every increment has one
multiplier and one gaming day.
"""

from __future__ import annotations

import random

from simulators import profiles as pf
from simulators.aggregate import Cuts
from simulators.events import Payload
from simulators.floor import Floor
from simulators.places import FreePlaces

_MINUTE = 60_000
_HOUR = 3_600_000


class Rating:
    """One player rated at one seat."""

    __slots__ = ("avg_bet", "hands_per_ms", "last_ms", "seat", "table")

    def __init__(self, table: int, seat: int, avg_bet: int, hands_per_ms: float, t: int) -> None:
        self.table = table
        self.seat = seat
        self.avg_bet = avg_bet
        self.hands_per_ms = hands_per_ms
        self.last_ms = t


class Tables:
    """The free seats of the floor's tables (by area) and the rating rules."""

    __slots__ = ("_areas", "_cuts", "_hands_per_ms", "_update_ms", "free")

    def __init__(self, floor: Floor, cuts: Cuts) -> None:
        config = floor.config
        hands = dict(pf.HANDS_PER_HOUR)
        self._areas = [d.area for d in floor.devices]
        self._hands_per_ms = [hands.get(d.game, 0.0) / _HOUR for d in floor.devices]
        self._update_ms = config.rating_update_minutes * _MINUTE
        self._cuts = cuts
        self.free = FreePlaces()  # table device index * 8 + seat
        for i, d in enumerate(floor.devices):
            if d.kind == "table":
                for seat in range(1, config.seats_per_table + 1):
                    self.free.put(d.area, i * 8 + seat)

    def __len__(self) -> int:
        return len(self.free)

    def take(self, area: str, rng: random.Random) -> tuple[int, int] | None:
        """A free (table, seat), in `area` if it has one."""
        code = self.free.take(area, rng)
        return None if code < 0 else (code >> 3, code & 7)

    def start(
        self, rng: random.Random, t: int, where: tuple[int, int], tier: int, step_up: float
    ) -> Rating:
        bets = pf.TABLE_BETS[tier]
        pick = rng.randrange(len(bets))
        if step_up and rng.random() < step_up:
            pick = min(pick + 1, len(bets) - 1)
        table, seat = where
        return Rating(table, seat, bets[pick], self._hands_per_ms[table], t)

    def next_at(self, rng: random.Random, t: int, visit_end: int) -> int:
        """When the rating's next event is due (the end when the visit ends)."""
        at = min(t + int(self._update_ms * rng.uniform(0.8, 1.2)), visit_end)
        edge = self._cuts.next_edge(t)
        if t + 1 < edge <= at:
            at = edge - 1
        return at

    def settle(self, rng: random.Random, t: int, rating: Rating) -> Payload:
        """The increments since the rating's previous event; the bet may drift after."""
        hands = round((t - rating.last_ms) * rating.hands_per_ms * rng.uniform(0.85, 1.15))
        bet = rating.avg_bet
        wager = hands * bet
        rating.last_ms = t
        if rng.random() < pf.TABLE_BET_DRIFT_RATE:
            step = pf.TABLE_BET_STEP if rng.random() < 0.5 else -pf.TABLE_BET_STEP
            rating.avg_bet = max(pf.TABLE_BET_STEP, bet + step)
        return {
            "seat": rating.seat,
            "avg_bet_cents": bet,
            "wager_cents": wager,
            "points": wager // 100,
        }

    def release(self, rating: Rating) -> None:
        self.free.put(self._areas[rating.table], rating.table * 8 + rating.seat)
