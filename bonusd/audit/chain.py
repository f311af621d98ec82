"""The append-only, hash-chained audit log, and what an auditor does with it.

Every draw and selection step leaves a record: seq (1, 2, ...), time (UTC), actor, kind,
payload, the previous record's hash and its own hash, the SHA-256 of the canonical JSON
of the record without its hash. Changing, removing or reordering any record breaks the
chain from that point on, and `verify_chain` names the first broken link. Records are
exchanged as JSON Lines, one canonical record per line.

Generic: nothing here knows a draw. What a draw's records carry, the evidence an
auditor rebuilds from them and the GLI-31-style draw report are in
`bonusd.draws.evidence` (docs/fairness.md lists the payloads).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bonusd.errors import AuditFormatError

GENESIS = "0" * 64
Json = Any  # None | bool | int | str | list[Json] | dict[str, Json]; never a float


class Kind(StrEnum):
    COMMITMENT = "commitment"
    POOL = "pool"
    PICK = "pick"
    REDRAW = "redraw"
    CLAIM = "claim"
    PROXY = "proxy"
    LETTER = "letter"
    SEED_REVEAL = "seed_reveal"
    EXCLUSION = "exclusion"
    SEAT = "seat"
    RULE_CHANGE = "rule_change"
    OVERRIDE = "override"
    PRIZES = "prizes"  # a round's prize set loaded (the reveals are shuffled from it)
    DECLINE = "decline"  # a member signed a RAPS session's decline register
    EXCEPTION = "exception"  # something the floor must know: an empty pool, no alternate left
    DIGEST = "digest"  # a finished gaming day's chain head, also kept outside (audit.digest)
    REQUEST = "request"  # a four-eyes change asked for, with its reason (draws/approvals.py)
    APPROVAL = "approval"  # a second staff member's decision on a request
    RECEIPT_CHECK = "receipt_check"  # a winner's ticket receipt checked at the claim (kiosk)
    STAFF = "staff"  # a staff account added, disabled, enabled or its PIN reset (never the PIN)
    PIN_UNLOCK = "pin_unlock"  # the desk lifted a card's kiosk PIN lock, with its reason


def _check_json(value: Json, where: str = "payload") -> None:
    if isinstance(value, float):
        raise TypeError(f"{where}: floats are not allowed in audit records (use cents)")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: keys must be strings, got {key!r}")
            _check_json(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]")
    elif value is not None and not isinstance(value, bool | int | str):
        raise TypeError(f"{where}: {type(value).__name__} is not JSON")


def canonical_json(value: Json) -> bytes:
    """Sorted keys, no spaces, UTF-8 (not \\u-escaped), integers only."""
    _check_json(value)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode()


def utc_text(instant: dt.datetime) -> str:
    """The record time format: UTC, microseconds, `Z` (e.g. 2026-12-12T18:00:00.000000Z)."""
    if instant.tzinfo is None:
        raise ValueError("audit times must be timezone-aware")
    return instant.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Entry:
    """A record to be: what happened, by whom, when."""

    at: dt.datetime
    actor: str
    kind: Kind
    payload: dict[str, Json]


@dataclass(frozen=True)
class AuditRecord:
    seq: int
    time: str
    actor: str
    kind: str
    payload: dict[str, Json]
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Json]:
        """The record without its hash: what the hash is computed over."""
        return {name: getattr(self, name) for name in _BODY}

    def to_json(self) -> str:
        return canonical_json({**self.body(), "hash": self.hash}).decode()


_BODY = ("seq", "time", "actor", "kind", "payload", "prev_hash")


def record_hash(body: Mapping[str, Json]) -> str:
    return hashlib.sha256(canonical_json(dict(body))).hexdigest()


_TYPES = (int, str, str, str, dict, str, str)  # seq, time, actor, kind, payload, prev_hash, hash
NOT_A_RECORD = (
    "not a record: a field of the wrong type (a payload not an object, a seq not a number)"
)


UNREADABLE = AuditRecord(0, "", "", "", {}, "", "")
"""What a place of a trail read back leniently holds when it holds no record (gone, not
JSON, a field missing or of the wrong type): no record (`well_formed` is False)."""


def well_formed(rec: AuditRecord) -> bool:
    """Whether `rec` is a record: each of its fields of its type (a JSON object for
    `payload`; a bool is no `seq`); one read back from a tampered store may not be."""
    fields = (rec.seq, rec.time, rec.actor, rec.kind, rec.payload, rec.prev_hash, rec.hash)
    return (
        rec is not UNREADABLE
        and not isinstance(rec.seq, bool)
        and all(map(isinstance, fields, _TYPES))
    )


def content_hash(rec: AuditRecord) -> str | None:
    """The hash of `rec`'s content, or None when it holds what canonical JSON cannot (a
    float, a lone surrogate: read back from a tampered store, never written)."""
    try:
        return record_hash(rec.body())
    except (TypeError, ValueError):
        return None


class AuditLog:
    """Builds records onto a chain; `records` may resume an existing, verified chain."""

    def __init__(self, records: Sequence[AuditRecord] = ()) -> None:
        check = verify_chain(records)
        if not check.ok:
            raise AuditFormatError(f"cannot resume a broken audit chain: {check}")
        self.records = list(records)

    @property
    def head(self) -> str:
        return self.records[-1].hash if self.records else GENESIS

    def append(
        self, *, at: dt.datetime, actor: str, kind: Kind, payload: dict[str, Json]
    ) -> AuditRecord:
        last = self.records[-1] if self.records else None
        rec = next_record(last, at=at, actor=actor, kind=kind, payload=payload)
        self.records.append(rec)
        return rec


def next_record(
    last: AuditRecord | None,
    *,
    at: dt.datetime,
    actor: str,
    kind: Kind,
    payload: dict[str, Json],
) -> AuditRecord:
    """The record that follows `last` (None: the first record of a chain)."""
    seq = last.seq + 1 if last else 1
    values = (seq, utc_text(at), actor, str(kind), payload, last.hash if last else GENESIS)
    rec = AuditRecord(*values, record_hash(dict(zip(_BODY, values, strict=True))))
    if last and rec.time < last.time:
        raise ValueError(f"audit record {seq} at {rec.time} is older than its predecessor")
    return rec


@dataclass(frozen=True)
class ChainCheck:
    checked: int
    broken_at: int | None = None  # seq of the first bad record
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.broken_at is None

    def __str__(self) -> str:
        if self.ok:
            return f"chain intact: {self.checked} records"
        return f"chain broken at record {self.broken_at}: {self.reason}"


class ChainWalk:
    """`verify_chain` in pieces: the records given in order, a batch at a time, so a long
    trail is checked without holding all of it; `check` is what `verify_chain` of every
    record given so far says. `anywhere`: the chain may start past its first record (an
    archive whose oldest months were deleted past retention), so the first record given
    is taken as it is, but for seq 1, which must start from the genesis hash."""

    def __init__(self, *, anywhere: bool = False) -> None:
        self.count = 0  # records given so far
        self.first_seq = 1  # as the first record given says, when `anywhere`
        self._anywhere = anywhere
        self._prev, self._last_time = GENESIS, ""
        self._broken: ChainCheck | None = None

    def add(self, records: Iterable[AuditRecord]) -> None:
        for rec in records:
            self.count += 1
            if self._broken is None:
                self._broken = self._link(rec)

    def _link(self, rec: AuditRecord) -> ChainCheck | None:
        if self.count == 1 and self._anywhere and type(rec.seq) is int:
            self.first_seq = rec.seq  # where an archive starts, even from a bad record
        if not well_formed(rec):
            index = self.count - 1
            return ChainCheck(index, self.first_seq + index, NOT_A_RECORD)
        if self.count == 1 and self._anywhere:
            self.first_seq = rec.seq
            self._prev = GENESIS if rec.seq == 1 else rec.prev_hash
        index, expected_seq = self.count - 1, self.first_seq + self.count - 1
        if rec.seq != expected_seq:
            why = f"seq is {rec.seq}, expected {expected_seq} (record missing or moved)"
            return ChainCheck(index, expected_seq, why)
        if rec.prev_hash != self._prev:
            why = "prev_hash does not match the previous record's hash"
            if self.count == 1:
                why = "the first record does not start from the genesis hash"
            return ChainCheck(index, expected_seq, why)
        if content_hash(rec) != rec.hash:
            why = "hash does not match the record's content (modified)"
            return ChainCheck(index, expected_seq, why)
        if rec.time < self._last_time:
            why = f"time {rec.time} is before the previous record's"
            return ChainCheck(index, expected_seq, why)
        self._prev, self._last_time = rec.hash, rec.time
        return None

    @property
    def check(self) -> ChainCheck:
        return self._broken or ChainCheck(self.count)


def verify_chain(records: Iterable[AuditRecord]) -> ChainCheck:
    """Check seq numbers, links, hashes and time order; report the first broken link."""
    walk = ChainWalk()
    walk.add(records)
    return walk.check


class Picked:
    """The records of one draw (or RAPS jackpot) picked out of a whole trail given a batch
    at a time (`add`), its chain checked on the way, so a draw's check or report never
    holds the months of trail around it. Kept: every record whose `draw_id` is `ref`, or
    ends in `.ref` when `suffix` (a short id, resolved once the trail is read), and every
    rule change (promotion-wide, in every draw's report); `ids` is every draw id seen."""

    def __init__(self, ref: str, *, suffix: bool = False) -> None:
        self.ref, self._tail = ref, f".{ref}" if suffix else None
        self.walk = ChainWalk()
        self.ids: set[str] = set()
        self.kept: list[AuditRecord] = []

    def add(self, batch: Sequence[AuditRecord]) -> None:
        self.walk.add(batch)
        for rec in batch:
            draw = rec.payload.get("draw_id")
            if draw is not None:
                self.ids.add(draw := str(draw))
                if draw == self.ref or (self._tail is not None and draw.endswith(self._tail)):
                    self.kept.append(rec)
                    continue
            if rec.kind == Kind.RULE_CHANGE:
                self.kept.append(rec)

    def of(self, draw_id: str) -> list[AuditRecord]:
        """The records kept of `draw_id` (one of `ids`), with the rule changes."""
        return [
            r
            for r in self.kept
            if r.kind == Kind.RULE_CHANGE or r.payload.get("draw_id") == draw_id
        ]


def to_jsonl(records: Sequence[AuditRecord]) -> str:
    return "".join(rec.to_json() + "\n" for rec in records)


def from_jsonl(text: str, *, first_line: int = 1) -> list[AuditRecord]:
    """Parse a JSON Lines export (no verification: call `verify_chain`); `first_line`:
    the number of its first line in the file it was read from, for the error."""
    out: list[AuditRecord] = []
    # records end with "\n" only: `splitlines` would also cut a record inside a string at
    # U+2028, U+2029 or U+0085, which canonical JSON keeps unescaped (a note, a name)
    for line_no, line in enumerate(text.split("\n"), first_line):
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
            out.append(AuditRecord(**{name: fields[name] for name in (*_BODY, "hash")}))
        except (ValueError, KeyError, TypeError) as exc:
            raise AuditFormatError(f"audit export line {line_no}: {exc!r}") from exc
    return out


# -- payloads --------------------------------------------------------------------------
