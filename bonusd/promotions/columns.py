"""A draw's columns from undecoded Redis replies: the per-field hashes the ingest keeps
(card -> value) turned into the row-aligned numpy arrays the bulk rules read.

Pure data work, no I/O: `rawread` does the reading, `summaries` runs these steps in a
worker thread. Cards stay `bytes` as Redis sent them; values are parsed with `int`, as
the decoded path parsed them; rows are placed by one dict of the draw's cards.

The event loop shares the interpreter with the worker thread, and a single long call
into C (a dict of 200,000 cards, 200,000 lookups) holds it throughout: each such step
here goes by slices of `SLICE` items, so that the loop gets a turn every few ms."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TypeVar

import numpy as np

from bonusd.promotions.bulk import Bools, Ints, MemberArrays, StatArrays

# One HGETALL reply: flat [card, value, card, value, ...] (RESP2), or a map (a RESP3
# connection, as a Redis Cluster client's)
Flat = list[bytes] | dict[bytes, bytes]

STAT_FIELDS = (
    "slots_points",
    "tables_points",
    "slots_plays",
    "tables_plays",
    "slots_visits",
    "tables_visits",
    "visits",
)

SLICE = 16_384  # items per call into C on the worker thread (a few ms at most)

_Item = TypeVar("_Item")

# the instant of a tied member whose instant was never written: after everyone else's
NEVER_REACHED = 2**62


def pairs(reply: Flat) -> tuple[list[bytes], list[bytes]]:
    """The cards and the values of one HGETALL reply, in the same order."""
    if isinstance(reply, dict):
        return list(reply), list(reply.values())
    return reply[0::2], reply[1::2]


def by_slices(items: Sequence[_Item], step: Callable[[Sequence[_Item]], Ints]) -> Ints:
    """`step` over `items`, `SLICE` at a time, the results end to end."""
    if len(items) <= SLICE:
        return step(items)
    return np.concatenate([step(items[at : at + SLICE]) for at in range(0, len(items), SLICE)])


def positions(cards: Sequence[bytes], first: int = 0) -> dict[bytes, int]:
    """Each card's row: `first`, `first + 1`, ... in the order given."""
    out: dict[bytes, int] = {}
    for at in range(0, len(cards), SLICE):
        out.update(zip(cards[at : at + SLICE], range(first + at, first + len(cards)), strict=False))
    return out


def ints(values: Sequence[bytes | None], absent: int = 0) -> Ints:
    """Redis integer texts as int64 (`absent` for a missing or empty one)."""
    return by_slices(values, lambda part: _ints(part, absent))


def _ints(values: Sequence[bytes | None], absent: int) -> Ints:
    try:
        return np.fromiter(map(int, values), np.int64, len(values))  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a None or an empty text somewhere: the slow way
        return np.array([int(v) if v else absent for v in values], np.int64)


def rows_in(rows_of: dict[bytes, int], cards: Sequence[bytes], absent: int | None = None) -> Ints:
    """The rows of `cards` (`absent` for a card without one; None: each must have one)."""

    def lookup(part: Sequence[bytes]) -> Ints:
        found: Iterable[int | None] = (
            map(rows_of.__getitem__, part)
            if absent is None
            else map(rows_of.get, part, repeat(absent))
        )
        return np.fromiter(found, np.int64, len(part))

    return by_slices(cards, lookup)


def _place(
    column: Ints,
    cards: list[bytes],
    rows_of: dict[bytes, int],
    keys: list[bytes],
    values: list[bytes],
) -> None:
    """Values into `column` at the rows of their cards (each card must have a row)."""
    if keys == cards[: len(keys)]:  # the rows' own order (it often is): no lookups
        column[: len(keys)] = ints(values)
    else:
        column[rows_in(rows_of, keys)] = ints(values)


@dataclass(frozen=True)
class DrawReplies:
    """One draw's undecoded replies: the activated cards and the needed columns."""

    activated: list[bytes]
    columns: dict[str, Flat]


@dataclass(frozen=True)
class DrawColumns:
    """A draw's members with play or an activation (row i is `cards[i]`), their stats,
    and which of them activated."""

    cards: list[bytes]
    rows_of: dict[bytes, int]
    stats: StatArrays
    activated: Bools

    @classmethod
    def build(cls, replies: DrawReplies, since: dt.date | None) -> DrawColumns:
        """Rows in the order of the `visits` column (every play counts a gaming day, so
        its cards are the members with play), then activated cards without play."""
        played, visits = pairs(replies.columns["visits"])
        rows_of = positions(played)
        cards = played + [card for card in replies.activated if card not in rows_of]
        rows_of.update(positions(cards[len(played) :], len(played)))
        columns = {}
        for name in STAT_FIELDS:
            columns[name] = np.zeros(len(cards), np.int64)
            if name in replies.columns:
                reply = replies.columns[name]
                keys, values = (played, visits) if name == "visits" else pairs(reply)
                _place(columns[name], cards, rows_of, keys, values)
        activated = np.zeros(len(cards), np.bool_)
        activated[[rows_of[card] for card in replies.activated]] = True
        return cls(cards, rows_of, StatArrays(**columns, telemetry_since=since), activated)

    def column(self, keys: Sequence[bytes], values: Sequence[bytes | None], absent: int) -> Ints:
        """Values of another card -> value hash as a column of these rows (`absent` where
        the hash has no value; cards not among these rows are left out)."""
        out = np.full(len(self.cards), absent, np.int64)
        if keys == self.cards[: len(keys)]:  # the same order: no lookups
            out[: len(keys)] = ints(values, absent)
            return out
        where = rows_in(self.rows_of, keys, -1)
        mine = where >= 0
        out[where[mine]] = ints(values, absent)[mine]
        return out


@dataclass(frozen=True)
class MemberIndex:
    """The site's member index (card -> `Member.to_index` row) as arrays, and each
    card's row in them."""

    rows_of: dict[bytes, int]
    members: MemberArrays

    @classmethod
    def parse(cls, reply: Flat) -> MemberIndex:
        cards, rows = pairs(reply)
        rows_of = positions(cards)
        return cls(rows_of, MemberArrays.from_rows(cards, rows))

    def of(self, cards: list[bytes]) -> MemberArrays:
        """The members `cards` (a card not in the index was never registered: excluded)."""
        if not self.rows_of:
            return MemberArrays.from_rows(cards, [None] * len(cards))
        rows = rows_in(self.rows_of, cards, -1)
        found = rows >= 0
        return self.members.take(cards, np.where(found, rows, 0), found)


def tied_rows(points: Ints, eligible: Bools) -> tuple[Ints, Ints]:
    """The rows a board places (eligible, with points) and those of them whose total
    another placed member shares (only these need the instant each total was reached)."""
    chosen = np.flatnonzero(eligible & (points > 0))
    _, inverse, counts = np.unique(points[chosen], return_inverse=True, return_counts=True)
    return chosen, chosen[counts[inverse] > 1]


def board_order(cards: Sequence[bytes], chosen: Ints, points: Ints, reached: Ints) -> Ints:
    """The rows `chosen` in board order: points down, then who got there first, then the
    card (bytes of UTF-8 text sort as the text does). The cards are only compared where
    equal totals were reached at the same instant: sorting them costs more than the rest."""
    rows = chosen[np.lexsort((reached[chosen], -points[chosen]))]
    same_total = points[rows][1:] == points[rows][:-1]
    if (same_total & (reached[rows][1:] == reached[rows][:-1])).any():
        names = np.array([cards[n] for n in chosen], np.bytes_)
        rows = chosen[np.lexsort((names, reached[chosen], -points[chosen]))]
    return rows
