"""Benchmark: the promotions desk's draw summary on a 470,000-member site, and how long it
holds the daemon's event loop, beside a bare baseline (the raw Redis reads of the same keys).

    .venv/bin/python loadtests/bench_summary.py [--members 470000] [--with-play 40000]

A ticker on the same event loop wakes every millisecond while the summary runs; its
longest gap is how long anything else on the loop (ingest, websockets, HTTP) waited.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import uuid
from pathlib import Path

import redis.asyncio as aioredis

from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DRAW = "saturday-2025-10-25"
TIERS = ("10", "J", "Q", "K", "A")


async def _populate(r: aioredis.Redis, store: PromotionStore, members: int, with_play: int) -> None:
    rng = random.Random(7)
    keys = store.keys
    cards = [f"C{n:07d}" for n in range(members)]
    for at in range(0, members, 20_000):
        chunk = cards[at : at + 20_000]
        index = {
            c: f"{rng.choice(TIERS)}|{rng.randint(0, 1)}|0|1970-01-0{rng.randint(1, 9)}|"
            for c in chunk
        }
        await r.hset(keys.member_index, mapping=index)  # type: ignore[arg-type]
    played = rng.sample(cards, with_play)
    for draw in (DRAW,):
        cols: dict[str, dict[str, int]] = {
            f: {} for f in ("slots_points", "slots_plays", "visits", "slots_visits")
        }
        for c in played:
            cols["slots_points"][c] = rng.randint(1, 40_000)
            cols["slots_plays"][c] = rng.randint(1, 400)
            cols["visits"][c] = 1
            cols["slots_visits"][c] = 1
        for name, values in cols.items():
            await r.hset(
                store.keys.window_field("montecasino-festa-fortuna", draw, name), mapping=values
            )  # type: ignore[arg-type]
        act = dict.fromkeys(played[: with_play // 3], "kiosk")
        await r.hset(store.keys.activations("montecasino-festa-fortuna", draw), mapping=act)  # type: ignore[arg-type]


async def _held(work: object) -> tuple[float, float]:
    """Run `work` (a coroutine) beside a 1 ms ticker: (seconds taken, longest ticker gap)."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    await work  # type: ignore[misc]
    took = time.perf_counter() - start
    done.set()
    await task
    return took, max(gaps)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=470_000)
    ap.add_argument("--with-play", type=int, default=40_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--redis-url", default=Settings().redis_url)
    args = ap.parse_args()
    r = aioredis.Redis.from_url(args.redis_url, decode_responses=True)
    site = f"bench-{uuid.uuid4().hex[:8]}"
    keys = Keys("bonusd", site)
    festa = load_promotion(ROOT / "promotions" / "montecasino-festa-fortuna.toml")
    store = PromotionStore(r, keys, [festa])
    summaries = DrawSummaries(store)
    try:
        await _populate(r, store, args.members, args.with_play)
        raw_keys = [
            store.keys.window_field(festa.id, DRAW, f)
            for f in ("slots_points", "slots_plays", "visits", "slots_visits")
        ]

        async def bare() -> None:
            async with r.pipeline(transaction=False) as pipe:
                pipe.hkeys(store.keys.activations(festa.id, DRAW))
                for k in raw_keys:
                    pipe.hgetall(k)
                await pipe.execute()

        rows = []
        for _ in range(args.runs):
            rows.append((await _held(bare()), await _held(summaries.summary(festa.id, DRAW))))
        b_took = statistics.median(x[0][0] for x in rows)
        b_gap = statistics.median(x[0][1] for x in rows)
        s_took = statistics.median(x[1][0] for x in rows)
        s_gap = statistics.median(x[1][1] for x in rows)
        print(f"{args.members:,} members, {args.with_play:,} with play, median of {args.runs} runs")
        print(
            f"bare reads of the draw's hashes: {b_took * 1000:7.1f} ms, "
            f"loop held {b_gap * 1000:6.1f} ms at most"
        )
        print(
            f"summary:                         {s_took * 1000:7.1f} ms, "
            f"loop held {s_gap * 1000:6.1f} ms at most"
        )
        print(f"ratio summary / bare: time {s_took / b_took:.1f}, loop hold {s_gap / b_gap:.1f}")
    finally:
        found = [k async for k in r.scan_iter(match=f"bonusd:{{{site}}}:*", count=1000)]
        if found:
            await r.delete(*found)
        await r.aclose()


if __name__ == "__main__":
    asyncio.run(main())
