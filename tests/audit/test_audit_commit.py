"""`AuditStore.commit`, one script call: records land with the step's small writes or not
at all; content-addressed files are written ahead whatever happens; a record landing on
the trail meanwhile is chained to, a ledger that grew is refused."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.connection import Connection

from bonusd.audit.chain import Entry, Kind
from bonusd.audit.store import AuditStore, StaleLedger
from bonusd.audit.writes import StepWrites
from bonusd.infra.keys import Keys

T0 = dt.datetime(2026, 11, 7, 17, 0, tzinfo=dt.UTC)


def entry(n: int) -> Entry:
    return Entry(T0, "desk", Kind.PICK, {"n": n})


async def test_records_land_with_their_writes_or_not_at_all(site: str, redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    store = AuditStore(r, keys)

    def writes(w: StepWrites) -> None:
        w.file(keys.poolfile("c0ffee"), b"pool file\n")
        w.hfile(keys.raps_floor("j1"), "file:abc", "snapshot\n")
        w.hsetnx(keys.raps_floor("j1"), "1", "file:abc")
        w.hset(keys.letters, mapping={"7": "letter"})
        w.zadd(keys.deadlines, {"draw:x": 12.5})

    got = await store.commit([entry(1), entry(2)], subject="x", expect=0, extra=writes)
    assert [rec.seq for rec in got] == [1, 2]
    assert await r.llen(store.ledger_key("x")) == 2
    assert await r.hget(keys.raps_floor("j1"), "1") == "file:abc"
    assert await r.hget(keys.letters, "7") == "letter"
    assert await r.zscore(keys.deadlines, "draw:x") == 12.5

    def later(w: StepWrites) -> None:
        w.file(keys.poolfile("beef"), b"another pool\n")
        w.zrem(keys.deadlines, "draw:x")
        w.set(keys.letters + "-probe", "written")

    with pytest.raises(StaleLedger):  # the ledger holds 2, not 1
        await store.commit([entry(3)], subject="x", expect=1, extra=later)
    assert await r.llen(keys.audit) == 2
    assert await r.zscore(keys.deadlines, "draw:x") == 12.5  # small writes: not made
    assert await r.get(keys.letters + "-probe") is None
    assert await r.get(keys.poolfile("beef")) == "another pool\n"  # the file: written ahead
    assert (await store.verify()).ok
    await r.aclose()


async def test_a_record_landing_meanwhile_is_chained_to(site: str, redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    store = AuditStore(r, Keys("bonusd", site))
    # 30 subjects at once, each one commit on its own ledger: the trail's head moves under
    # most of them, and each lands once, chained to whatever landed before it
    await asyncio.gather(*(store.commit([entry(n)], subject=f"s{n}", expect=0) for n in range(30)))
    records = await store.records()
    assert [rec.seq for rec in records] == list(range(1, 31))
    assert sorted(int(rec.payload["n"]) for rec in records) == list(range(30))
    assert (await store.verify()).ok
    # on one subject, exactly one of two writers deciding on the same ledger length lands
    outcomes = await asyncio.gather(
        store.commit([entry(100)], subject="s0", expect=1),
        store.commit([entry(101)], subject="s0", expect=1),
        return_exceptions=True,
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["StaleLedger", "list"]
    await r.aclose()


async def test_the_script_refuses_a_write_that_is_not_a_step_write(
    site: str, redis_url: str
) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    store = AuditStore(r, keys)

    def flush(w: StepWrites) -> None:
        w.ops.append(("DEL", keys.audit, []))

    with pytest.raises(redis.exceptions.ResponseError, match="not a step write"):
        await store.commit([entry(1)], subject="x", expect=0, extra=flush)
    assert await r.llen(keys.audit) == 0  # refused before anything was written
    await r.aclose()


class Trips:
    """Counts the commands and pipelines sent to Redis (one each per round trip)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        send = Connection.send_packed_command

        async def counted(conn: Connection, command: Any, check_health: bool = True) -> None:
            self.count += 1
            await send(conn, command, check_health)

        monkeypatch.setattr(Connection, "send_packed_command", counted)

    def since(self, start: int) -> int:
        return self.count - start


async def test_a_store_that_knows_the_head_commits_in_one_round_trip(
    site: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first commit reads the head (two round trips); the next ones, files and all, are
    one; a head moved by another daemon costs one more and is chained to; a trail restored
    to an older head is read again instead of refusing every later step."""
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    ours, theirs = AuditStore(r, keys), AuditStore(r, keys)
    await r.ping()
    trips = Trips(monkeypatch)

    def pool(n: int) -> Callable[[StepWrites], None]:
        return lambda w: w.file(keys.poolfile(f"p{n}"), f"pool {n}\n")

    start = trips.count
    await ours.commit([entry(1)], subject="a", expect=0, extra=pool(1))
    assert trips.since(start) == 2
    start = trips.count
    await ours.commit([entry(2)], subject="a", expect=1, extra=pool(2))
    assert trips.since(start) == 1
    await theirs.commit([entry(3)], subject="b", expect=0)  # another daemon moves the head
    start = trips.count
    got = await ours.commit([entry(4)], subject="a", expect=2, extra=pool(4))
    assert trips.since(start) == 2  # answered with the new head, chained to it
    assert got[0].seq == 4
    assert await r.get(keys.poolfile("p4")) == "pool 4\n"
    assert (await ours.verify()).ok
    # restored from a backup taken before: the trail's head is now older than ours knows
    await r.delete(keys.audit, ours.ledger_key("a"), ours.ledger_key("b"))
    early = Entry(T0 - dt.timedelta(hours=1), "desk", Kind.PICK, {"n": 0})
    await theirs.commit([early], subject="b", expect=0)
    later = Entry(T0 - dt.timedelta(minutes=30), "desk", Kind.PICK, {"n": 5})
    got = await ours.commit([later], subject="a", expect=0)  # older than ours' last: read again
    assert got[0].seq == 2
    assert (await ours.verify()).ok
    await r.aclose()


async def test_a_commit_loads_its_script_where_redis_does_not_hold_it(
    site: str, redis_url: str
) -> None:
    """After a Redis restart the script is gone: the files-and-script round trip loads it
    and commits (the files were written with it)."""
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    store = AuditStore(r, keys)
    await store.commit([entry(1)], subject="a", expect=0)  # knows the head now
    real = store._commit.sha
    store._commit.sha = "0" * 40  # what Redis answers for a script it does not hold
    got = await store.commit(
        [entry(2)], subject="a", expect=1, extra=lambda w: w.file(keys.poolfile("f"), "file\n")
    )
    assert got[0].seq == 2
    assert store._commit.sha == real  # loaded again
    assert await r.get(keys.poolfile("f")) == "file\n"
    assert (await store.verify()).ok
    await r.aclose()
