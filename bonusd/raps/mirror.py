"""The live floor a daemon keeps in memory for RAPS picks: a mirror of the ingest's
`floor-row` index (one line per carded-in card, `bonusd/infra/keys.py`), so that a jackpot
pick reads only what changed since the mirror last looked, and judges columns checked once per row
when the row arrived, instead of reading and checking 20,000 lines at every pick.

Every script that writes `floor-row` also logs which cards' rows it changed, under a
sequence number (`lua/rowlog.lua`). `sync` is one atomic script call (`lua/floor_sync.lua`)
returning the rows changed since the sequence the mirror holds, or all of them when the
mirror holds nothing or is older than the log keeps. After a sync the mirror is exactly
`floor-row` as Redis held it at that instant: what a pick's snapshot must be.

The mirror is rebuilt from a full read whenever it may have drifted: Redis's sequence
went backwards (emptied or restored), the row count differs from Redis's (a write that
bypassed the log), a row is not in the documented form, or a Redis call failed. `follow`
keeps it current in the background so a pick's own sync carries a fraction of a second
of changes.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from redis.asyncio import Redis

from bonusd.draws.fairness import check_cards
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.raps.columns import Codes, FloorColumns, Objects
from bonusd.raps.floordelta import FloorDelta
from bonusd.raps.snapshot import (
    AREA,
    EXCLUDED,
    KIND,
    LAST,
    SPEND,
    TIER,
    WIDTH,
    FloorSnapshot,
    SnapshotError,
    instant_ms,
)
from bonusd.raps.table import FieldError, FieldTable

logger = logging.getLogger(__name__)

COLUMN_NAMES = ("_excluded", "_last", "_spend", "_area", "_tier", "_day")
DELTA_AT_LEAST = 4_096  # a difference of up to this many cards is always worth archiving
DAY = WIDTH  # the floor-row line's last field: the gaming day its spend is of
REBUILD = "rebuild it with `bonusd floor reindex`"


@dataclass
class Base:
    """A whole snapshot archived for a jackpot, which its pick's floor is written against."""

    tag: str  # the jackpot id it was archived for
    day: str  # the gaming day its spends are of
    sha256: str
    cards: frozenset[str]  # the cards it holds
    ready: bool = False  # archived in Redis (`confirm`)


def _checked_rows(cards: Sequence[str], rows: Sequence[str]) -> FieldTable:
    """The `floor-row` lines of `cards` as a table, each checked against the form."""
    try:
        table = FieldTable.of(("\n".join(rows) + "\n").encode(), WIDTH + 1)
    except FieldError:
        raise SnapshotError(f"floor-row has a line of the wrong form; {REBUILD}") from None
    if table.has_nul:
        raise SnapshotError(f"floor-row holds a NUL byte; {REBUILD}")
    if not (table.equals(KIND, b"egm") | table.equals(KIND, b"table")).all():
        raise SnapshotError(f"floor-row has a kind other than egm or table; {REBUILD}")
    if not (table.equals(EXCLUDED, b"0") | table.equals(EXCLUDED, b"1")).all():
        raise SnapshotError(f"floor-row has an excluded flag other than 0 or 1; {REBUILD}")
    if table.integers(LAST) is None or table.integers(SPEND) is None:
        raise SnapshotError(f"floor-row has a last play or spend that is not digits; {REBUILD}")
    if not all(r.startswith(c + "\t") for c, r in zip(cards, rows, strict=True)):
        raise SnapshotError(f"floor-row has a line of another card than its own; {REBUILD}")
    try:
        check_cards(cards)  # what a pick's pool vouches for (`Pool(..., ordered=True)`)
    except ValueError:
        raise SnapshotError(
            f"floor-row has a card that is empty or holds a space, ':' or '='; {REBUILD}"
        ) from None
    return table


def _codes(fields: FieldTable, col: int, table: dict[bytes, int]) -> Codes:
    """The column's values as codes of `table` (new values get new codes)."""
    values, where = np.unique(fields.fixed(col), return_inverse=True)
    codes = np.array([table.setdefault(bytes(v), len(table)) for v in values], dtype=np.int32)
    got: Codes = codes[where.ravel()]
    return got


class FloorMirror:
    """One site's `floor-row` in memory, as checked columns (one slot per card)."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis, self.keys = redis, keys
        text = resources.files("bonusd").joinpath("lua", "floor_sync.lua").read_text("utf-8")
        self._script = redis.register_script(text)
        self._lock = asyncio.Lock()  # one sync at a time: deltas apply in order
        self._damaged = ""  # the last form error `follow` logged
        self.full_reads = 0  # how many syncs read floor-row whole (for tests and metrics)
        self._clear()

    def _clear(self) -> None:
        self.seq: int | None = None  # the floor-row-seq the mirror holds; None: nothing
        self._slot: dict[str, int] = {}  # card -> its slot (slots are 0 to size - 1)
        self._cards: list[str] = []  # per slot
        self._lines: list[str] = []  # per slot: the snapshot line of the row's own day
        # the cards on the floor in code-point order (an array a snapshot shares: each
        # change makes a new one, never changed in place)
        self._sorted: Objects = np.empty(0, dtype=object)
        self._order = np.zeros(0, dtype=np.int64)  # their slots, in that order
        self._areas: dict[bytes, int] = {}
        self._tiers: dict[bytes, int] = {}
        self._days: dict[bytes, int] = {}
        self._excluded = np.zeros(0, dtype=np.bool_)
        self._last = np.zeros(0, dtype=np.int64)
        self._spend = np.zeros(0, dtype=np.int64)
        self._area = np.zeros(0, dtype=np.int32)
        self._tier = np.zeros(0, dtype=np.int32)
        self._day = np.zeros(0, dtype=np.int32)
        self._base: Base | None = None  # the whole snapshot a pick's difference is from
        self._since: set[str] = set()  # cards whose rows changed or left since that base
        self._shared = False  # a snapshot holds the lists and columns: copy before changing

    def _own(self) -> None:
        """Copy what the last snapshot shares before changing it (copy on write: a pick
        takes the floor without copying 20,000 rows; the next sync copies them)."""
        if not self._shared:
            return
        self._cards, self._lines = self._cards[:], self._lines[:]
        self._order = self._order.copy()
        for name in COLUMN_NAMES:
            setattr(self, name, getattr(self, name).copy())
        self._shared = False

    @property
    def size(self) -> int:
        """How many cards are on the floor, as of the last sync."""
        return len(self._slot)

    # -- catching up ------------------------------------------------------------------------
    async def sync(self) -> None:
        """Bring the mirror up to `floor-row` as Redis holds it now (one script call, two
        when the mirror turns out to have drifted and is read whole)."""
        async with self._lock:
            for _ in range(2):
                have = "" if self.seq is None else str(self.seq)
                try:
                    args = [self.keys.base, have]
                    reply = await self._script(keys=[self.keys.floor_row], args=args)
                except REDIS_ERRORS:
                    self._clear()  # a Redis that restarted may hold another floor
                    raise
                try:
                    if self._take(reply):
                        return
                except SnapshotError:
                    self._clear()
                    raise
                logger.warning(
                    "the RAPS floor mirror held %d cards where Redis holds %s: floor-row was "
                    "changed without its change log; reading it whole",
                    self.size,
                    reply[2],
                )
                self._clear()
            raise SnapshotError("floor-row keeps changing without its change log; " + REBUILD)

    def _take(self, reply: list[Any]) -> bool:
        """Apply a sync reply; False when the mirror then differs from Redis in size."""
        kind, seq, size = reply[0], int(reply[1]), int(reply[2])
        if kind == "full":
            self._clear()
            self.full_reads += 1
            flat = reply[3]
            self._apply(flat[0::2], flat[1::2])
        elif seq != self.seq:
            self._apply(reply[3], reply[4])
        self.seq = seq
        return self.size == size

    def _apply(self, cards: Sequence[str], rows: Sequence[str | None]) -> None:
        self._own()
        if self._base is not None:
            self._since.update(cards)
        written = [(c, r) for c, r in zip(cards, rows, strict=True) if r is not None]
        left = [c for c, r in zip(cards, rows, strict=True) if r is None and c in self._slot]
        moved = [self._drop(card) for card in left]
        table = _checked_rows([c for c, _ in written], [r for _, r in written]) if written else None
        joined = [c for c, _ in written if c not in self._slot]
        slots = np.fromiter((self._take_slot(c) for c, _ in written), np.int64, len(written))
        self._reorder(left, joined, [c for c in moved if c in self._slot])
        if table is None:
            return
        self._reserve(len(self._cards))
        self._excluded[slots] = table.equals(EXCLUDED, b"1")
        last, spend = table.integers(LAST), table.integers(SPEND)
        assert last is not None
        assert spend is not None
        self._last[slots] = last
        self._spend[slots] = spend
        self._area[slots] = _codes(table, AREA, self._areas)
        self._tier[slots] = _codes(table, TIER, self._tiers)
        self._day[slots] = _codes(table, DAY, self._days)
        for slot, (card, row) in zip(slots.tolist(), written, strict=True):
            self._cards[slot] = card
            self._lines[slot] = row[: row.rindex("\t")] + "\n"  # the snapshot line: without the day

    def _drop(self, card: str) -> str:
        """Free `card`'s slot by moving the last slot's card into it (the slots stay 0 to
        size - 1, so a snapshot copies them whole); returns the card moved, or ""."""
        slot, last = self._slot.pop(card), len(self._cards) - 1
        moved = ""
        if slot != last:
            moved = self._cards[slot] = self._cards[last]
            self._lines[slot] = self._lines[last]
            self._slot[moved] = slot
            for name in COLUMN_NAMES:
                col = getattr(self, name)
                col[slot] = col[last]
        self._cards.pop()
        self._lines.pop()
        return moved

    def _reorder(self, left: list[str], joined: list[str], moved: list[str]) -> None:
        """Keep the cards in code-point order as they leave, move slot and join (a pick's
        pool is in that order: sorting 20,000 cards at every pick is what this saves)."""
        if len(joined) + len(left) > len(self._sorted) // 4:  # a full read, or most of one
            self._sorted = np.array(sorted(self._slot), dtype=object)
            self._order = np.fromiter(map(self._slot.__getitem__, self._sorted), np.int64)
            return
        if left:
            at = [bisect.bisect_left(self._sorted, c) for c in left]
            self._sorted = np.delete(self._sorted, at)
            self._order = np.delete(self._order, at)
        for card in moved:
            self._order[bisect.bisect_left(self._sorted, card)] = self._slot[card]
        if joined:
            joined.sort()
            at = [bisect.bisect_left(self._sorted, c) for c in joined]
            self._order = np.insert(self._order, at, [self._slot[c] for c in joined])
            self._sorted = np.insert(self._sorted, at, np.array(joined, dtype=object))

    def _take_slot(self, card: str) -> int:
        slot = self._slot.get(card)
        if slot is None:
            slot = self._slot[card] = len(self._cards)
            self._cards.append("")
            self._lines.append("")
        return slot

    def _reserve(self, count: int) -> None:
        """Room in every column for `count` slots (grown by doubling)."""
        have = len(self._excluded)
        if count <= have:
            return
        more = max(count, 2 * have, 1024) - have
        for name in COLUMN_NAMES:
            col = getattr(self, name)
            setattr(self, name, np.concatenate([col, np.zeros(more, dtype=col.dtype)]))

    async def follow(
        self,
        stop: asyncio.Event,
        every_s: float | Callable[[], float],
        wanted: Callable[[], bool] = lambda: True,
    ) -> None:
        """Sync every `every_s` seconds (or as often as it says each time, when callable)
        until `stop`, so a pick finds the mirror current, while `wanted()` (a site with no
        RAPS session leaves the floor alone). Failures are logged and retried: a pick's own
        sync reports them to its caller."""
        interval = every_s if callable(every_s) else lambda: every_s
        while not stop.is_set():
            try:
                if wanted():
                    await self.sync()
                self._damaged = ""
            except REDIS_ERRORS as exc:
                logger.debug("RAPS floor mirror: Redis unavailable (%s); will read whole", exc)
            except SnapshotError as exc:
                if str(exc) != self._damaged:
                    logger.error("RAPS floor mirror: %s", exc)
                    self._damaged = str(exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval())

    # -- the snapshot -----------------------------------------------------------------------
    async def snapshot(self, at: dt.datetime, day: str, tag: str = "") -> FloorSnapshot:
        """The floor now, as the snapshot a jackpot at `at` on gaming day `day` is judged
        from: its file made from the mirrored lines, with the checked columns beside it
        (a difference from the base of `tag`, when there is one: `view`)."""
        await self.sync()
        return self.view(at, day, tag)

    def view(self, at: dt.datetime, day: str, tag: str = "") -> FloorSnapshot:
        """The snapshot of the mirror as it is (no sync): a row of another gaming day than
        `day` has spent nothing on it (its spend is 0 in the file and the columns). With
        the `tag` of a confirmed base of the same day (`checkpoint`), archived as the
        difference from that base (docs/fairness.md section 10, form 2)."""
        size = len(self._cards)
        self._shared = True  # the snapshot takes the mirror's own lists and columns
        other_day = self._day[:size] != self._days.get(day.encode(), -1)
        spend, lines = self._spend[:size], self._lines
        if other_day.any():
            spend, lines = spend.copy(), lines[:]
            spend[other_day] = 0
            for slot in np.flatnonzero(other_day).tolist():
                fields = lines[slot].split("\t")
                fields[SPEND] = "0"
                lines[slot] = "\t".join(fields)
        columns = FloorColumns(
            cards=self._cards,
            order=self._order,
            sorted_cards=self._sorted,
            area=self._area[:size],
            tier=self._tier[:size],
            last_play_ms=self._last[:size],
            spend_cents=spend,
            excluded=self._excluded[:size],
            areas=self._areas,
            tiers=self._tiers,
        )
        delta = self._delta(lines, day, tag) if tag else None
        return FloorSnapshot(instant_ms(at), lines, checked=columns, delta=delta)

    def _delta(self, lines: list[str], day: str, tag: str) -> FloorDelta | None:
        """The difference of the floor now (`lines`, per slot) from the confirmed base of
        `tag`, or None (no such base, another day, or most of the floor changed since)."""
        base = self._base
        if base is None or not base.ready or base.tag != tag or base.day != day:
            return None
        if len(self._since) > max(DELTA_AT_LEAST, self.size // 4):
            return None
        out = []
        for card in sorted(self._since):
            slot = self._slot.get(card)
            if slot is not None:
                out.append(lines[slot])
            elif card in base.cards:
                out.append(card + "\n")  # left the floor since the base
        return FloorDelta(base.sha256, "".join(out))

    def checkpoint(self, tag: str, at: dt.datetime, day: str) -> FloorSnapshot:
        """The whole snapshot now, as the base of later differences for `tag` (a jackpot
        id) on gaming day `day`: usable once archived and `confirm`ed. Changes count from
        here."""
        snap = self.view(at, day)
        self._base = Base(tag, day, snap.sha256, frozenset(self._slot))
        self._since = set()
        return snap

    def confirm(self, tag: str, sha256: str) -> bool:
        """The base `checkpoint` made for `tag` is archived: picks may use it. False when
        the mirror dropped it since (a full read, a release, a newer base)."""
        base = self._base
        if base is None or (base.tag, base.sha256) != (tag, sha256):
            return False
        base.ready = True
        return True

    def release(self) -> bool:
        """Free the copy's memory while no pick needs it soon: the next sync reads floor-row
        whole. False, leaving it as it is, while a sync is running."""
        if self._lock.locked():
            return False
        self._clear()
        return True
