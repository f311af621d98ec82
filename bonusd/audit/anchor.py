"""The daily anchor's Redis and file side: each finished gaming day's digest
(`bonusd.audit.digest`) written once as a file in the digest folder, outside Redis, and
recorded in the trail itself, so every later record chains over it.

    {BONUSD_DIGEST_DIR}/{prefix}-{site}/digest-2026-10-03.txt    the signable text block

A file is created exclusively and only ever appended to: a digest file already there is
never overwritten. The same digest is left as it is; one cut short by a crash is
completed; a different one is refused with an ERROR (the chain no longer says what it
said when the file was written, or the folder holds another trail's digests).

The site's leader runs `DayAnchor.catch_up` from the retention sweeper, at each sweep
and `SETTLE` after each gaming day's close. The trail's digest records are also kept in
the ledger `day-digests`, so two daemons never record a day twice (`StaleLedger`), and
the next day to anchor is read from the ledger's last record. A trail with no digest yet
starts with the last finished day (an upgraded site does not back-fill its history:
`bonusd audit digest --day` prints any earlier day); after an outage, every day missed
is anchored, `MAX_DAYS_PER_PASS` at a time.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from bonusd.audit.chain import AuditRecord, Entry, Kind
from bonusd.audit.digest import (
    DayDigest,
    DigestFold,
    digest_text,
    last_finished_day,
    record_instant,
)
from bonusd.audit.store import AuditStore, StaleLedger
from bonusd.clocks.clock import Clock, GamingCalendar
from bonusd.errors import ConflictError

logger = logging.getLogger(__name__)
DIGEST_SUBJECT = "day-digests"  # the ledger of the trail's digest records
ACTOR = "anchor (system)"
MAX_DAYS_PER_PASS = 31  # after a long outage: the rest at the next sweep
FILE_MODE = 0o444  # read-only once complete (a hint: write-once storage is the guard)


def digest_folder(root: Path, prefix: str, site: str) -> Path:
    """The digest folder of one site under `BONUSD_DIGEST_DIR` (`root`)."""
    return root / f"{prefix}-{site}"


class Written(StrEnum):
    """What writing a day's digest file did."""

    WRITTEN = "written"
    PRESENT = "present"  # the same digest was already there
    COMPLETED = "completed"  # a file cut short (a crash while writing) was completed
    REFUSED = "refused"  # a different digest is there: never overwritten


class DigestFolder:
    """The digest files of one site, in `folder` (created on the first write)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, day: dt.date) -> Path:
        return self.folder / f"digest-{day.isoformat()}.txt"

    def write(self, day: dt.date, text: str) -> Written:
        """Write `text` as the digest file of `day`, created exclusively and flushed to
        disk; a file already there is never overwritten (see `Written`)."""
        data = text.encode("utf-8")
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(day)
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except FileExistsError:
            return self._already(path, data)
        _append_and_close(handle, data)
        _sync_folder(self.folder)
        return Written.WRITTEN

    def _already(self, path: Path, data: bytes) -> Written:
        with path.open("rb") as existing:
            have = existing.read(len(data) + 1)
        if have == data:
            return Written.PRESENT
        if not data.startswith(have):
            return Written.REFUSED
        # cut short by a crash before it was complete: appended to, never rewritten
        _append_and_close(os.open(path, os.O_WRONLY | os.O_APPEND), data[len(have) :])
        return Written.COMPLETED


def _append_and_close(handle: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
        os.fsync(handle)
        os.fchmod(handle, FILE_MODE)
    finally:
        os.close(handle)


def _sync_folder(folder: Path) -> None:
    """The new file's name flushed to disk too."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


@dataclass(frozen=True)
class Anchored:
    """One day anchored: its digest, what the file write did, the trail's record."""

    digest: DayDigest
    file: Written
    seq: int


async def trail_digests(
    audit: AuditStore, days: Sequence[dt.date], *, site: str, calendar: GamingCalendar
) -> list[DayDigest]:
    """The digest of each of `days` from one pass over the trail, read a batch at a time
    (a season's trail is never held whole)."""
    folds = [DigestFold(site=site, day=day, calendar=calendar) for day in days]
    async for batch in audit.batches(lenient=True):  # a bad row breaks the chain, not the read
        for fold in folds:
            fold.add(batch)
    return [fold.digest() for fold in folds]


def digested_day(record: AuditRecord) -> dt.date:
    """The gaming day a `digest` record of the trail sums up."""
    return dt.date.fromisoformat(str(record.payload["day"]))


class DayAnchor:
    """Writes each finished gaming day's digest once: the file first, then the trail's
    record (a crash in between writes the same file again: left as it is)."""

    def __init__(
        self,
        *,
        audit: AuditStore,
        clock: Clock,
        calendar: GamingCalendar,
        site: str,
        folder: DigestFolder,
    ) -> None:
        self.audit, self.clock, self.calendar = audit, clock, calendar
        self.site, self.folder = site, folder

    async def recorded(self) -> list[AuditRecord]:
        """The trail's digest records, oldest first."""
        return await self.audit.ledger(DIGEST_SUBJECT)

    async def due(self, recorded: list[AuditRecord] | None = None) -> list[dt.date]:
        """The finished days not anchored yet (at most `MAX_DAYS_PER_PASS`), after the
        digest records `recorded` (read now when not given)."""
        target = last_finished_day(self.calendar, self.clock.now())
        if recorded is None:
            recorded = await self.recorded()
        if recorded:
            first = digested_day(recorded[-1]) + dt.timedelta(days=1)
        else:
            head = await self.audit.records(0, 0)
            if not head:
                return []  # nothing to anchor yet
            first = max(self.calendar.gaming_day(record_instant(head[0].time)), target)
        count = min((target - first).days + 1, MAX_DAYS_PER_PASS)
        return [first + dt.timedelta(days=offset) for offset in range(max(count, 0))]

    async def catch_up(self) -> list[Anchored]:
        """Anchor every day `due`: write its file, then record it in the trail. A file
        the folder refuses is logged (ERROR) and the day recorded all the same; an
        `OSError` (the folder unwritable) stops the pass before the day is recorded."""
        recorded = await self.recorded()  # one read decides the days and the ledger's length
        days = await self.due(recorded)
        if not days:
            return []
        digests = await trail_digests(self.audit, days, site=self.site, calendar=self.calendar)
        expect = len(recorded)
        out: list[Anchored] = []
        for digest in digests:
            day = digest.day
            written = await asyncio.to_thread(self.folder.write, day, digest_text(digest))
            if written is Written.REFUSED:
                logger.error(
                    "audit digest of gaming day %s: %s holds a different digest, not "
                    "overwritten; compare it with `bonusd audit check-digest` (docs/anchor.md)",
                    day,
                    self.folder.path(day),
                )
            if not digest.intact:
                logger.error("audit digest of gaming day %s: %s", day, digest.chain)
            entry = Entry(self.clock.now(), ACTOR, Kind.DIGEST, digest.payload())
            try:
                [record] = await self.audit.commit([entry], subject=DIGEST_SUBJECT, expect=expect)
            except StaleLedger:  # another daemon recorded it first: a normal race
                logger.debug("audit digest of %s recorded by another daemon", day)
                return out
            except ConflictError as exc:  # a record newer than this daemon's clock
                logger.warning("audit digest of %s left to the next sweep: %s", day, exc)
                return out
            expect += 1
            out.append(Anchored(digest, written, record.seq))
            logger.info(
                "audit digest of gaming day %s: seq %d, code %s, file %s (%s)",
                day,
                digest.last_seq,
                digest.code,
                self.folder.path(day),
                written,
            )
        return out
