"""What a daemon has checked of its audit trail (`CheckedTrail`): the chain walked once, as
records arrive, with each record's hash (16 bytes) and time kept, and where each draw's
records, each kind's records and each rule change sit in the trail (about 40 bytes a
record). A desk's read of one draw, of a page
of the trail or of the rule changes then reads only those records from Redis, and holds
each to the hash kept for its place (`holds`): a record changed in Redis after it was
checked is caught when it is read, whatever the whole walk said. No I/O here: the reads
are `bonusd.audit.reads`.

Positions are the trail's list indexes (seq n sits at n - 1 while the chain is intact).
"""

from __future__ import annotations

import datetime as dt
import re
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from bonusd.audit.chain import (
    UNREADABLE,
    AuditRecord,
    ChainCheck,
    ChainWalk,
    Kind,
    content_hash,
    from_jsonl,
    well_formed,
)
from bonusd.errors import AuditFormatError

HASH_KEPT = 16  # bytes of each record's hash kept: 20,000 records hold 320 KB
REWRITTEN = "the record is not the one this daemon checked at its place before (rewritten)"
UNREADABLE_WHY = "the record is gone from Redis, or is not a record"


def readable(row: str | None, position: int) -> AuditRecord:
    """The record a row of the trail holds, or `UNREADABLE`: no row, not one JSON record,
    or a field of the wrong type (a bool is no seq)."""
    if row is None:
        return UNREADABLE
    try:
        recs = from_jsonl(row, first_line=position + 1)
    except AuditFormatError:
        return UNREADABLE
    if len(recs) != 1:
        return UNREADABLE
    rec = recs[0]
    if not well_formed(rec):
        return UNREADABLE
    # an escape (`\ud800`) may hold a lone surrogate: no page or report could show it
    if "\\u" in row and content_hash(rec) is None:
        return UNREADABLE
    return rec


@dataclass(frozen=True)
class Changed:
    """A record read back that is not the one checked at its place."""

    position: int
    reason: str

    def check(self) -> ChainCheck:
        """As a chain check: broken at the record's seq."""
        return ChainCheck(self.position, self.position + 1, self.reason)


class CheckedTrail:
    """The trail's records checked so far, given in order (`add`), a batch at a time."""

    def __init__(self, before: CheckedTrail | None = None) -> None:
        self.walk = ChainWalk()
        self.tip = ""  # the hash of the last record given ("" before any)
        self._hashes: bytearray = bytearray()
        # the trail as checked before this walk of it: a record it held that this walk finds
        # different was rewritten since, whatever the chain says on its own; found once, it
        # is kept by every walk after it (until the daemon restarts)
        self._before = bytes(before._hashes) if before is not None else b""
        self.rewritten: Changed | None = before.rewritten if before is not None else None
        self.unreadable: Changed | None = None  # the first place that holds no record
        self._draws: dict[str, array[int]] = {}
        self._kinds: dict[str, array[int]] = {}
        self._times = array("q")  # each record's time, microseconds since 1970 (UTC)
        self._timed = True  # every record's time in the documented form

    @property
    def count(self) -> int:
        return self.walk.count

    @property
    def check(self) -> ChainCheck:
        """The walk's check, or the first place found unreadable or rewritten when earlier
        (or the same: its reason is the more precise)."""
        walked = self.walk.check
        faults = [c for c in (self.unreadable, self.rewritten) if c is not None]
        first = min(faults, key=lambda c: c.position, default=None)
        if first is None or (not walked.ok and walked.checked < first.position):
            return walked
        return first.check()

    def add(self, batch: Sequence[AuditRecord]) -> None:
        """The next records of the trail, in order (`UNREADABLE` for a place that holds
        none: `readable`)."""
        start = self.walk.count
        self.walk.add(batch)
        for position, rec in enumerate(batch, start):
            kept, at = _kept(rec.hash), position * HASH_KEPT
            self._hashes += kept
            micros = _micros(rec.time)
            self._timed = self._timed and micros is not None
            self._times.append(-1 if micros is None else micros)
            if rec is UNREADABLE:
                self.unreadable = self.unreadable or Changed(position, UNREADABLE_WHY)
                continue
            if self.rewritten is None and self._before[at : at + HASH_KEPT] not in (b"", kept):
                self.rewritten = Changed(position, REWRITTEN)
            self._kinds.setdefault(rec.kind, array("L")).append(position)
            draw = rec.payload.get("draw_id")
            if draw is not None:
                self._draws.setdefault(str(draw), array("L")).append(position)
        if batch:
            self.tip = batch[-1].hash

    def of_draw(self, draw_id: str) -> list[int]:
        """The positions of `draw_id`'s records and of every rule change (promotion-wide,
        in every draw's report and evidence), in trail order."""
        mine = self._draws.get(draw_id, array("L"))
        return sorted([*mine, *self.of_kind(Kind.RULE_CHANGE)])

    def of_kind(self, kind: str) -> array[int]:
        """The positions of the records of `kind`, in trail order."""
        return self._kinds.get(kind, array("L"))

    def span(self, opens: dt.datetime, closes: dt.datetime) -> tuple[int, int] | None:
        """(The place of the first record at or after `opens`, the number of records before
        `closes`) while the chain is intact and every time in form (times then never
        decrease), else None."""
        if not (self._timed and self.check.ok):
            return None
        end = bisect_left(self._times, _instant_micros(closes))
        return min(bisect_left(self._times, _instant_micros(opens)), end), end

    def holds(self, position: int, rec: AuditRecord) -> Changed | None:
        """None when `rec`, read back from `position`, is the record checked there: its
        seq (while the chain is intact), its hash over its content, and that hash the one
        kept; else what is off."""
        if rec is UNREADABLE:
            return Changed(position, UNREADABLE_WHY)
        if not 0 <= position < self.count:
            return Changed(position, "the record was not checked yet")
        if rec.seq != position + 1 and self.check.ok:
            return Changed(position, f"seq is {rec.seq} at place {position + 1}")
        if content_hash(rec) != rec.hash:
            return Changed(position, "hash does not match the record's content (modified)")
        at = position * HASH_KEPT
        if self._hashes[at : at + HASH_KEPT] != _kept(rec.hash):
            return Changed(position, "the record changed in Redis after it was checked")
        return None


_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
_EPOCH = dt.datetime(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)


def _micros(time: str) -> int | None:
    """A record's `time` (`2026-12-12T18:00:00.000000Z`) in microseconds since 1970, or None
    when it is not in exactly that form (then its order as text is its order in time)."""
    if not _TIME.fullmatch(time):
        return None
    try:
        return (dt.datetime.fromisoformat(time[:26]) - _EPOCH) // _MICRO
    except ValueError:
        return None


def _instant_micros(instant: dt.datetime) -> int:
    return (instant.astimezone(dt.UTC).replace(tzinfo=None) - _EPOCH) // _MICRO


def _kept(hash_hex: str) -> bytes:
    """The part of a record's hash kept (a hash that is not hex keeps zeros: it fails)."""
    try:
        return bytes.fromhex(hash_hex)[:HASH_KEPT].ljust(HASH_KEPT, b"\0")
    except ValueError:
        return bytes(HASH_KEPT)
