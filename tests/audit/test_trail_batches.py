"""A whole-trail pass reads the trail in batches bounded in count and, once records run
large (a redraw's tickets passed over), in bytes: every record once, in order."""

from __future__ import annotations

import datetime as dt

import pytest
import redis.asyncio as aioredis

from bonusd.audit.chain import AuditRecord, Kind
from bonusd.audit.store import AuditStore
from bonusd.errors import AuditFormatError
from bonusd.infra.keys import Keys

START = dt.datetime(2026, 10, 3, 20, tzinfo=dt.UTC)
SIZES = [40] * 12 + [30_000] * 6 + [40] * 20 + [30_000] + [40] * 9  # bytes of payload


async def _trail(aredis: aioredis.Redis, site: str) -> AuditStore:
    store = AuditStore(aredis, Keys("bonusd", site))
    for i, size in enumerate(SIZES):
        at = START + dt.timedelta(seconds=i)
        await store.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"x": "p" * size})
    return store


def _json_bytes(batch: list[AuditRecord]) -> int:
    return sum(len(rec.to_json()) for rec in batch)


async def test_batches_shrink_after_large_records_and_grow_back(
    aredis: aioredis.Redis, site: str
) -> None:
    store = await _trail(aredis, site)
    budget = 64_000
    got = [batch async for batch in store.batches(size=8, budget=budget)]
    assert [r.seq for batch in got for r in batch] == list(range(1, len(SIZES) + 1))
    assert [r.hash for batch in got for r in batch] == [r.hash for r in await store.records()]
    sizes = [len(batch) for batch in got]
    over = [i for i, batch in enumerate(got) if _json_bytes(batch) > budget]
    assert over, "the test needs a batch over the budget"
    for i in over:  # the batch after one over the budget fits it at that batch's record size
        if i + 1 < len(got):
            assert sizes[i + 1] <= max(1, budget * sizes[i] // _json_bytes(got[i]))
    assert max(sizes) == 8 and sizes[-1] > 1  # back to whole batches once records are small


async def test_a_budget_of_one_byte_reads_one_record_at_a_time(
    aredis: aioredis.Redis, site: str
) -> None:
    store = await _trail(aredis, site)
    got = [batch async for batch in store.batches(size=5, budget=1)]
    assert [len(batch) for batch in got] == [5] + [1] * (len(SIZES) - 5)


async def test_records_appended_during_a_pass_are_left_to_the_next(
    aredis: aioredis.Redis, site: str
) -> None:
    store = await _trail(aredis, site)
    seen = 0
    async for batch in store.batches(size=10):
        if not seen:
            await store.append(at=START + dt.timedelta(hours=1), actor="d", kind=Kind.RULE_CHANGE,
                               payload={})  # fmt: skip
        seen += len(batch)
    assert seen == len(SIZES)


async def test_a_bad_record_is_named_by_its_seq_whatever_the_batch(
    aredis: aioredis.Redis, site: str
) -> None:
    store = await _trail(aredis, site)
    await aredis.lset(Keys("bonusd", site).audit, 6, '{"seq": 7, "not": "a record"}')
    for size in (2, 3, 500):
        with pytest.raises(AuditFormatError, match="audit export line 7:"):
            _ = [batch async for batch in store.batches(size=size)]
