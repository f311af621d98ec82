"""The daily digest of the audit trail: an outside anchor for the hash chain.

An insider who can write Redis could rewrite a record and re-hash every record after it;
the chain would verify. What they cannot rewrite is a copy of the chain's head kept
elsewhere: a paper signed by the compliance officer, a file on write-once storage. The
digest of a gaming day is that copy: the site, the day, the seq and chain hash of the
last record before the day closed, the day's record count and first and last record
times, and a short code (the head hash's first 16 hex digits, 4-4-4-4) to compare by eye.

`check_digest` (`DigestChecks`, a batch at a time) re-checks a chain (live, exported or
archived) against a digest kept outside: the chain must be intact and still hold the
digest's record with the digest's hash; a re-hashed chain fails here though it verifies
on its own. The procedure (who signs, where the files go, how an auditor checks) is
docs/anchor.md.

Pure: no I/O. Everything time-dependent takes the instant or the calendar it needs.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bonusd.audit.chain import (
    GENESIS,
    AuditRecord,
    ChainCheck,
    ChainWalk,
    Json,
    utc_text,
    well_formed,
)
from bonusd.clocks.clock import GamingCalendar
from bonusd.errors import AuditFormatError

# a day is anchored this long after it closes: a step decided just before the close and
# committed just after it lands on its own day before the day is summed up
SETTLE = dt.timedelta(minutes=5)
TITLE = "bonusd audit digest"
SIGNATURE = "signed: ______________________________  compliance officer"
_HASH = re.compile(r"^[0-9a-f]{64}$")
# the text block: label -> field, in print order
_LABELS = {
    "site": "site",
    "gaming day": "day",
    "closed": "closes",
    "last seq": "last_seq",
    "head hash": "head_hash",
    "code": "code",
    "records of the day": "records",
    "first record": "first_time",
    "last record": "last_time",
    "chain": "chain",
}
_NONE = "-"
# what a check needs: a digest typed from paper may hold only these lines
_NEEDED = ("site", "day", "last_seq", "head_hash", "code")


def short_code(head_hash: str) -> str:
    """The first 16 hex digits of `head_hash` in groups of four: `9f86-d081-884c-7d65`."""
    return "-".join(head_hash[start : start + 4] for start in range(0, 16, 4))


@dataclass(frozen=True)
class DayDigest:
    """The chain's head at the close of one gaming day of one site."""

    site: str
    day: dt.date
    closes: str  # the instant the day closed, in the records' time format (UTC)
    last_seq: int  # the last record before the close; 0: the chain was empty
    head_hash: str  # that record's chain hash (GENESIS for an empty chain)
    records: int  # records of this gaming day
    first_time: str | None  # the day's first and last record times; None: no record
    last_time: str | None
    chain: str  # the check of the chain up to `last_seq` ("chain intact: N records")

    @property
    def code(self) -> str:
        return short_code(self.head_hash)

    @property
    def intact(self) -> bool:
        return self.chain.startswith("chain intact")

    def payload(self) -> dict[str, Json]:
        """The fields as the trail's `digest` record carries them."""
        return {
            "site": self.site,
            "day": self.day.isoformat(),
            "closes": self.closes,
            "last_seq": self.last_seq,
            "head_hash": self.head_hash,
            "code": self.code,
            "records": self.records,
            "first_time": self.first_time,
            "last_time": self.last_time,
            "chain": self.chain,
        }


def is_finished(calendar: GamingCalendar, day: dt.date, now: dt.datetime) -> bool:
    """Whether gaming day `day` is over and settled (`SETTLE` after its close)."""
    return now >= calendar.day_closes(day) + SETTLE


def last_finished_day(calendar: GamingCalendar, now: dt.datetime) -> dt.date:
    """The latest gaming day that `is_finished` at `now` (every day before it is too)."""
    return calendar.gaming_day(now - SETTLE) - dt.timedelta(days=1)


def not_over(calendar: GamingCalendar, day: dt.date) -> str:
    """Why the digest of `day` cannot be taken yet (for a refusal)."""
    minutes = int(SETTLE.total_seconds() // 60)
    return (
        f"gaming day {day} is not over: a gaming day closes at {calendar.day_start:%H:%M} "
        f"the next morning (local time) and its digest is ready {minutes} minutes later"
    )


def next_anchor_time(calendar: GamingCalendar, now: dt.datetime) -> dt.datetime:
    """The next instant a gaming day becomes finished (its close plus `SETTLE`)."""
    return calendar.day_closes(calendar.gaming_day(now - SETTLE)) + SETTLE


def record_instant(time: str) -> dt.datetime:
    """A record's `time` (`2026-12-12T18:00:00.000000Z`) as an aware datetime."""
    return dt.datetime.strptime(time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)


class DigestFold:
    """The digest of gaming day `day` (`day_digest`) taken from the chain's records given
    in order a batch at a time: a long trail is summed up without holding all of it."""

    def __init__(self, *, site: str, day: dt.date, calendar: GamingCalendar) -> None:
        self.site, self.day = site, day
        self._opens = _time_key(calendar.day_opens(day))
        self._closes = _time_key(calendar.day_closes(day))
        self._walk = ChainWalk()  # over the records before the close
        self._last: AuditRecord | None = None
        self._count = 0
        self._first_time: str | None = None
        self._last_time: str | None = None

    def add(self, records: Iterable[AuditRecord]) -> None:
        # a place that holds no record breaks the walk there, whatever its time says
        upto = [rec for rec in records if not well_formed(rec) or rec.time < self._closes]
        self._walk.add(upto)
        for rec in filter(well_formed, upto):
            self._last = rec
            if rec.time >= self._opens:
                self._count += 1
                self._first_time = self._first_time or rec.time
                self._last_time = rec.time

    def digest(self) -> DayDigest:
        last = self._last
        return DayDigest(
            site=self.site,
            day=self.day,
            closes=self._closes,
            last_seq=last.seq if last else 0,
            head_hash=last.hash if last else GENESIS,
            records=self._count,
            first_time=self._first_time,
            last_time=self._last_time,
            chain=str(self._walk.check),
        )


def day_digest(
    records: Sequence[AuditRecord], *, site: str, day: dt.date, calendar: GamingCalendar
) -> DayDigest:
    """The digest of gaming day `day`, from the chain's records in order (records after
    the day's close may be given too; they are left out)."""
    fold = DigestFold(site=site, day=day, calendar=calendar)
    fold.add(records)
    return fold.digest()


def walked_digest(
    *,
    site: str,
    day: dt.date,
    calendar: GamingCalendar,
    last: AuditRecord | None,
    first: AuditRecord | None,
    records: int,
) -> DayDigest:
    """The digest of gaming day `day` from what a walk of an intact chain knows (what
    `day_digest` gives from the same chain): `last`, the last record before the day's close
    (None: none), `first`, the day's first record (None: none), and the day's count."""
    return DayDigest(
        site=site,
        day=day,
        closes=_time_key(calendar.day_closes(day)),
        last_seq=last.seq if last else 0,
        head_hash=last.hash if last else GENESIS,
        records=records,
        first_time=first.time if first else None,
        last_time=last.time if last and records else None,
        chain=str(ChainCheck(last.seq if last else 0)),
    )


def _time_key(instant: dt.datetime) -> str:
    """`utc_text` with the year in four digits for any year (strftime writes year 500 as
    `500`), so the records' times compare as text with it."""
    utc = instant.astimezone(dt.UTC)
    return f"{utc.year:04d}{utc_text(utc)[len(str(utc.year)) :]}"


def digest_text(digest: DayDigest) -> str:
    """The signable text block: what `bonusd audit digest` prints, the daemon writes to
    the digest folder and `GET /audit/digest` returns as `text`; `read_digest` reads it."""
    values = digest.payload()
    width = max(map(len, _LABELS)) + 2
    lines = [TITLE, ""]
    for label, name in _LABELS.items():
        value = values[name]
        lines.append(f"{label + ':':<{width}}{_NONE if value is None else value}")
    lines += ["", SIGNATURE, "date:   ____________", ""]
    return "\n".join(lines)


def read_digest(text: str, source: str = "digest") -> DayDigest:
    """A digest kept outside: the text block of `digest_text`, or the JSON of
    `GET /audit/digest`. `AuditFormatError` naming `source` and the field at fault when
    it is not one, or its code does not match its head hash (mistyped or edited)."""
    fields: dict[str, Any]
    if text.lstrip().startswith("{"):
        try:
            fields = json.loads(text)
        except ValueError as exc:
            raise AuditFormatError(f"{source}: not a digest ({exc})") from exc
    else:
        fields = {}
        for line in text.split("\n"):
            label, colon, value = line.partition(":")
            name = _LABELS.get(label.strip().lower())
            if colon and name is not None and name not in fields:
                fields[name] = None if value.strip() == _NONE else value.strip()
    return _digest_of(fields, source)


def _digest_of(fields: Mapping[str, Any], source: str) -> DayDigest:
    missing = [label for label, name in _LABELS.items() if name in _NEEDED and name not in fields]
    if missing:
        raise AuditFormatError(f"{source}: not a digest, no {', '.join(missing)}")
    try:
        digest = DayDigest(
            site=str(fields["site"]),
            day=dt.date.fromisoformat(str(fields["day"])),
            closes=str(fields.get("closes") or ""),
            last_seq=int(fields["last_seq"]),
            head_hash=str(fields["head_hash"]),
            records=int(fields.get("records") or 0),
            first_time=_optional(fields.get("first_time")),
            last_time=_optional(fields.get("last_time")),
            chain=str(fields.get("chain") or ""),
        )
    except (TypeError, ValueError) as exc:
        raise AuditFormatError(f"{source}: not a digest ({exc})") from exc
    if not _HASH.match(digest.head_hash) or digest.last_seq < 0:
        raise AuditFormatError(
            f"{source}: the head hash must be 64 hex digits and the seq 0 or more, got "
            f"{digest.head_hash[:80]!r} at seq {digest.last_seq}"
        )
    if str(fields["code"]) != digest.code:
        raise AuditFormatError(
            f"{source}: its code {str(fields['code'])[:40]!r} does not match its head hash "
            f"(code {digest.code}): a mistyped or edited digest"
        )
    return digest


def _optional(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class DigestCheck:
    """A chain checked against a digest kept outside: `ok` when the chain is intact and
    still holds the digest's record with the digest's hash."""

    digest: DayDigest
    found: str | None  # the chain's hash at the digest's seq now; None: no such record
    links: ChainCheck
    first_seq: int = 1  # the first record given (an archive past retention starts later)

    @property
    def ok(self) -> bool:
        return self.links.ok and self.found == self.digest.head_hash

    def __str__(self) -> str:
        digest = self.digest
        about = f"site {digest.site}, gaming day {digest.day}, record {digest.last_seq}"
        if self.found is None:
            where = (
                f"before the first record given ({self.first_seq})"
                if digest.last_seq < self.first_seq
                else "missing: the chain ends before it"
            )
            anchor = f"{about} is {where}; the digest says {digest.head_hash}"
        elif self.found != digest.head_hash:
            anchor = (
                f"{about} was rewritten: the digest says {digest.head_hash}, "
                f"the chain now holds {self.found}"
            )
        else:
            anchor = f"{about} still has the digest's hash {digest.head_hash} (code {digest.code})"
        return f"{anchor}; {self.links}"


class DigestChecks:
    """`check_digest` for several digests in one pass over a chain given in order a batch
    at a time (a season's live trail, or an archive, is checked without holding all of it);
    `anywhere`: the records may start past the chain's first (an archive's oldest months
    deleted past retention), so their links are checked from the first one given."""

    def __init__(self, digests: Sequence[DayDigest], *, anywhere: bool = False) -> None:
        self.digests = list(digests)
        self._walk = ChainWalk(anywhere=anywhere)
        self._wanted = {d.last_seq for d in self.digests}
        self._found: dict[int, str] = {}
        self._first_seq: int | None = None

    def add(self, records: Iterable[AuditRecord]) -> None:
        batch = list(records)
        self._walk.add(batch)
        if batch and self._first_seq is None:
            first = batch[0].seq
            self._first_seq = first if type(first) is int else self._walk.first_seq
        for rec in filter(well_formed, batch):  # each wanted seq's first, as the chain holds it
            if rec.seq in self._wanted and rec.seq not in self._found:
                self._found[rec.seq] = rec.hash

    def checks(self) -> list[DigestCheck]:
        links = self._walk.check
        first_seq = 1 if self._first_seq is None else self._first_seq
        out = []
        for digest in self.digests:
            # a chain empty at the close: nothing to have rewritten
            found = GENESIS if digest.last_seq == 0 else self._found.get(digest.last_seq)
            out.append(DigestCheck(digest, found, links, first_seq))
        return out


def check_digest(
    records: Sequence[AuditRecord], digest: DayDigest, *, anywhere: bool = False
) -> DigestCheck:
    """Check `records` (a whole chain, or with `anywhere` an archive's) against `digest`."""
    checks = DigestChecks([digest], anywhere=anywhere)
    checks.add(records)
    return checks.checks()[0]
