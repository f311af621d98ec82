"""The audit trail in Redis: records appended atomically to one hash chain per site.

An append reads the chain's head and pushes the next record in one optimistic
transaction (WATCH / MULTI / EXEC): two daemons, or two tasks, appending at once both
land, one after the other, never on the same link.

Draws and RAPS sessions also keep their own records in a *ledger* (`ledger:{subject}`),
written in the same atomic script call as the chain (`lua/audit_commit.lua`, with the
step's own writes): a draw's state is rebuilt by replaying its ledger, and `commit`
refuses (`StaleLedger`) when the ledger grew since the caller read it, so two writers can
never both act on the same claim or pick.

Records are kept as canonical JSON in a list (`audit`), so `bonusd audit verify` can
re-check every link and `bonusd audit export` writes them out as JSON
Lines (format in docs/fairness.md). The daemon's own reads of the trail for the desk and
the verifiers (`reads`, `bonusd.audit.reads`) walk the chain once as records arrive, then
read only what they show.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from importlib import resources
from typing import Any, cast

import redis.exceptions
from redis.asyncio import Redis

from bonusd.audit.chain import (
    AuditRecord,
    ChainCheck,
    ChainWalk,
    Entry,
    Json,
    Kind,
    Picked,
    from_jsonl,
    next_record,
    utc_text,
)
from bonusd.audit.checked import readable
from bonusd.audit.reads import RECHECK_S, TrailReads
from bonusd.audit.writes import StepFile, StepWrites
from bonusd.clocks.clock import Clock
from bonusd.errors import BonusdError, ConflictError
from bonusd.infra.keys import Keys

logger = logging.getLogger(__name__)
BATCH = 500  # trail records read at a time by a whole-trail pass (`batches`)
BATCH_BYTES = 1 << 20  # and about this much of their JSON at most, once records run large
FIRST_BATCH = 32  # records in a pass's first batch, before their size is known


class StaleLedger(BonusdError):
    """Someone else wrote to this draw first; reload it and decide again."""


Extra = Callable[[StepWrites], None]
"""Adds the step's own writes to a commit (e.g. state indexes, archived files)."""


def _in_order(entries: Sequence[Entry], head: AuditRecord | None) -> bool:
    """The trail is in time order: the entries are no older than its newest record."""
    return head is None or all(utc_text(e.at) >= head.time for e in entries)


def _not_older(entries: Sequence[Entry], head: AuditRecord | None) -> None:
    """A step decided at an instant before the newest record (another task or daemon
    committed in between) must be decided again, at a later one."""
    if head is not None and not _in_order(entries, head):
        raise ConflictError(
            f"a later audit record ({head.time}) landed while this step was decided; "
            "nothing was written, try again"
        )


def _write_files(pipe: Any, files: Sequence[StepFile]) -> None:
    """Queue the content-addressed files' writes (never replacing one) on `pipe`."""
    for name, field, value in files:
        if field is None:
            pipe.set(name, value, nx=True)
        else:
            pipe.hsetnx(name, field, value)


class AuditStore:
    """Append to and read back the audit chain of one site, and the ledgers of subjects."""

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        *,
        clock: Clock | None = None,
        recheck_s: float = RECHECK_S,
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._list = keys.audit
        self._notify = keys.notify  # the live push listens here (bonusd.push.hub)
        text = resources.files("bonusd").joinpath("lua", "audit_commit.lua").read_text("utf-8")
        self._commit = redis.register_script(text)
        self._head: str | None = None  # the chain's last record as last written or read
        # the desk's and the verifiers' reads, the chain checked once as records arrive
        self.reads = TrailReads(self, clock, recheck_s)

    def ledger_key(self, subject: str) -> str:
        return self._keys.ledger(subject)

    async def ledger(self, subject: str, start: int = 0) -> list[AuditRecord]:
        """The subject's records from index `start` on."""
        rows = cast(list[str], await self._redis.lrange(self.ledger_key(subject), start, -1))
        return from_jsonl("\n".join(rows)) if rows else []

    async def commit(
        self,
        entries: Sequence[Entry],
        *,
        subject: str,
        expect: int,
        extra: Extra | None = None,
    ) -> list[AuditRecord]:
        """Append `entries` to the chain and to the subject's ledger, atomically, provided
        the ledger still holds `expect` records; else `StaleLedger`. `extra` adds the
        step's own writes (`StepWrites`), made in the same atomic call.

        One round trip when this store knows the chain's head (it remembers the last it
        wrote or read): the step's content-addressed files (written ahead: `StepWrites`)
        and one script call (`lua/audit_commit.lua`) that appends only if the ledger's
        length and the chain's head are the ones the records were decided and chained
        on. Otherwise (the first commit, or a head the entries would be older than) the
        ledger's length and the chain's head are read first, with the files. When another
        record landed on the chain meanwhile, the script answers with the new head and
        the same entries are chained to it again (the ledger did not change: the
        decision stands)."""
        ledger = self.ledger_key(subject)
        writes = StepWrites()
        if extra is not None:
            extra(writes)
        write_keys, write_args = writes.encoded(first_key=3)
        raw, files = self._head, writes.files
        if raw is None or not _in_order(entries, from_jsonl(raw)[0] if raw else None):
            raw = await self._read_head(ledger, subject, expect, files)
            files = []
        while True:
            last = from_jsonl(raw)[0] if raw else None
            _not_older(entries, last)
            out: list[AuditRecord] = []
            for entry in entries:
                last = next_record(
                    last, at=entry.at, actor=entry.actor, kind=entry.kind, payload=entry.payload
                )
                out.append(last)
            rows = [r.to_json() for r in out]
            keys = [self._list, ledger, *write_keys]
            args = [expect, raw, len(rows), *rows, self._notify, subject, *write_args]
            reply = await self._files_then_script(files, keys, args)
            files = []
            if reply[0] == 1:
                self._head = rows[-1] if rows else raw
                return out
            if reply[1] == "ledger":
                raise StaleLedger(f"{subject} changed meanwhile; reload and retry")
            raw = self._head = reply[2]
            logger.debug("audit commit raced; chaining to the new head")

    async def _read_head(
        self, ledger: str, subject: str, expect: int, files: Sequence[StepFile]
    ) -> str:
        """The chain's head ("" when empty), read with the ledger's length (`StaleLedger`
        unless `expect`) and with `files` written ahead."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.llen(ledger)
            pipe.lindex(self._list, -1)
            _write_files(pipe, files)
            length, raw, *_ = await pipe.execute()
        if length != expect:
            raise StaleLedger(f"{subject} changed meanwhile; reload and retry")
        self._head = cast(str, raw or "")
        return self._head

    async def _files_then_script(
        self, files: Sequence[StepFile], keys: list[str], args: list[Any]
    ) -> list[Any]:
        """`files` written ahead and the commit script called, in one round trip (by its
        SHA-1; loaded first when Redis does not hold it, as after a restart)."""
        if not files:
            return cast(list[Any], await self._commit(keys=keys, args=args))
        async with self._redis.pipeline(transaction=False) as pipe:
            _write_files(pipe, files)
            pipe.evalsha(self._commit.sha, len(keys), *keys, *args)
            replies = await pipe.execute(raise_on_error=False)
        *written, reply = replies
        for got in written:
            if isinstance(got, Exception):
                raise got
        if isinstance(reply, redis.exceptions.NoScriptError):
            return cast(list[Any], await self._commit(keys=keys, args=args))
        if isinstance(reply, Exception):
            raise reply
        return cast(list[Any], reply)

    async def append(
        self, *, at: dt.datetime, actor: str, kind: Kind, payload: dict[str, Json]
    ) -> AuditRecord:
        while True:
            async with self._redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(self._list)
                    raw = cast(str | None, await pipe.lindex(self._list, -1))
                    last = from_jsonl(raw)[0] if raw else None
                    _not_older([Entry(at, actor, kind, payload)], last)
                    rec = next_record(last, at=at, actor=actor, kind=kind, payload=payload)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    row = rec.to_json()
                    pipe.rpush(self._list, row)
                    await pipe.execute()
                    self._head = row
                    await self._redis.publish(self._notify, kind.value)  # after EXEC: cluster
                    return rec
                except redis.exceptions.WatchError:
                    # another writer appended first: a normal race, build on its record
                    logger.debug("audit append raced; retrying on the new head")

    async def records(self, start: int = 0, end: int = -1) -> list[AuditRecord]:
        """The trail's records from list index `start` to `end` (inclusive; the index
        of seq n is n - 1), by default all of them."""
        rows = cast(list[str], await self._redis.lrange(self._list, start, end))
        return from_jsonl("\n".join(rows))

    async def batches(
        self,
        size: int | None = None,
        budget: int = BATCH_BYTES,
        *,
        start: int = 0,
        lenient: bool = False,
    ) -> AsyncIterator[list[AuditRecord]]:
        """The trail's records in order from list index `start`, as far as it reached when
        the first batch was read: a long trail read without holding all of it. At most
        `size` (`BATCH`) at a time: first `FIRST_BATCH`, then as many as would fit in
        `budget` bytes of JSON at the size of the batch before (at least one), since a few
        records (a redraw's tickets passed over) can hold most of a night's bytes. A row
        that is not a record raises `AuditFormatError`, or, when `lenient`, is given as
        `UNREADABLE` in its place (`bonusd.audit.checked.readable`)."""
        size = size or BATCH
        length = await self._redis.llen(self._list)
        step = min(size, FIRST_BATCH)  # then as many as fit at the sizes seen
        while start < length:
            end = min(start + step, length) - 1
            rows = cast(list[str], await self._redis.lrange(self._list, start, end))
            if not rows:
                return  # trimmed meanwhile: what is left is past this pass
            held = sum(map(len, rows))
            if lenient:
                records = [readable(row, at) for at, row in enumerate(rows, start)]
            else:
                records = from_jsonl("\n".join(rows), first_line=start + 1)  # line n: seq n
            start += len(rows)
            step = max(1, min(size, budget * len(rows) // max(held, 1)))
            del rows
            yield records

    async def length_and_row(self, index: int) -> tuple[int, str | None]:
        """The trail's length and the JSON of its record at list index `index` (None when
        there is none), read together."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.llen(self._list)
            pipe.lindex(self._list, index)
            length, row = await pipe.execute()
        return int(length), cast(str | None, row)

    async def rows(self, indexes: Sequence[int]) -> list[str | None]:
        """The JSON of the records at list indexes `indexes` (None where there is none), in
        one round trip: a run of neighbours read as one range."""
        runs: list[tuple[int, int]] = []  # (first index, how many)
        for index in indexes:
            if runs and index == runs[-1][0] + runs[-1][1]:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((index, 1))
        async with self._redis.pipeline(transaction=False) as pipe:
            for first, many in runs:
                pipe.lrange(self._list, first, first + many - 1)
            replies: list[list[str]] = await pipe.execute()
        out: list[str | None] = []
        for (_, many), got in zip(runs, replies, strict=True):
            out += [*got, *[None] * (many - len(got))]
        return out

    async def draw(self, ref: str, *, suffix: bool = False) -> Picked:
        """One draw's records and the whole chain's check (`Picked`), read a batch at a
        time."""
        picked = Picked(ref, suffix=suffix)
        async for batch in self.batches():
            picked.add(batch)
        return picked

    async def verify(self) -> ChainCheck:
        walk = ChainWalk()
        async for batch in self.batches():
            walk.add(batch)
        return walk.check
