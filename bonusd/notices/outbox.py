"""The SMS outbox in Redis: one entry per texted audit record, its sending state, the
notifier's read position, and the leases that keep two daemons from sending one entry.

Keys (all under the site's hash tag):

    sms:cursor        string  seq of the last audit record the notifier has read
    sms:outbox        hash    entry id (= the audit record's seq) -> the entry (JSON)
    sms:due           zset    entry id -> when to (re)try it (epoch ms on the daemon clock)
    sms:lease:{id}    string  held (with a TTL) while one daemon sends the entry
    sms:gateway       hash    where entries go (`describe`), as the running daemon says

`enqueue` writes entries and moves the cursor in one script, and only if the cursor is
where the caller read from: an entry is written only when its id is absent, so a restart,
a second daemon or a re-read of the trail can never queue (or send) a record twice.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.errors import BonusdError, NotFoundError
from bonusd.infra.keys import Keys

# KEYS: cursor, outbox, due. ARGV: the cursor read, the new cursor, then per entry its
# id, its JSON and its due score ('' = not to be sent). Returns the ids written, or nil
# (nothing written) when someone moved the cursor meanwhile.
_ENQUEUE = """
if (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then return false end
local added = {}
for i = 3, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) == 1 then
    added[#added + 1] = ARGV[i]
    if ARGV[i + 2] ~= '' then redis.call('ZADD', KEYS[3], 'NX', ARGV[i + 2], ARGV[i]) end
  end
end
redis.call('SET', KEYS[1], ARGV[2])
return added
"""


class OutboxError(BonusdError):
    """An outbox request that cannot be done (e.g. resending an expired text)."""


class Status(StrEnum):
    QUEUED = "queued"  # waiting for the gateway (with no webhook configured: stays here)
    RETRYING = "retrying"  # the last attempt failed; `next_attempt_at` says when again
    SENT = "sent"  # the gateway accepted it
    FAILED = "failed"  # refused for good, or out of attempts; `last_error` says why
    EXPIRED = "expired"  # its moment passed before it could be sent (not sent late)
    NO_NUMBER = "no_number"  # the member opted in but has no mobile number on file


@dataclass
class OutboxEntry:
    """One text to one winner; `id` is the seq of the audit record it tells about."""

    id: str
    draw_id: str
    claim: str
    moment: str
    card: str  # masked, as in the text
    to: str
    text: str
    created_at: dt.datetime
    expires_at: dt.datetime
    status: Status = Status.QUEUED
    attempts: int = 0
    last_error: str = ""
    next_attempt_at: dt.datetime | None = None
    sent_at: dt.datetime | None = None

    def to_json(self) -> str:
        out: dict[str, Any] = dataclasses.asdict(self)
        for name, value in out.items():
            if isinstance(value, dt.datetime):
                out[name] = value.isoformat()
        return json.dumps(out, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> OutboxEntry:
        fields = json.loads(raw)
        for name in ("created_at", "expires_at", "next_attempt_at", "sent_at"):
            fields[name] = dt.datetime.fromisoformat(fields[name]) if fields.get(name) else None
        fields["status"] = Status(fields["status"])
        return cls(**fields)


def epoch_ms(at: dt.datetime) -> int:
    return int(at.timestamp() * 1000)


class Outbox:
    """One site's SMS outbox. `redis` must decode responses to `str`."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self.redis = redis
        self.audit_list = keys.audit
        self.cursor = keys.sms("cursor")
        self.outbox = keys.sms("outbox")
        self.due = keys.sms("due")
        self.gateway_key = keys.sms("gateway")
        self._lease_prefix = keys.sms("lease:")
        self._enqueue = redis.register_script(_ENQUEUE)

    # -- the notifier's side --------------------------------------------------------------
    async def start_cursor(self) -> int:
        """The read position; on a site's first start, the trail's end (winners drawn
        before SMS was switched on are not texted now). Returns the position."""
        await self.redis.set(self.cursor, await self.redis.llen(self.audit_list), nx=True)
        return int(cast(str, await self.redis.get(self.cursor)) or 0)

    async def position(self) -> int:
        return int(cast(str | None, await self.redis.get(self.cursor)) or 0)

    async def rows(self, start: int, count: int) -> list[str]:
        """Audit records (JSON) from list index `start` (= seq - 1)."""
        return cast(list[str], await self.redis.lrange(self.audit_list, start, start + count - 1))

    async def enqueue(
        self, read_from: int, moved_to: int, entries: Sequence[OutboxEntry]
    ) -> set[str] | None:
        """Write the entries not there yet and move the cursor, atomically; the ids
        written, or None (nothing written) when the cursor is no longer at `read_from`."""
        args: list[str] = [str(read_from), str(moved_to)]
        for entry in entries:
            score = str(epoch_ms(entry.created_at)) if entry.status is Status.QUEUED else ""
            args += [entry.id, entry.to_json(), score]
        keys = [self.cursor, self.outbox, self.due]
        added = await self._enqueue(keys=keys, args=args)
        return None if added is None else set(cast(list[str], added))

    # -- the sender's side ----------------------------------------------------------------
    async def due_ids(self, now: dt.datetime, count: int) -> list[str]:
        got = await self.redis.zrangebyscore(self.due, "-inf", epoch_ms(now), start=0, num=count)
        return cast(list[str], got)

    async def next_due(self) -> dt.datetime | None:
        first = cast(
            list[tuple[str, float]], await self.redis.zrange(self.due, 0, 0, withscores=True)
        )
        return dt.datetime.fromtimestamp(first[0][1] / 1000, dt.UTC) if first else None

    async def lease(self, entry_id: str, now: dt.datetime, *, owner: str, seconds: float) -> bool:
        """Take the entry for one attempt: True when it is ours and still due."""
        key = self._lease_prefix + entry_id
        if not await self.redis.set(key, owner, nx=True, px=max(1, int(seconds * 1000))):
            return False
        score = await self.redis.zscore(self.due, entry_id)
        if score is None or score > epoch_ms(now):  # another daemon has just dealt with it
            await self.redis.delete(key)
            return False
        return True

    async def save(self, entry: OutboxEntry, *, due_at: dt.datetime | None) -> None:
        """Store the entry's new state; due again at `due_at`, or done; lease released."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self.outbox, entry.id, entry.to_json())
            if due_at is None:
                pipe.zrem(self.due, entry.id)
            else:
                pipe.zadd(self.due, {entry.id: epoch_ms(due_at)})
            pipe.delete(self._lease_prefix + entry.id)
            await pipe.execute()

    async def forget(self, entry_id: str) -> None:
        """No longer due (its entry is gone); the lease released."""
        await self.redis.zrem(self.due, entry_id)
        await self.redis.delete(self._lease_prefix + entry_id)

    async def set_gateway(self, describe: str, at: dt.datetime) -> None:
        await self.redis.hset(
            self.gateway_key, mapping={"gateway": describe, "since": at.isoformat()}
        )

    # -- the desk's side ------------------------------------------------------------------
    async def get(self, entry_id: str) -> OutboxEntry:
        raw = cast(str | None, await self.redis.hget(self.outbox, entry_id))
        if raw is None:
            raise NotFoundError(f"the SMS outbox has no entry {entry_id}")
        return OutboxEntry.from_json(raw)

    async def entries(self) -> list[OutboxEntry]:
        """Every entry, newest first."""
        raw = cast(dict[str, str], await self.redis.hgetall(self.outbox))
        out = [OutboxEntry.from_json(v) for v in raw.values()]
        return sorted(out, key=lambda e: int(e.id), reverse=True)

    async def report(self) -> dict[str, Any]:
        """The gateway, the read position and the entries counted by status."""
        entries = await self.entries()
        gateway = cast(dict[str, str], await self.redis.hgetall(self.gateway_key))
        counts = Counter(str(e.status) for e in entries)
        return {
            "gateway": gateway.get("gateway", "not started"),
            "gateway_since": gateway.get("since"),
            "audit_position": await self.position(),
            "counts": {s.value: counts.get(s.value, 0) for s in Status},
        }

    async def requeue(self, entry_id: str, now: dt.datetime, *, by: str) -> OutboxEntry:
        """Send a failed entry again (after the cause is fixed), from attempt 1."""
        entry = await self.get(entry_id)
        if entry.status is not Status.FAILED:
            raise OutboxError(f"SMS {entry_id} is {entry.status}; only a failed text is resent")
        if now > entry.expires_at:
            raise OutboxError(
                f"SMS {entry_id} is out of date since {entry.expires_at.isoformat()}: "
                "resending it now would mislead the winner"
            )
        entry.status, entry.attempts, entry.next_attempt_at = Status.QUEUED, 0, now
        entry.last_error = f"resent by {by} after: {entry.last_error}"
        await self.save(entry, due_at=now)
        return entry
