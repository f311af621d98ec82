"""The `floor-row` index RAPS reads, against a real Redis: kept by the ingest script as
the per-key reference reader sees the floor, rebuilt by `reindex_floor` for data from
before it existed, and refreshed by member imports (written in bounded batches). (What RAPS makes of the
rows: tests/raps/test_raps_snapshot_rows.py.)"""

from __future__ import annotations

import datetime as dt
from typing import cast

import redis.asyncio as aioredis

from bonusd.infra.keys import Keys
from bonusd.raps.snapshot import FloorSnapshot
from bonusd.registry.records import Member, Tier
from tests.floor.helpers import (
    AT,
    AT_MS,
    DAY,
    NEXT,
    event,
    floor_store,
    lines,
    reference,
)


async def test_the_ingest_keeps_each_players_row_as_the_reference_reads_the_floor(
    aredis: aioredis.Redis, site: str
) -> None:
    redis = aredis
    keys = Keys("bonusd", site)
    st = floor_store(redis, keys)
    await redis.hset(keys.device("EGM-2"), mapping={"area": "main", "bank": "B2"})
    await st.import_members([Member(card="C1", name="One", tier=Tier("Q"))])
    h = AT_MS - 3_600_000 * 3  # 09:00 local on the 5th: yesterday's gaming day until 08:00
    y = h - 3_600_000 * 2  # 07:00 local: still gaming day DAY
    await st.apply_batch(
        [
            event(1, "game", "C1", "EGM-1", y, day=DAY, wager=5_000),  # yesterday, then moved
            event(2, "card_in", "C1", "EGM-2", h, day=NEXT),
            event(3, "game", "C1", "EGM-2", h + 1_000, day=NEXT, wager=700),
            event(4, "game", "C2", "RL-1", y, day=DAY, wager=90_000, seat=2),  # no play today
            event(5, "card_in", "C3", "EGM-3", h, day=NEXT),  # carded in, never played
            event(6, "game", "C4", "EGM-4", h, day=NEXT, wager=100),
            event(7, "card_out", "C4", "EGM-4", h + 5_000, day=NEXT),  # gone again
        ],
        [],
    )
    rows = cast(list[str], await redis.hvals(keys.floor_row))
    snap = FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))
    assert lines(snap) == await reference(redis, keys, NEXT)
    assert snap.place("C1")["bank"] == "B2"  # moved: the new place
    by_card = {snap.row(i)["card"]: snap.row(i) for i in range(snap.size)}
    assert by_card["C1"]["spend_cents"] == "700" and by_card["C1"]["tier"] == "Q"
    assert by_card["C2"]["spend_cents"] == "0"  # yesterday's 90,000 is not today's spend
    assert sorted(by_card) == ["C1", "C2", "C3"]
    # an import refreshes the tier and exclusion of a member on the floor, atomically
    await st.import_members([Member(card="C1", name="One", tier=Tier("K"), excluded=True)])
    rows = cast(list[str], await redis.hvals(keys.floor_row))
    snap = FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))
    assert lines(snap) == await reference(redis, keys, NEXT)
    assert {snap.row(i)["card"]: snap.row(i)["excluded"] for i in range(snap.size)}["C1"] == "1"
    # the idle sweep takes the row with the session
    assert sorted(await st.sweep_idle(AT, idle_timeout_s=60)) == ["C1", "C2", "C3"]
    assert await redis.hlen(keys.floor_row) == 0


async def test_reindex_builds_the_rows_of_data_from_before_the_index_idempotently(
    aredis: aioredis.Redis, site: str
) -> None:
    redis = aredis
    keys = Keys("bonusd", site)
    st = floor_store(redis, keys)
    await st.import_members([Member(card="C1", name="One", tier=Tier("A"))])
    h = AT_MS - 60_000
    await st.apply_batch(
        [
            event(1, "game", "C1", "EGM-1", h, day=NEXT, wager=12_000),
            event(2, "game", "C2", "RL-1", h, day=NEXT, wager=300, seat=4),
        ],
        [],
    )
    want = await reference(redis, keys, NEXT)
    # as an older release left it: no floor-row, no floor-place, no day on the sessions,
    # no dayspend; a retired floor-lastplay and a row of a card long gone
    async with redis.pipeline(transaction=True) as pipe:
        pipe.delete(keys.floor_row, keys.floor_place, keys.dayspend(NEXT))
        pipe.hdel(keys.session("C1"), "day")
        pipe.hdel(keys.session("C2"), "day")
        pipe.zadd(keys.base + "floor-lastplay", {"C1": h})
        pipe.hset(keys.floor_row, "GONE", "GONE\tegm\tmain\tE\t\t\t1\t1\tQ\t0\t" + NEXT)
        await pipe.execute()
    for _ in range(2):  # the second run changes nothing
        assert await st.reindex_floor(dt.date.fromisoformat(NEXT), batch_size=1) == 2
        rows = cast(list[str], await redis.hvals(keys.floor_row))
        assert lines(FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))) == want
        assert await redis.hget(keys.dayspend(NEXT), "C1") == "12000"
        assert sorted(cast(list[str], await redis.hkeys(keys.floor_place))) == ["C1", "C2"]
        assert not await redis.exists(keys.base + "floor-lastplay")
    # the ingest carries on from the rebuilt rows
    await st.apply_batch([event(3, "game", "C1", "EGM-1", h + 1, day=NEXT, wager=1)], [])
    rows = cast(list[str], await redis.hvals(keys.floor_row))
    assert lines(FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))) == await reference(
        redis, keys, NEXT
    )


async def test_members_are_imported_in_atomic_batches_and_none_is_lost(
    aredis: aioredis.Redis, site: str
) -> None:
    redis = aredis
    keys = Keys("bonusd", site)
    st = floor_store(redis, keys)
    members = [Member(card=f"M{n:03d}", name=f"Member {n}", tier=Tier("J")) for n in range(53)]
    done: list[int] = []
    multi = 0
    original = redis.pipeline

    def counting(*args: object, **kwargs: object) -> aioredis.client.Pipeline:
        nonlocal multi
        multi += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    redis.pipeline = counting  # type: ignore[method-assign]
    try:
        assert await st.import_members(members, batch_size=10, progress=done.append) == 53
    finally:
        redis.pipeline = original  # type: ignore[method-assign]
    assert done == [10, 10, 10, 10, 10, 3] and multi == 6
    assert await redis.scard(keys.members) == 53 and await redis.hlen(keys.member_index) == 53
    assert (await st.member("M052")) == members[52]
