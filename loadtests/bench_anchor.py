"""The daily audit digest's read of the trail: what Python allocates and how long it takes
to take one gaming day's digest of a long trail, read in batches of at most 500 records
and about 1 MiB of JSON (`bonusd.audit.anchor.trail_digests`, what the leader and
`GET /audit/digest` do) beside the same digest of the trail read whole
(`AuditStore.records`, as before).

    .venv/bin/python loadtests/bench_anchor.py [--records 20000] [--passed-over 300]

The trail is written to a throwaway site in the Redis at BONUSD_REDIS_URL (default
redis://127.0.0.1:6379/0): `--records` records half a minute apart, one in ten a redraw
that passed over `--passed-over` tickets (the rest small). Each way runs twice untimed by
tracemalloc (the wall time, median) and once traced (the peak of Python's allocations).
Both ways must give the same digest. The site's keys are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import statistics
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from zoneinfo import ZoneInfo

import redis.asyncio as aioredis

from bonusd.audit.anchor import trail_digests
from bonusd.audit.chain import AuditLog, Kind
from bonusd.audit.digest import DayDigest, day_digest
from bonusd.audit.store import BATCH, AuditStore
from bonusd.clocks.clock import GamingCalendar
from bonusd.infra.keys import Keys

ZONE = ZoneInfo("Africa/Johannesburg")
CALENDAR = GamingCalendar(ZONE, dt.time(8, 0))
START = dt.datetime(2026, 10, 1, 9, tzinfo=ZONE)


def _trail(records: int, passed_over: int) -> list[str]:
    skipped = [
        {"counter": n, "ticket": 7 * n, "card": f"C{n:06d}", "reason": "already_picked"}
        for n in range(passed_over)
    ]
    log = AuditLog()
    for n in range(records):
        payload = {"n": n, "passed_over": skipped if n % 10 == 0 else []}
        at = START + dt.timedelta(seconds=30 * n)
        log.append(at=at, actor="scheduler", kind=Kind.REDRAW, payload=payload)
    return [rec.to_json() for rec in log.records]


async def _measure(take: Callable[[], Awaitable[DayDigest]]) -> tuple[DayDigest, float, float]:
    """The digest, the median wall seconds of two untraced runs, the traced peak in MB."""
    times = []
    for _ in range(2):
        started = time.perf_counter()
        digest = await take()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    await take()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return digest, statistics.median(times), peak


async def main(args: argparse.Namespace) -> None:
    url = os.environ.get("BONUSD_REDIS_URL", "redis://127.0.0.1:6379/0")
    redis = aioredis.Redis.from_url(url, decode_responses=True)
    keys = Keys("bench", f"anchor-{uuid.uuid4().hex[:6]}")
    try:
        rows = _trail(args.records, args.passed_over)
        for at in range(0, len(rows), 1000):
            await redis.rpush(keys.audit, *rows[at : at + 1000])
        audit = AuditStore(redis, keys)
        last = CALENDAR.gaming_day(START + dt.timedelta(seconds=30 * (args.records - 1)))
        day = last - dt.timedelta(days=1)  # the last whole day of the trail
        print(f"trail: {len(rows):,} records, {sum(map(len, rows)) / 1e6:.1f} MB of JSON")

        async def whole() -> DayDigest:
            return day_digest(await audit.records(), site="bench", day=day, calendar=CALENDAR)

        async def batched() -> DayDigest:
            return (await trail_digests(audit, [day], site="bench", calendar=CALENDAR))[0]

        results = {
            name: await _measure(way) for name, way in (("whole", whole), ("batches", batched))
        }
        if results["whole"][0] != results["batches"][0]:
            raise SystemExit("the two ways gave different digests")
        print(f"digest of {day}: {results['whole'][0].chain}")
        for name, (_, took, peak) in results.items():
            how = f"batches (≤{BATCH}, ~1 MiB)" if name == "batches" else "the trail whole"
            print(f"  {how:>24}: {took:6.2f} s, Python's allocations peak {peak:7.1f} MB")
        ratio = results["whole"][2] / results["batches"][2]
        print(f"  peak, whole / batches: {ratio:.1f}x")
    finally:
        await redis.delete(keys.audit)
        await redis.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records [20000]")
    parser.add_argument("--passed-over", type=int, default=300, help="per redraw [300]")
    asyncio.run(main(parser.parse_args()))
