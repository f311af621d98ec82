"""What a daemon has checked of its audit trail (`CheckedTrail`): the chain walked once, as
records arrive, with each record's hash kept (16 bytes) and where each draw's records, each
kind's records and each rule change sit in the trail. A desk's read of one draw, of a page
of the trail or of the rule changes then reads only those records from Redis, and holds
each to the hash kept for its place (`holds`): a record changed in Redis after it was
checked is caught when it is read, whatever the whole walk said. No I/O here: the reads
are `bonusd.audit.reads`.

Positions are the trail's list indexes (seq n sits at n - 1 while the chain is intact).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from bonusd.audit.chain import AuditRecord, ChainCheck, ChainWalk, Kind, record_hash

HASH_KEPT = 16  # bytes of each record's hash kept: 20,000 records hold 320 KB
REWRITTEN = "the record is not the one this daemon checked at its place before (rewritten)"


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
        # the trail as checked before this walk of it: a record it held that this walk
        # finds different was rewritten since (whatever the chain says on its own)
        self._before = bytes(before._hashes) if before is not None else b""
        self.rewritten: Changed | None = None
        self._hashes: bytearray = bytearray()
        self._draws: dict[str, array[int]] = {}
        self._kinds: dict[str, array[int]] = {}

    @property
    def count(self) -> int:
        return self.walk.count

    @property
    def check(self) -> ChainCheck:
        """The walk's check, or the first record rewritten since the walk before."""
        walked = self.walk.check
        if self.rewritten is None or (not walked.ok and walked.checked <= self.rewritten.position):
            return walked
        return self.rewritten.check()

    def add(self, batch: Sequence[AuditRecord]) -> None:
        """The next records of the trail, in order."""
        start = self.walk.count
        self.walk.add(batch)
        for position, rec in enumerate(batch, start):
            kept, at = _kept(rec.hash), position * HASH_KEPT
            if self.rewritten is None and self._before[at : at + HASH_KEPT] not in (b"", kept):
                self.rewritten = Changed(position, REWRITTEN)
            self._hashes += kept
            self._kinds.setdefault(rec.kind, array("L")).append(position)
            draw = rec.payload.get("draw_id") if isinstance(rec.payload, dict) else None
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

    def holds(self, position: int, rec: AuditRecord) -> Changed | None:
        """None when `rec`, read back from `position`, is the record checked there: its
        seq, its hash over its content, and that hash the one kept; else what is off."""
        if not 0 <= position < self.count:
            return Changed(position, "the record was not checked yet")
        if rec.seq != position + 1 and self.check.ok:
            return Changed(position, f"seq is {rec.seq} at place {position + 1}")
        if record_hash(rec.body()) != rec.hash:
            return Changed(position, "hash does not match the record's content (modified)")
        at = position * HASH_KEPT
        if self._hashes[at : at + HASH_KEPT] != _kept(rec.hash):
            return Changed(position, "the record changed in Redis after it was checked")
        return None


def _kept(hash_hex: str) -> bytes:
    """The part of a record's hash kept (a hash that is not hex keeps zeros: it fails)."""
    try:
        return bytes.fromhex(hash_hex)[:HASH_KEPT].ljust(HASH_KEPT, b"\0")
    except ValueError:
        return bytes(HASH_KEPT)
