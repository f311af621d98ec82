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
Lines (format in docs/fairness.md).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from importlib import resources
from typing import cast

import redis.exceptions
from redis.asyncio import Redis

from bonusd.audit.chain import (
    AuditRecord,
    ChainCheck,
    Entry,
    Json,
    Kind,
    from_jsonl,
    next_record,
    utc_text,
    verify_chain,
)
from bonusd.audit.writes import StepWrites
from bonusd.errors import BonusdError, ConflictError
from bonusd.infra.keys import Keys

logger = logging.getLogger(__name__)


class StaleLedger(BonusdError):
    """Someone else wrote to this draw first; reload it and decide again."""


Extra = Callable[[StepWrites], None]
"""Adds the step's own writes to a commit (e.g. state indexes, archived files)."""


def _not_older(entries: Sequence[Entry], head: AuditRecord | None) -> None:
    """The trail is in time order: a step decided at an instant before the newest record
    (another task or daemon committed in between) must be decided again, at a later one."""
    if head is not None and any(utc_text(e.at) < head.time for e in entries):
        raise ConflictError(
            f"a later audit record ({head.time}) landed while this step was decided; "
            "nothing was written, try again"
        )


class AuditStore:
    """Append to and read back the audit chain of one site, and the ledgers of subjects."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys
        self._list = keys.audit
        self._notify = keys.notify  # the live push listens here (bonusd.push.hub)
        text = resources.files("bonusd").joinpath("lua", "audit_commit.lua").read_text("utf-8")
        self._commit = redis.register_script(text)

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

        Two round trips: the ledger's length and the chain's head read together (with the
        step's content-addressed files, written ahead: `StepWrites`), then one script call
        (`lua/audit_commit.lua`) that appends only if neither changed. When another record
        landed on the chain meanwhile, the script answers with the new head and the same
        entries are chained to it again (the ledger did not change: the decision stands)."""
        ledger = self.ledger_key(subject)
        writes = StepWrites()
        if extra is not None:
            extra(writes)
        write_keys, write_args = writes.encoded(first_key=3)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.llen(ledger)
            pipe.lindex(self._list, -1)
            for name, field, value in writes.files:  # content-addressed: written ahead
                if field is None:
                    pipe.set(name, value, nx=True)
                else:
                    pipe.hsetnx(name, field, value)
            length, raw, *_ = await pipe.execute()
        if length != expect:
            raise StaleLedger(f"{subject} changed meanwhile; reload and retry")
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
            reply = await self._commit(
                keys=[self._list, ledger, *write_keys],
                args=[expect, raw or "", len(rows), *rows, self._notify, subject, *write_args],
            )
            if reply[0] == 1:
                return out
            if reply[1] == "ledger":
                raise StaleLedger(f"{subject} changed meanwhile; reload and retry")
            raw = reply[2]
            logger.debug("audit commit raced; chaining to the new head")

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
                    pipe.rpush(self._list, rec.to_json())
                    await pipe.execute()
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

    async def of_kind(self, kind: Kind) -> list[AuditRecord]:
        return [r for r in await self.records() if r.kind == kind.value]

    async def verify(self) -> ChainCheck:
        return verify_chain(await self.records())
