"""A RAPS floor snapshot's rows as columns already checked, so a jackpot pick judges 20,000
players with a few vectorised comparisons instead of parsing and checking the snapshot
file first. Made by the daemon's floor mirror (`floormirror`) from rows it checked when
they arrived; `rapsfloor.judge` uses them when a snapshot carries them.

Row i of every column is line i of the snapshot file they came with, so the judgement is
the one `rapsfloor.judge` gives on the file itself (the tests hold the two together).
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bonusd.raps.rules import IneligibleReason, RapsRules
from bonusd.raps.table import Bools, Ints

Codes = npt.NDArray[np.int32]  # a text column as codes of a table value -> code
Objects = npt.NDArray[np.object_]  # texts, as an array (to take many at once by a mask)


def _among(codes: Codes, table: Mapping[bytes, int], values: Collection[str]) -> Bools:
    """Where a coded column holds one of `values` (a value never seen has no code): one
    look-up per row in a table of the codes wanted."""
    wanted = np.zeros(len(table) + 1, dtype=np.bool_)
    wanted[[table[v.encode()] for v in values if v.encode() in table]] = True
    found: Bools = wanted[codes]
    return found


@dataclass(frozen=True, eq=False)
class FloorColumns:
    """The checked columns of one snapshot: cards as text, area and tier as codes of the
    given tables, the spend already that of the snapshot's gaming day."""

    cards: list[str]
    order: Ints  # the rows in card (code-point) order
    sorted_cards: Objects  # the cards in that order: `sorted_cards[i]` is `cards[order[i]]`
    area: Codes
    tier: Codes
    last_play_ms: Ints
    spend_cents: Ints
    excluded: Bools
    areas: Mapping[bytes, int]  # area -> its code (only ever grows)
    tiers: Mapping[bytes, int]

    @property
    def rows(self) -> int:
        return len(self.cards)

    def _rows_of(self, cards: Collection[str]) -> Bools:
        """Where `cards` are (a binary search each in card order, not a pass over all)."""
        found = np.zeros(self.rows, dtype=np.bool_)
        for card in cards:
            at = bisect.bisect_left(self.sorted_cards, card)
            if at < self.rows and self.sorted_cards[at] == card:
                found[self.order[at]] = True
        return found

    def judge(
        self, at_ms: int, rules: RapsRules, previous_winners: Collection[str] = ()
    ) -> tuple[tuple[str, ...], dict[IneligibleReason, Bools]]:
        """What `rapsfloor.judge` finds on the snapshot these columns are (taken at `at_ms`),
        without reading its file: the eligible cards in code-point order, and the rows each
        reason leaves out."""
        cutoff = at_ms - int(rules.active_window.total_seconds() * 1000)
        none = np.zeros(self.rows, dtype=np.bool_)
        winners = frozenset(previous_winners)
        failed = {
            IneligibleReason.EXCLUDED: self.excluded,
            IneligibleReason.OUTSIDE_AREAS: ~_among(self.area, self.areas, rules.areas),
            IneligibleReason.NOT_ACTIVE: self.last_play_ms < cutoff,
            IneligibleReason.BELOW_MIN_SPEND: self.spend_cents < rules.min_spend_cents,
            IneligibleReason.TIER: none
            if rules.tiers is None
            else ~_among(self.tier, self.tiers, rules.tiers),
            IneligibleReason.PREVIOUS_WINNER: self._rows_of(winners) if winners else none,
        }
        ok = np.ones(self.rows, dtype=np.bool_)
        for mask in failed.values():
            ok &= ~mask
        return tuple(self.sorted_cards[ok[self.order]]), failed  # (one pass over the cards)
