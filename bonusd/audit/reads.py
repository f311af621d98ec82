"""The daemon's reads of its audit trail for the desk and the verifiers (`TrailReads`), at a
cost that follows what is read, not the trail's length: one draw's records, a page of the
trail, the rule changes.

The trail is never removed and grows all season: walking its chain from the first record
costs about 0.08 ms a record (`make bench-trail`), seconds of the event loop per read once
it holds tens of thousands, and an open desk tab reads it again at every
change of the trail. So the daemon walks the chain once, as records arrive, and keeps what
it checked (`bonusd.audit.checked.CheckedTrail`): each read first walks on over the records
added since the last (usually none or a few), checks that the last record checked is still
the one at its place, then reads only the records it needs, each held to the hash kept for
its place. The whole trail is walked again from its first record once `recheck_s` of the
daemon's clock has passed since the last whole walk (a gaming day by default,
`BONUSD_AUDIT_RECHECK_S`), when the trail is shorter than what was checked or its last
checked record changed (restored from a backup), and after a read found a record changed.
`bonusd audit verify` walks the whole chain, always.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Protocol

from bonusd.audit.chain import UNREADABLE, AuditRecord, ChainCheck, Kind
from bonusd.audit.checked import Changed, CheckedTrail, readable
from bonusd.audit.digest import DayDigest, walked_digest
from bonusd.clocks.clock import Clock, GamingCalendar

logger = logging.getLogger(__name__)
RECHECK_S = 86400.0  # the whole chain walked again this often (daemon clock)
READ_AT_ONCE = 500  # records read back in one round trip by a search of the trail

Read = list[tuple[int, AuditRecord]]  # (position in the trail, the record read there)


class TrailSource(Protocol):
    """Where the records come from: the trail in Redis (`bonusd.audit.store.AuditStore`)."""

    def batches(self, *, start: int = 0, lenient: bool = False) -> AsyncIterator[list[AuditRecord]]:
        """The records from list index `start` on, a batch at a time; when `lenient`, a row
        that holds no record as `UNREADABLE`."""
        ...

    async def length_and_row(self, index: int) -> tuple[int, str | None]:
        """The trail's length and the JSON of its record at `index` (None: none)."""
        ...

    async def rows(self, indexes: Sequence[int]) -> list[str | None]:
        """The JSON of the records at `indexes` (None where there is none)."""
        ...


@dataclass(frozen=True)
class TrailPart:
    """Records read back from the trail, and the chain's check as it stands for them: the
    walk's, or the first of them found not to be the record checked at its place."""

    records: list[AuditRecord]
    check: ChainCheck
    total: int  # records in the trail as checked


class TrailReads:
    """One site's trail as the daemon has checked it, read a part at a time."""

    def __init__(
        self, store: TrailSource, clock: Clock | None = None, recheck_s: float = RECHECK_S
    ) -> None:
        self._store = store
        self._clock, self._recheck_s = clock, recheck_s
        self._trail = CheckedTrail()
        self._walked_at: dt.datetime | None = None  # when the last whole walk began
        self._rewalk = False  # a read found a record changed: walk it all again
        self._lock = asyncio.Lock()  # one walk at a time; reads wait for it
        self._searches = asyncio.Semaphore(1)  # one search through the trail at a time

    @property
    def walked_at(self) -> dt.datetime | None:
        """When the last walk from the first record began (the daemon's clock)."""
        return self._walked_at

    async def checked(self) -> CheckedTrail:
        """The trail checked to its end as it is now (see the module's docstring). A whole
        walk that fails part-way (Redis gone) changes nothing: the next read walks again;
        a walk on from where the last stopped keeps the whole batches it checked."""
        async with self._lock:
            trail, now = self._trail, self._clock.now() if self._clock else None
            whole = await self._whole_walk_due(trail, now)
            if whole:  # a change a read finds meanwhile asks for the walk after this one
                trail, self._rewalk = CheckedTrail(trail), False
            try:
                async for batch in self._store.batches(start=trail.count, lenient=True):
                    trail.add(batch)
            except BaseException:
                self._rewalk = self._rewalk or whole
                raise
            if whole:
                self._walked_at = now
            self._trail = trail
            return trail

    async def _whole_walk_due(self, trail: CheckedTrail, now: dt.datetime | None) -> bool:
        if trail.count == 0 or self._rewalk:
            return True
        since = None if now is None or self._walked_at is None else now - self._walked_at
        if since is not None and since.total_seconds() >= self._recheck_s:
            return True
        length, row = await self._store.length_and_row(trail.count - 1)
        if length < trail.count or readable(row, trail.count - 1).hash != trail.tip:
            logger.warning(
                "the audit trail in Redis is not the one checked (%d records, %d before, "
                "or its record %d changed): walking its chain again from the first record",
                length,
                trail.count,
                trail.count,
            )
            return True
        return False

    async def read(self, positions: Sequence[int], hint: str | None = None) -> Read:
        """The records at `positions` (ascending), as read back now; a place that holds no
        record (gone, or not one) is read as `UNREADABLE`, for `held` to report. With
        `hint`, a record whose JSON, in lower case, does not hold it is left out unparsed."""
        rows = await self._store.rows(positions)
        return [
            (position, readable(row, position))
            for position, row in zip(positions, rows, strict=True)
            if hint is None or row is None or hint in row.lower()
        ]

    def held(self, trail: CheckedTrail, read: Read) -> ChainCheck:
        """The chain's check for records read back: the walk's, unless one of them, before
        any break the walk found, is not the record checked at its place (the first such
        is named, and the whole chain is walked again at the next read; a break the walk
        knows is not walked again for at every read that shows it)."""
        return self._judged(trail, [trail.holds(pos, rec) for pos, rec in read])

    def _judged(self, trail: CheckedTrail, changes: list[Changed | None]) -> ChainCheck:
        """`held`, given what `CheckedTrail.holds` said of each record read back."""
        changed = min((c for c in changes if c), key=lambda c: c.position, default=None)
        known = trail.check
        if changed is None or (not known.ok and known.checked <= changed.position):
            return known
        self._rewalk = True
        logger.error("audit trail: record %d: %s", changed.position + 1, changed.reason)
        return changed.check()

    async def draw(self, draw_id: str) -> TrailPart:
        """`draw_id`'s records (a draw's subject or a RAPS jackpot's id) and every rule
        change, in trail order."""
        trail = await self.checked()
        read = await self.read(trail.of_draw(draw_id))
        return self._part(trail, read)

    async def of_kind(self, kind: Kind) -> TrailPart:
        """Every record of `kind`, in trail order, but those not as checked at their place
        (the check names the first, and logs it)."""
        trail = await self.checked()
        read = await self.read(trail.of_kind(kind))
        changes = [trail.holds(pos, rec) for pos, rec in read]
        records = [rec for (_, rec), change in zip(read, changes, strict=True) if change is None]
        return TrailPart(records, self._judged(trail, changes), trail.count)

    async def day_digest(
        self, day: dt.date, *, site: str, calendar: GamingCalendar
    ) -> DayDigest | None:
        """Gaming day `day`'s digest from the walk, as `DigestFold` takes it from the whole
        trail (two records read back and held), or None when the walk cannot give it: the
        chain broken, a time not in form, a record read back not as checked. The caller
        then folds the whole trail, which says where."""
        trail = await self.checked()
        span = trail.span(calendar.day_opens(day), calendar.day_closes(day))
        if span is None:
            return None
        first, end = span
        read = dict(await self.read(sorted({p for p in (first, end - 1) if 0 <= p < end})))
        if not self.held(trail, list(read.items())).ok:
            return None
        return walked_digest(
            site=site,
            day=day,
            calendar=calendar,
            last=read.get(end - 1),
            first=read.get(first),
            records=end - first,
        )

    async def page(
        self,
        count: int,
        *,
        before: int | None = None,
        kind: str | None = None,
        match: Callable[[AuditRecord], bool] | None = None,
        hint: str | None = None,
    ) -> TrailPart:
        """At most `count` records, newest first: with seq below `before`, of `kind`, and
        for which `match` holds. Without `match` only the page is read; with it the trail
        is searched from its newest record back, `READ_AT_ONCE` records a round trip, one
        search at a time, and only the records whose JSON holds `hint` (lower case: text
        that every record `match` takes holds) are parsed and matched."""
        trail = await self.checked()
        end = trail.count if before is None else max(0, min(before - 1, trail.count))
        places: Iterable[int] = range(end - 1, -1, -1)
        if kind is not None:
            places = (p for p in reversed(trail.of_kind(kind)) if p < end)
        if match is None:
            read = await self.read(sorted(islice(places, count)))
            return self._part(trail, list(reversed(read)))
        async with self._searches:
            found = []
            for chunk in _chunks(iter(places), READ_AT_ONCE):
                read = await self.read(sorted(chunk), hint)
                found += [(p, rec) for p, rec in reversed(read) if rec is UNREADABLE or match(rec)]
                if len(found) >= count:
                    break
        return self._part(trail, found[:count])

    def _part(self, trail: CheckedTrail, read: Read) -> TrailPart:
        records = [rec for _, rec in read if rec is not UNREADABLE]
        return TrailPart(records, self.held(trail, read), trail.count)


def _chunks(places: Iterator[int], size: int) -> Iterator[list[int]]:
    while chunk := list(islice(places, size)):
        yield chunk
