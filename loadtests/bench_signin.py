"""Benchmark: staff sign-in (the argon2id PIN check included) beside a bare token check, in
the same run, through the daemon's HTTP application (FastAPI in process, on the Redis of
BONUSD_REDIS_URL; no broker needed).

    .venv/bin/python loadtests/bench_signin.py [--count 200] [--at-once 1 4 8]

Set-up (not timed): a throwaway site with 16 staff accounts (PINs of 8 digits; requests
take them in turn, as different people signing in at once: one person's tries at once
would count towards that staff number's lock, counted before each check) and one desk
token. Timed, for each `--at-once` level (that many requests in flight together):
- sign-in: `POST /staff/sign-in` with the right PIN (the argon2id check runs in a thread:
  `bonusd.access.pins`, 24 MiB, 3 passes, 1 lane), answer 200 with the session cookie;
- token check: `GET /staff/me` with the desk token (the same route stack, one Redis step
  and no hashing).
Printed: p50, p99 and max of each, in milliseconds. The site's keys are deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable

import httpx
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.api.context import ApiContext
from bonusd.service.root import Service
from bonusd.settings import Settings

BASE = "http://bonusd.bench"
PIN = "73915284"


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):6.1f}  p99 {p99:6.1f}  max {ordered[-1]:6.1f} ms"


async def timed(count: int, at_once: int, call: Callable[[], Awaitable[int]]) -> list[float]:
    """`count` calls, `at_once` in flight; each one's wall time (ms). Every answer is 200."""
    gate = asyncio.Semaphore(at_once)
    out: list[float] = []

    async def one() -> None:
        async with gate:
            started = time.perf_counter()
            status = await call()
            out.append((time.perf_counter() - started) * 1000)
            assert status == 200, status

    await asyncio.gather(*(one() for _ in range(count)))
    return out


async def bench(count: int, levels: list[int]) -> None:
    site = f"bench{uuid.uuid4().hex[:8]}"
    redis_url = os.environ.get("BONUSD_REDIS_URL", "redis://127.0.0.1:6379/0")
    settings = Settings(site=site, redis_url=redis_url, key_prefix="bench")
    service = Service(settings)  # the HTTP application only: nothing is started
    ctx: ApiContext = service.app.state.ctx
    now = service.clock.now()
    numbers = [str(1000 + n) for n in range(16)]
    for number in numbers:
        await ctx.sessions.staff.add(
            number=number, name=f"Bench Person {number}", role="desk", pin=PIN, now=now
        )
    turn = iter(range(10**9))
    desk = await ctx.tokens.issue(
        role=Role.DESK, name="bench", now=now, valid_for=dt.timedelta(days=1)
    )
    transport = httpx.ASGITransport(app=service.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:

            async def sign_in() -> int:
                body = {"staff": numbers[next(turn) % len(numbers)], "pin": PIN}
                r = await http.post("/staff/sign-in", json=body, headers={"Origin": BASE})
                http.cookies.clear()
                return r.status_code

            async def check() -> int:
                headers = {"Authorization": f"Bearer {desk.token}"}
                return (await http.get("/staff/me", headers=headers)).status_code

            await timed(10, 1, sign_in)  # warm up: imports, the thread pool, connections
            for at_once in levels:
                signed = await timed(count, at_once, sign_in)
                checked = await timed(count, at_once, check)
                print(f"{at_once} at once  sign-in      {percentiles(signed)}")
                print(f"{at_once} at once  token check  {percentiles(checked)}")
    finally:
        r = aioredis.Redis.from_url(redis_url)
        keys = [k async for k in r.scan_iter(match=f"bench:{{{site}}}:*", count=1000)]
        if keys:
            await r.delete(*keys)
        await r.aclose()
        await service.redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=200, help="requests per measurement")
    parser.add_argument("--at-once", type=int, nargs="+", default=[1, 4, 8])
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPU(s); {args.count} requests per line")
    asyncio.run(bench(args.count, args.at_once))


if __name__ == "__main__":
    main()
