"""The daemon's reads of its trail (`AuditStore.reads`) walk the chain once as records
arrive, then read only what they show, each record held to the hash kept for its place:
against a real Redis, what an insider with write access does to the trail is caught at the
first read that shows it, at the next whole walk (due by the clock), and, for a trail
rewritten and hashed again after it, at the next read."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from bonusd.audit import reads as reads_module
from bonusd.audit.chain import AuditLog, AuditRecord, Kind, record_hash, verify_chain
from bonusd.audit.checked import REWRITTEN, UNREADABLE_WHY, CheckedTrail
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys
from tests.audit.helpers import put_trail, rehashed

START = dt.datetime(2026, 10, 3, 20, tzinfo=dt.UTC)
DRAWS = ("gh.w1", "gh.w2")


class Counted:
    """Wraps `AuditStore.batches` to count the records each pass reads and where it starts."""

    def __init__(self, store: AuditStore) -> None:
        self.starts: list[int] = []
        self.records = 0
        inner = store.batches

        async def batches(*args: Any, start: int = 0, **kwargs: Any) -> AsyncIterator[Any]:
            self.starts.append(start)
            async for batch in inner(*args, start=start, **kwargs):
                self.records += len(batch)
                yield batch

        store.batches = batches  # type: ignore[method-assign]


async def _store(aredis: aioredis.Redis, site: str, clock: ManualClock, n: int = 30) -> AuditStore:
    store = AuditStore(aredis, Keys("bonusd", site), clock=clock, recheck_s=3600)
    for i in range(n):
        kind = Kind.RULE_CHANGE if i % 10 == 0 else Kind.PICK
        payload: dict[str, Any] = {"n": i} | (
            {} if kind == Kind.RULE_CHANGE else {"draw_id": DRAWS[i % 2]}
        )
        await store.append(
            at=START + dt.timedelta(seconds=i), actor="desk", kind=kind, payload=payload
        )
    return store


async def _walked(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> tuple[AuditStore, list[AuditRecord]]:
    """A trail of 30 records that the store's reads walked once, and its records."""
    store = await _store(aredis, site, clock)
    await store.reads.page(3)
    return store, await store.records()


async def _replace(aredis: aioredis.Redis, site: str, records: list[AuditRecord]) -> None:
    """The trail in Redis replaced with `records`, as an insider with write access would."""
    await put_trail(aredis, Keys("bonusd", site).audit, records)


def _mine(records: list[AuditRecord], draw: str) -> list[int]:
    return [
        r.seq for r in records if r.kind == Kind.RULE_CHANGE or r.payload.get("draw_id") == draw
    ]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


async def test_a_read_walks_only_the_records_added_since_the_last(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store = await _store(aredis, site, clock)
    counted = Counted(store)
    records = await store.records()
    part = await store.reads.draw(DRAWS[0])
    assert [r.seq for r in part.records] == _mine(records, DRAWS[0])
    assert part.check.ok and part.total == 30 and counted.records == 30
    page = await store.reads.page(5)
    assert [r.seq for r in page.records] == [30, 29, 28, 27, 26] and counted.records == 30
    await store.append(
        at=START + dt.timedelta(minutes=5),
        actor="desk",
        kind=Kind.PICK,
        payload={"draw_id": DRAWS[1]},
    )
    part = await store.reads.draw(DRAWS[1])
    assert [r.seq for r in part.records] == [*_mine(records, DRAWS[1]), 31]
    assert counted.starts == [0, 30, 30] and counted.records == 31
    changes = await store.reads.of_kind(Kind.RULE_CHANGE)
    assert [r.seq for r in changes.records] == [1, 11, 21] and changes.check.ok


async def test_reads_at_once_share_one_walk(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store = await _store(aredis, site, clock)
    counted = Counted(store)
    parts = await asyncio.gather(*(store.reads.draw(DRAWS[n % 2]) for n in range(8)))
    assert all(p.check.ok for p in parts) and counted.records == 30


async def test_a_record_changed_in_redis_is_caught_when_it_is_read_then_by_every_read(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    tampered = list(records)
    tampered[5] = dataclasses.replace(records[5], payload={"draw_id": DRAWS[1], "n": 99})  # seq 6
    await _replace(aredis, site, tampered)
    mine = await store.reads.draw(DRAWS[1])  # seq 6 is one of its records
    assert not mine.check.ok and mine.check.broken_at == 6
    for part in (await store.reads.page(2), await store.reads.draw(DRAWS[0])):
        assert str(part.check) == str(verify_chain(tampered))  # walked again: what a walk says


async def test_a_change_no_read_shows_is_caught_at_the_next_whole_walk(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    tampered = list(records)
    tampered[1] = dataclasses.replace(records[1], actor="someone else")
    await _replace(aredis, site, tampered)
    assert (await store.reads.page(3)).check.ok  # records 28-30 are as checked
    clock.advance(3600)  # the whole walk is due
    part = await store.reads.page(3)
    assert str(part.check) == str(verify_chain(tampered)) and part.check.broken_at == 2
    assert store.reads.walked_at == clock.now()


async def test_a_trail_rewritten_and_hashed_again_is_caught_though_its_chain_holds(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    forged = rehashed(records, 12, {"draw_id": DRAWS[1], "n": 0})
    assert verify_chain(forged).ok  # on its own, the forged chain holds
    await _replace(aredis, site, forged)
    part = await store.reads.page(3)
    assert not part.check.ok and part.check.broken_at == 12 and part.check.reason == REWRITTEN
    # the alarm stays through later whole walks: a trail cut short and put back, a day on
    key = Keys("bonusd", site).audit
    last = await aredis.rpop(key)
    assert (await store.reads.page(3)).check.reason == REWRITTEN
    await aredis.rpush(key, last)
    clock.advance(3600)
    for _ in range(2):
        assert (await store.reads.page(3)).check.broken_at == 12


async def test_a_trail_restored_shorter_is_walked_again_without_an_alarm(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    await _replace(aredis, site, records[:20])
    part = await store.reads.page(3)
    assert part.check.ok and part.total == 20 and [r.seq for r in part.records] == [20, 19, 18]


async def test_a_record_gone_or_not_a_record_is_named_by_every_read_after(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, _ = await _walked(aredis, site, clock)
    await aredis.lset(Keys("bonusd", site).audit, 28, "not json")  # seq 29
    part = await store.reads.page(3)
    assert [r.seq for r in part.records] == [30, 28] and part.check.broken_at == 29
    assert part.check.reason == UNREADABLE_WHY
    counted = Counted(store)
    for _ in range(2):  # walked again: no error, and every read says so, shown or not
        part = await store.reads.page(1)
        assert [r.seq for r in part.records] == [30]
        assert (part.check.broken_at, part.check.reason) == (29, UNREADABLE_WHY)
    for _ in range(3):  # a break the walk knows, shown again: not walked for again
        assert (await store.reads.page(3)).check.broken_at == 29
    assert counted.starts.count(0) == 1


@pytest.mark.parametrize(
    "field", [{"kind": ["pick"]}, {"payload": ["x"]}, {"seq": True}, {"time": 5}]
)
async def test_a_record_of_the_wrong_form_hashed_as_it_is_breaks_the_chain_not_the_reads(
    aredis: aioredis.Redis, site: str, clock: ManualClock, field: dict[str, Any]
) -> None:
    store, records = await _walked(aredis, site, clock)
    odd = dataclasses.replace(records[29], **field)
    odd = dataclasses.replace(odd, hash=record_hash(odd.body()))  # its own hash holds
    await _replace(aredis, site, [*records[:29], odd])
    for part in (await store.reads.page(3), await store.reads.draw(DRAWS[1])):
        assert (part.check.broken_at, part.check.reason) == (30, UNREADABLE_WHY)


async def test_a_payload_canonical_json_cannot_hold_breaks_the_chain_not_the_reads(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    row = records[29].to_json().replace('"n":29', '"n":29.5')  # no hash can be made of it
    await aredis.lset(Keys("bonusd", site).audit, 29, row)
    for part in (await store.reads.page(3), await store.reads.page(1)):
        assert part.check.broken_at == 30 and "does not match" in part.check.reason


async def test_a_lone_surrogate_no_page_could_show_is_no_record(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    row = records[28].to_json().replace('"desk"', '"\\ud800"')  # seq 29's actor
    await aredis.lset(Keys("bonusd", site).audit, 28, row)
    part = await store.reads.page(3)
    assert [r.seq for r in part.records] == [30, 28] and part.check.broken_at == 29


async def test_a_whole_walk_that_fails_part_way_is_walked_again_at_the_next_read(
    aredis: aioredis.Redis, site: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, records = await _walked(aredis, site, clock)
    tampered = [*records[:3], dataclasses.replace(records[3], actor="x"), *records[4:]]
    await _replace(aredis, site, tampered)
    assert not (await store.reads.page(27)).check.ok  # shows seq 4: a whole walk is due
    inner = store.batches

    async def failing(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async for batch in inner(*args, **kwargs):
            yield batch
            raise ConnectionError("Redis went away")

    monkeypatch.setattr(store, "batches", failing)
    with pytest.raises(ConnectionError):
        await store.reads.page(1)
    monkeypatch.setattr(store, "batches", inner)
    part = await store.reads.page(1)  # shows seq 30 alone: the walk says where it broke
    assert str(part.check) == str(verify_chain(tampered))


async def test_a_search_reads_back_from_the_newest_record_and_stops_once_it_has_enough(
    aredis: aioredis.Redis, site: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reads_module, "READ_AT_ONCE", 4)
    store = await _store(aredis, site, clock)
    await store.reads.page(1)
    asked: list[list[int]] = []
    rows = store.rows

    async def counted_rows(indexes: list[int]) -> list[str | None]:
        asked.append(list(indexes))
        return await rows(indexes)

    monkeypatch.setattr(store, "rows", counted_rows)
    part = await store.reads.page(2, match=lambda rec: rec.payload.get("n", 0) % 7 == 0)
    assert [r.seq for r in part.records] == [29, 22]
    assert asked == [[26, 27, 28, 29], [22, 23, 24, 25], [18, 19, 20, 21]]
    part = await store.reads.page(50, before=11, kind=Kind.PICK)
    assert [r.seq for r in part.records] == [10, 9, 8, 7, 6, 5, 4, 3, 2]


async def test_the_rule_changes_leave_out_one_not_as_checked(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    edited = dataclasses.replace(records[10], payload={"n": 99})  # seq 11, a rule change
    await _replace(aredis, site, [*records[:10], edited, *records[11:]])
    part = await store.reads.of_kind(Kind.RULE_CHANGE)
    assert [r.seq for r in part.records] == [1, 21] and part.check.broken_at == 11


def test_kept_hashes_do_not_hold_a_record_of_another_place() -> None:
    trail, records = CheckedTrail(), _log(3)
    trail.add(records)
    assert trail.holds(0, records[0]) is None
    assert trail.holds(1, records[0]) is not None  # seq and hash of another place
    assert trail.holds(3, records[2]) is not None  # past what was checked


def _log(n: int) -> list[AuditRecord]:
    log = AuditLog()
    for i in range(n):
        log.append(
            at=START + dt.timedelta(seconds=i), actor="desk", kind=Kind.PICK, payload={"n": i}
        )
    return log.records


async def test_a_record_hashed_again_alone_is_not_the_one_checked(
    aredis: aioredis.Redis, site: str, clock: ManualClock
) -> None:
    store, records = await _walked(aredis, site, clock)
    forged = dataclasses.replace(records[5], payload={"draw_id": DRAWS[1], "n": 99})
    forged = dataclasses.replace(forged, hash=record_hash(forged.body()))  # seq 6, on its own
    await _replace(aredis, site, [*records[:5], forged, *records[6:]])
    part = await store.reads.draw(DRAWS[1])
    assert (
        part.check.broken_at == 6 and "changed in Redis after it was checked" in part.check.reason
    )
