"""What the audit tests share: a trail at given instants, and what an insider with write
access to Redis does to it (rewrite one record and re-hash every record after it)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from zoneinfo import ZoneInfo

import redis.asyncio as aioredis

from bonusd.audit.chain import AuditLog, AuditRecord, Json, Kind, next_record
from bonusd.audit.digest import record_instant
from bonusd.clocks.clock import GamingCalendar

ZONE = ZoneInfo("Africa/Johannesburg")
CALENDAR = GamingCalendar(ZONE, dt.time(8, 0))


def local(day: int, hour: int, minute: int = 0, second: int = 0) -> dt.datetime:
    """An instant of October 2026 in Johannesburg."""
    return dt.datetime(2026, 10, day, hour, minute, second, tzinfo=ZONE)


def trail(instants: Iterable[dt.datetime]) -> list[AuditRecord]:
    log = AuditLog()
    for number, instant in enumerate(instants):
        log.append(at=instant, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": number})
    return log.records


def rehashed(
    records: Sequence[AuditRecord], seq: int, payload: dict[str, Json]
) -> list[AuditRecord]:
    """The chain an insider makes: record `seq` gets `payload`, and it and every later
    record are hashed again on the new links, so the chain verifies on its own."""
    out = list(records[: seq - 1])
    last = out[-1] if out else None
    for rec in records[seq - 1 :]:
        last = next_record(
            last,
            at=record_instant(rec.time),
            actor=rec.actor,
            kind=Kind(rec.kind),
            payload=payload if rec.seq == seq else rec.payload,
        )
        out.append(last)
    return out


async def put_trail(r: aioredis.Redis, key: str, records: Sequence[AuditRecord]) -> None:
    """Replace the trail in Redis with `records` (as the insider would)."""
    async with r.pipeline(transaction=True) as pipe:
        pipe.delete(key)
        if records:
            pipe.rpush(key, *(rec.to_json() for rec in records))
        await pipe.execute()


def bonusd(
    site: str, redis_url: str, *args: str, clock: str = "2026-10-05T12:00:00+02:00"
) -> subprocess.CompletedProcess[str]:
    """The `bonusd` command on `site`, its own simulated clock starting at `clock`."""
    env = {
        **os.environ,
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_CLOCK_START": clock,
        "BONUSD_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "bonusd", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
