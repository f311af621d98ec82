"""Benchmark: `GET /floor/active?kind=egm` on a floor of 8,000 active players, through a
running daemon's HTTP API, beside a bare baseline: the raw Redis reads of the same keys
(the active-index set, the active sets, every session hash, pipelined) by a bare client.

    .venv/bin/python loadtests/bench_floor.py [--players 8000] [--reads 20] [--limit 500]

Set-up (not timed): a throwaway site on the Redis given, a Mosquitto of its own, the
daemon in this process, and the players' sessions written as the ingest writes them.
Timed: whole answers (no `limit`), one page of `--limit` players, and the bare reads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import httpx
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.infra.keys import Keys
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port

AREAS = ("main", "smoking", "prive")


async def _seat_players(r: aioredis.Redis, keys: Keys, players: int) -> None:
    """Sessions, active sets and indexes of `players` carded-in EGM players (apply.lua's)."""
    base_ms = int(dt.datetime(2025, 10, 25, 18, tzinfo=dt.UTC).timestamp() * 1000)
    async with r.pipeline(transaction=False) as pipe:
        for n in range(players):
            card, device, area = f"M{n:07d}", f"EGM-{n:05d}", AREAS[n % 3]
            since = base_ms + n * 97
            pipe.hset(
                keys.session(card),
                mapping={
                    "slot": device,
                    "device": device,
                    "seat": "",
                    "kind": "egm",
                    "area": area,
                    "since": since,
                    "last_play": since + 5_000,
                    "last_seen": since + 6_000,
                    "day": "2025-10-25",
                },
            )
            pipe.zadd(keys.active("egm", area), {card: since})
            pipe.zadd(keys.lastseen, {card: since + 6_000})
        for area in AREAS:
            pipe.sadd(keys.active_index, f"active:egm:{area}")
        await pipe.execute()


async def _bare(r: aioredis.Redis, keys: Keys) -> int:
    rels = cast(set[str], await r.smembers(keys.active_index))
    cards: list[str] = []
    for rel in sorted(rels):
        cards += cast(list[str], await r.zrange(keys.base + rel, 0, -1))
    async with r.pipeline(transaction=False) as pipe:
        for card in cards:
            pipe.hgetall(keys.session(card))
        return len(await pipe.execute())


async def _median_ms(work: Callable[[], Awaitable[object]], reads: int) -> float:
    times = []
    for _ in range(reads):
        start = time.perf_counter()
        await work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--players", type=int, default=8000)
    ap.add_argument("--reads", type=int, default=20)
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--redis-url", default=Settings().redis_url)
    args = ap.parse_args()
    site = f"bench-floor-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as tmp, LocalMosquitto(Path(tmp) / "mq") as broker:
        empty = Path(tmp) / "promotions"
        empty.mkdir()
        settings = Settings(
            site=site,
            redis_url=args.redis_url,
            mqtt_url=broker.url,  # type: ignore[attr-defined]
            http_port=free_port(),
            promotions=empty,
        )
        r = aioredis.Redis.from_url(args.redis_url, decode_responses=True)
        keys = Keys(settings.key_prefix, site)
        try:
            await _seat_players(r, keys, args.players)
            async with Service(settings) as service, asyncio.TaskGroup() as tg:
                tg.create_task(service.run(install_signal_handlers=False))
                crew = await service.tokens.issue(
                    role=Role.CREW,
                    name="bench",
                    now=service.clock.now(),
                    valid_for=dt.timedelta(hours=1),
                )
                url = f"http://127.0.0.1:{settings.http_port}"
                headers = {"Authorization": f"Bearer {crew.token}"}
                async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
                    for _ in range(200):
                        with contextlib.suppress(httpx.TransportError):
                            if (await http.get("/health")).status_code == 200:
                                break
                        await asyncio.sleep(0.05)
                    whole = await http.get("/floor/active?kind=egm")
                    assert len(whole.json()) == args.players, len(whole.json())

                    async def route() -> None:
                        (await http.get("/floor/active?kind=egm")).raise_for_status()

                    async def page() -> None:
                        got = await http.get(f"/floor/active?kind=egm&limit={args.limit}")
                        got.raise_for_status()

                    bare_ms = await _median_ms(lambda: _bare(r, keys), args.reads)
                    route_ms = await _median_ms(route, args.reads)
                    page_ms = await _median_ms(page, args.reads)
                service.stop()
        finally:
            found = [k async for k in r.scan_iter(match=f"{keys.base}*", count=1000)]
            if found:
                await r.delete(*found)
            await r.aclose()
    print(f"{args.players:,} active EGM players, median of {args.reads} reads")
    print(f"bare Redis reads of the same keys: {bare_ms:8.1f} ms")
    print(
        f"GET /floor/active?kind=egm:        {route_ms:8.1f} ms  ({route_ms / bare_ms:.1f} x bare)"
    )
    print(
        f"  one page, limit={args.limit}:            {page_ms:8.1f} ms  "
        f"({page_ms / bare_ms:.2f} x bare)"
    )


if __name__ == "__main__":
    asyncio.run(main())
