"""The daemon's reads of a long audit trail (`AuditStore.reads`, docs/fairness.md "Reading
the trail"): a page of the desk's Audit tab, one draw's records for its report or check,
a gaming day's digest and a text search, each beside the whole walk of the chain the same
read made before (the baseline) and beside a bare read of the same records from Redis
(the floor; for the digest, its last record and the day's first; for the search, every
record's JSON read and none parsed).

    .venv/bin/python loadtests/bench_trail.py [--records 20000] [--draws 200] [--runs 7]

The trail is written to a throwaway site in the Redis at BONUSD_REDIS_URL (default
redis://127.0.0.1:6379/0): `--records` records half a minute apart, each of one of
`--draws` draws in turn, one in ten a redraw that passed over `--passed-over` tickets.
The daemon's first read walks the chain once (timed once); each read after it is timed
`--runs` times (the median), with one record appended before each run, as on a live
floor. Every read must give the records and the check the whole walk gives. The site's
keys are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import os
import statistics
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any
from zoneinfo import ZoneInfo

import redis.asyncio as aioredis

from bonusd.audit.anchor import trail_digests
from bonusd.audit.chain import AuditLog, AuditRecord, ChainWalk, Kind, from_jsonl
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import GamingCalendar, ManualClock
from bonusd.infra.keys import Keys

START = dt.datetime(2026, 10, 1, 7, tzinfo=dt.UTC)
CALENDAR = GamingCalendar(ZoneInfo("Africa/Johannesburg"), dt.time(8, 0))
PAGE = 100  # the desk's Audit tab asks for 100 records
Result = tuple[list[int], str]  # the seqs read and the chain's check


def _trail(args: argparse.Namespace) -> list[str]:
    skipped = [{"ticket": 7 * n, "card": f"C{n:06d}"} for n in range(args.passed_over)]
    log = AuditLog()
    for n in range(args.records):
        draw = f"bench.d{n % args.draws:04d}"
        redraw = n % 10 == 0
        payload = {"draw_id": draw, "card": f"C{n:07d}", "passed_over": skipped if redraw else []}
        at = START + dt.timedelta(seconds=30 * n)
        log.append(
            at=at, actor="scheduler", kind=Kind.REDRAW if redraw else Kind.PICK, payload=payload
        )
    return [rec.to_json() for rec in log.records]


async def _whole_page(store: AuditStore, needle: str | None) -> Result:
    """What `GET /audit` did before: the whole chain walked, the newest matches kept."""
    walk, found = ChainWalk(), deque[AuditRecord](maxlen=PAGE)
    async for batch in store.batches():
        walk.add(batch)
        found.extend(r for r in batch if needle is None or needle in r.to_json().lower())
    return [r.seq for r in reversed(found)], str(walk.check)


async def _whole_draw(store: AuditStore, draw: str) -> Result:
    """What a draw's report and check did before: the whole chain walked (`Picked`)."""
    picked = await store.draw(draw)
    return [r.seq for r in picked.of(draw)], str(picked.walk.check)


async def _whole_digest(store: AuditStore, day: dt.date) -> Result:
    """What `GET /audit/digest` did before: the day's digest folded from the whole trail."""
    [digest] = await trail_digests(store, [day], site="bench", calendar=CALENDAR)
    return [digest.last_seq, digest.records], digest.chain


async def _new_digest(store: AuditStore, day: dt.date) -> Result:
    digest = await store.reads.day_digest(day, site="bench", calendar=CALENDAR)
    if digest is None:
        raise SystemExit("the walk gave no digest of an intact trail")
    return [digest.last_seq, digest.records], digest.chain


async def _bare(redis: aioredis.Redis, key: str, seqs: list[int]) -> Result:
    """The same records read from Redis and parsed, nothing checked: the floor of a read."""
    async with redis.pipeline(transaction=False) as pipe:
        for seq in seqs:
            pipe.lindex(key, seq - 1)
        rows = await pipe.execute()
    return [r.seq for r in from_jsonl("\n".join(rows))], ""


async def _bare_rows(redis: aioredis.Redis, key: str) -> Result:
    """Every record's JSON read from Redis, 500 a round trip, none parsed: the floor of a
    search that must look at every record."""
    length = await redis.llen(key)
    for start in range(0, length, 500):
        await redis.lrange(key, start, start + 499)
    return [], ""


async def _median(
    read: Callable[[], Awaitable[Any]], grow: Callable[[], Awaitable[None]], runs: int
) -> float:
    times = []
    for _ in range(runs):
        await grow()
        started = time.perf_counter()
        await read()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main(args: argparse.Namespace) -> None:
    url = os.environ.get("BONUSD_REDIS_URL", "redis://127.0.0.1:6379/0")
    redis = aioredis.Redis.from_url(url, decode_responses=True)
    keys = Keys("bench", f"trail-{uuid.uuid4().hex[:6]}")
    clock = ManualClock(START)
    try:
        rows = _trail(args)
        for at in range(0, len(rows), 1000):
            await redis.rpush(keys.audit, *rows[at : at + 1000])
        store = AuditStore(redis, keys, clock=clock)
        print(f"trail: {len(rows):,} records, {sum(map(len, rows)) / 1e6:.1f} MB of JSON")
        started = time.perf_counter()
        await store.reads.checked()
        print(
            f"the daemon's first read (the whole walk, once): {time.perf_counter() - started:.2f} s"
        )
        appended = [len(rows)]

        async def grow() -> None:  # a record arrives between reads, as on a live floor
            at = START + dt.timedelta(seconds=30 * appended[0])
            await store.append(at=at, actor="desk", kind=Kind.OVERRIDE, payload={"n": appended[0]})
            appended[0] += 1

        draw, needle = "bench.d0007", "c0000042"
        day = CALENDAR.gaming_day(START + dt.timedelta(seconds=15 * args.records))
        ways: dict[str, tuple[Callable[[], Awaitable[Result]], Callable[[], Awaitable[Result]]]] = {
            f"a page of the Audit tab ({PAGE} newest)": (
                lambda: _whole_page(store, None),
                lambda: _new_page(store, None),
            ),
            f"one draw's records ({draw})": (
                lambda: _whole_draw(store, draw),
                lambda: _new_draw(store, draw),
            ),
            f"a gaming day's digest ({day})": (
                lambda: _whole_digest(store, day),
                lambda: _new_digest(store, day),
            ),
            f"a text search ('{needle}', found near the start)": (
                lambda: _whole_page(store, needle),
                lambda: _new_page(store, needle),
            ),
        }
        print(f"{'read':>48}  {'whole walk':>10}  {'now':>9}  {'bare':>9}  whole/now  now/bare")
        for name, (before, now) in ways.items():
            await grow()
            old, new = await before(), await now()
            if old != new:
                raise SystemExit(f"{name}: the reads differ: {old[1]} / {new[1]}")
            bare = functools.partial(_bare, redis, keys.audit, new[0])
            if "digest" in name:  # its last record and the day's first
                seqs = [new[0][0], new[0][0] - new[0][1] + 1]
                bare = functools.partial(_bare, redis, keys.audit, sorted(seqs))
            if "search" in name:
                bare = functools.partial(_bare_rows, redis, keys.audit)
            took_old = await _median(before, grow, max(1, args.runs // 3))
            took_new = await _median(now, grow, args.runs)
            took_bare = await _median(bare, grow, args.runs)
            times = f"{took_old * 1e3:8.1f} ms {took_new * 1e3:7.2f} ms {took_bare * 1e3:7.2f} ms"
            ratios = f"{took_old / took_new:8.0f}x  {took_new / took_bare:7.1f}x"
            print(f"{name:>48}  {times}  {ratios}")
    finally:
        await redis.delete(keys.audit)
        await redis.aclose()


async def _new_page(store: AuditStore, needle: str | None) -> Result:
    match = None if needle is None else (lambda rec: needle in rec.to_json().lower())
    part = await store.reads.page(PAGE, match=match, hint=needle)
    return [r.seq for r in part.records], str(part.check)


async def _new_draw(store: AuditStore, draw: str) -> Result:
    part = await store.reads.draw(draw)
    return [r.seq for r in part.records], str(part.check)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records [20000]")
    parser.add_argument("--draws", type=int, default=200, help="draws they belong to [200]")
    parser.add_argument("--passed-over", type=int, default=300, help="per redraw [300]")
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each new read [7]")
    asyncio.run(main(parser.parse_args()))
