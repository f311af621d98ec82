"""The audit trail in Redis: records appended atomically to one hash chain per site.

An append reads the chain's head and pushes the next record in one optimistic
transaction (WATCH / MULTI / EXEC): two daemons, or two tasks, appending at once both
land, one after the other, never on the same link. Records are kept as canonical JSON in
a list (`audit`), so `bonusd audit verify` can re-check every link and `bonusd audit
export` writes them out as JSON Lines (format in docs/fairness.md).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import cast

import redis.exceptions
from redis.asyncio import Redis

from bonusd.audit import (
    AuditRecord,
    ChainCheck,
    Json,
    Kind,
    from_jsonl,
    next_record,
    verify_chain,
)
from bonusd.keys import Keys

logger = logging.getLogger(__name__)


class AuditStore:
    """Append to and read back the audit chain of one site."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._list = f"{keys.base}audit"

    async def append(
        self, *, at: dt.datetime, actor: str, kind: Kind, payload: dict[str, Json]
    ) -> AuditRecord:
        while True:
            async with self._redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(self._list)
                    raw = cast(str | None, await pipe.lindex(self._list, -1))
                    last = from_jsonl(raw)[0] if raw else None
                    rec = next_record(last, at=at, actor=actor, kind=kind, payload=payload)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.rpush(self._list, rec.to_json())
                    await pipe.execute()
                    return rec
                except redis.exceptions.WatchError:
                    # another writer appended first: a normal race, build on its record
                    logger.debug("audit append raced; retrying on the new head")

    async def records(self) -> list[AuditRecord]:
        rows = cast(list[str], await self._redis.lrange(self._list, 0, -1))
        return from_jsonl("\n".join(rows))

    async def of_kind(self, kind: Kind) -> list[AuditRecord]:
        return [r for r in await self.records() if r.kind == kind.value]

    async def verify(self) -> ChainCheck:
        return verify_chain(await self.records())
