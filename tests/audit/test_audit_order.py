"""The audit trail stays in time order when writers race, against a real Redis: a step
decided at an instant before the newest record (another task or daemon committed in
between) writes nothing and is refused as a lost race (`ConflictError`), which the claim
timers (and the scheduler, `test_scheduler_retry.py`) decide again at a later instant.
Found by the soak: a draw round and a no-show redraw of the leader crossed, and the
chain's time-order check stopped the leader's work."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import redis.asyncio as aioredis

from bonusd.audit.chain import Entry, Kind
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.errors import ConflictError
from bonusd.infra.keys import Keys
from bonusd.service.claimtimers import ClaimTimers

T0 = dt.datetime(2026, 11, 7, 17, 0, tzinfo=dt.UTC)
LATER = T0 + dt.timedelta(milliseconds=3)


async def test_a_step_older_than_the_newest_record_writes_nothing(
    aredis: aioredis.Redis, site: str
) -> None:
    store = AuditStore(aredis, Keys("bonusd", site))
    await store.append(at=LATER, actor="timers", kind=Kind.RULE_CHANGE, payload={"n": 1})
    entry = Entry(T0, "scheduler", Kind.RULE_CHANGE, {"n": 2})
    with pytest.raises(ConflictError, match="try again"):
        await store.commit([entry], subject="draw-x", expect=0)
    with pytest.raises(ConflictError, match="try again"):
        await store.append(at=T0, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": 3})
    assert len(await store.records()) == 1
    assert await store.ledger("draw-x") == []
    await store.commit(
        [Entry(LATER, "scheduler", Kind.RULE_CHANGE, {"n": 2})], subject="draw-x", expect=0
    )
    assert (await store.verify()).ok


async def test_claim_timers_decide_a_lost_race_again(aredis: aioredis.Redis, site: str) -> None:
    keys = Keys("bonusd", site)
    index = keys.base + "deadlines"
    clock = ManualClock(LATER)
    await aredis.zadd(index, {"draw:x": T0.timestamp()})
    calls = 0

    async def run_due(subject: str) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConflictError("a later audit record landed; try again")
        await aredis.zrem(index, "draw:x")
        return 1

    timers = ClaimTimers(redis=aredis, key=index, clock=clock, owners={"draw": run_due})
    stop = asyncio.Event()
    task = asyncio.create_task(timers.run(stop))
    async with asyncio.timeout(10):
        while timers.fired < 1:
            await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert calls == 2
