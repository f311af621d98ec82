"""Standings benchmark: recompute every standing and leaderboard of a promotion for a
large member base, and time leaderboard reads, beside bare Redis baselines.

    python loadtests/bench_standings.py [--members 200000] [--reads 500]

Set-up (not timed): the Golden Horse promotion (moved to a throwaway site), N members
with a realistic tier mix, and for each of its four draws the per-member window totals
that a month of play leaves in Redis (points per side, plays, visits, when each total was
reached, the live boards). The totals are written directly: replaying a month of per-game
telemetry for 200,000 members would be hundreds of millions of events.

Timed: for each draw, every member's standing (qualification, tickets, breakdown) from
Redis, and each of its leaderboards ranked in full with exclusions applied; then reads of
the published board and of the live top 10. Baselines in the same run: fetching the same
hashes with bare HGETALLs, decoded into dicts (redis-py's default) and raw (flat lists of
bytes, nothing decoded: the floor of the recompute's reads), and one bare Redis round
trip (PING). The recompute and both fetches take turns, three rounds; while the
recompute runs, a ticker measures the longest the event loop was held. Last, one
recompute's steps timed one after the other: where its time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import time
import uuid
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import numpy as np
import redis.asyncio as aioredis
from redis.typing import EncodableT, FieldT
from rich.console import Console
from rich.progress import track
from rich.table import Table

from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.promotions import Side, parse_promotion
from bonusd.promotions.bulk import bulk_standings, needed_fields
from bonusd.promotions.columns import (
    NEVER_REACHED,
    DrawColumns,
    MemberIndex,
    board_order,
    tied_rows,
)
from bonusd.promotions.rawread import raw_client, read_draw, read_head, read_values
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.registry.records import Member, Tier
from bonusd.settings import Settings

_T = TypeVar("_T")
GH = "golden-horse-mega-points-chase"
PROJECT = Path(__file__).resolve().parent.parent
console = Console()


async def _setup(r: aioredis.Redis, keys: Keys, n: int, site: str) -> PromotionStore:
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    promotion = parse_promotion(
        text.replace('site = "golden-horse"', f'site = "{site}"'), source=GH
    )
    rng = np.random.default_rng(7)
    tiers = rng.choice(["10", "J", "Q", "K", "A"], size=n, p=[0.4, 0.3, 0.18, 0.08, 0.04])
    app = rng.random(n) < 0.35
    excluded = rng.random(n) < 0.005
    visits = rng.integers(1, 21, size=n)
    slots = (rng.lognormal(9.3, 1.1, size=n)).astype(int)
    tables = np.where(rng.random(n) < 0.25, rng.lognormal(9.0, 1.2, size=n).astype(int), 0)
    reached = 1_790_000_000_000 + rng.integers(0, 30 * 86_400_000, size=n)
    cards = [f"8{i:09d}" for i in range(n)]
    members = [
        Member(
            card=cards[i],
            name=f"Member {i}",
            tier=Tier(str(tiers[i])),
            app_user=bool(app[i]),
            date_of_birth=dt.date(1980, 1, 1),
            excluded=bool(excluded[i]),
        )
        for i in range(n)
    ]
    floor = FloorStore(
        r, keys, dedup_ttl_s=3600, deadletter_maxlen=100, deadletter_payload_bytes=100
    )
    for start in track(range(0, n, 20_000), description="importing members"):
        await floor.import_members(members[start : start + 20_000])
    has_tables = tables > 0
    columns = {
        "slots_points": slots,
        "slots_plays": visits * 200,
        "slots_visits": visits,
        "slots_reached": reached,
        "visits": visits,
        "tables_points": tables,
        "tables_plays": np.where(has_tables, 4, 0),
        "tables_visits": np.where(has_tables, 1, 0),
        "tables_reached": np.where(has_tables, reached - 1000, 0),
    }
    for draw in track(promotion.draw_list, description="writing window totals"):

        def head(kind: str, draw_id: str = draw.id) -> str:
            return f"{keys.base}{kind}:{promotion.id}:{draw_id}"

        for start in range(0, n, 20_000):
            part = range(start, min(n, start + 20_000))
            async with r.pipeline(transaction=False) as pipe:
                for name, values in columns.items():
                    mapping: dict[FieldT, EncodableT] = {
                        cards[i]: int(values[i]) for i in part if values[i]
                    }
                    if mapping:
                        pipe.hset(f"{head('pwf')}:{name}", mapping=mapping)
                pipe.sadd(head("pm"), *(cards[i] for i in part))
                pipe.zadd(f"{head('lb')}:slots", {cards[i]: int(slots[i]) for i in part})
                board = {cards[i]: int(tables[i]) for i in part if tables[i]}
                if board:
                    pipe.zadd(f"{head('lb')}:tables", board)
                await pipe.execute()
    return PromotionStore(r, keys, [promotion])


async def _bare_fetch(r: aioredis.Redis, keys: Keys, store: PromotionStore) -> float:
    """The data a recompute of all four draws reads, fetched bare: the member index once,
    then per draw the columns its rules need (see `bulk.needed_fields`)."""
    t0 = time.perf_counter()
    await r.hgetall(keys.member_index)
    for draw in store.promotion(GH).draw_list:
        sides = draw.qualification.sides if draw.leaderboard else []
        for name in sorted(needed_fields(draw) | {"visits"} | {f"{s}_points" for s in sides}):
            await r.hgetall(f"{keys.base}pwf:{GH}:{draw.id}:{name}")
    return time.perf_counter() - t0


async def _raw_fetch(raw: aioredis.Redis, keys: Keys, store: PromotionStore) -> float:
    """`_bare_fetch` on a client that decodes nothing and keeps each HGETALL reply as
    the flat list Redis sends (RESP2): no `str`, no dict."""
    return await _bare_fetch(raw, keys, store)


def _raw_client(url: str) -> aioredis.Redis:
    raw = aioredis.Redis.from_url(url, decode_responses=False, protocol=2)
    raw.set_response_callback("HGETALL", lambda response, **_: response)
    return raw


async def _held(work: Awaitable[_T]) -> tuple[_T, float, float]:
    """`work`'s result, its time (s), and the longest the event loop was held meanwhile
    (ms): a ticker asks to run every millisecond and notes how late it got to."""
    longest = 0.0

    async def tick() -> None:
        nonlocal longest
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(0.001)
            longest = max(longest, time.perf_counter() - t0 - 0.001)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    result = await work
    took = time.perf_counter() - t0
    ticker.cancel()
    return result, took, longest * 1000


async def _rounds(
    r: aioredis.Redis, raw: aioredis.Redis, keys: Keys, store: PromotionStore
) -> tuple[dict[str, dict[str, int]], dict[str, list[float]]]:
    """Three rounds of: the decoded fetch, the raw fetch, the recompute; each with the
    longest event-loop hold while it ran."""
    times: dict[str, list[float]] = {}
    result: dict[str, dict[str, int]] = {}
    for _ in range(3):
        for name, fetch in (
            ("bare", _bare_fetch(r, keys, store)),
            ("raw", _raw_fetch(raw, keys, store)),
        ):
            took, _, held = await _held(fetch)
            times.setdefault(name, []).append(took)
            times.setdefault(f"{name} held", []).append(held)
        result, took, held = await _held(DrawSummaries(store).recompute(GH))
        times.setdefault("recompute", []).append(took)
        times.setdefault("recompute held", []).append(held)
        console.print(
            ", ".join(f"{k} {v[-1]:.2f}" for k, v in times.items() if "held" not in k)
            + " (s); loop held at most "
            + ", ".join(f"{k.split()[0]} {v[-1]:.0f}" for k, v in times.items() if "held" in k)
            + " (ms)"
        )
    return result, times


async def _split(r: aioredis.Redis, keys: Keys, store: PromotionStore) -> dict[str, float]:
    """Where a recompute's time goes: its steps timed one after the other, seconds each
    (the recompute itself reads the next draw while computing the last: its wall time is
    less than the sum)."""
    promotion = store.promotion(GH)
    spent: dict[str, float] = {}

    @contextmanager
    def step(name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0

    async with raw_client(r) as raw:
        with step("read: member index"):
            since, reply = await read_head(raw, keys, with_index=True)
        with step("parse the member index"):
            index = MemberIndex.parse(reply or [])
        for draw in promotion.draw_list:
            with step("read: each draw's columns"):
                replies = await read_draw(raw, keys, promotion.id, draw)
            with step("columns from the replies"):
                columns = DrawColumns.build(replies, since)
            with step("the draw's members from the index"):
                members = index.of(columns.cards)
            with step("bulk rules"):
                bulk = bulk_standings(promotion, draw, members, columns.stats)
            for side in draw.qualification.sides if draw.leaderboard else []:
                points = columns.stats.points(side)
                with step("ranking (ties, order)"):
                    chosen, tied = tied_rows(points, bulk.eligible)
                many = len(tied) > len(columns.cards) // 10
                key = keys.window_field(promotion.id, draw.id, f"{side.value}_reached")
                with step("read: reached instants of tied totals"):
                    reached = await read_values(
                        raw, key, None if many else [columns.cards[n] for n in tied]
                    )
                with step("reached instants as a column"):
                    instants = columns.column(*reached, absent=NEVER_REACHED)
                with step("ranking (ties, order)"):
                    board_order(columns.cards, chosen, points, instants)
    return spent


async def _recompute_reference(store: PromotionStore, draw_id: str) -> tuple[float, int, int]:
    """One draw member by member with the reference rules (every standing explained)."""
    t0 = time.perf_counter()
    standings = await store.all_standings(GH, draw_id)
    ranked = 0
    _, draw = store.draw(GH, draw_id)
    if draw.leaderboard:
        for side in Side:
            ranked += len(await store.full_board(GH, draw_id, side))
    return time.perf_counter() - t0, len(standings), ranked


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def _recompute_rows(
    table: Table, result: dict[str, dict[str, int]], times: dict[str, list[float]]
) -> None:
    standings = sum(x["standings"] for x in result.values())
    places = sum(x["board_places"] for x in result.values())
    total, bare, raw_fetch = (statistics.median(times[k]) for k in ("recompute", "bare", "raw"))
    table.add_row(
        f"recompute all 4 draws: {standings:,} standings, {places:,} board places (s, median of 3)",
        f"{total:.2f}",
        f"{bare:.2f} (fetch into dicts)",
        f"{total / bare:.2f}x",
    )
    table.add_row(
        "  the same beside the raw fetch (flat bytes, nothing decoded)",
        "",
        f"{raw_fetch:.2f} (raw fetch)",
        f"{total / raw_fetch:.2f}x",
    )
    held = {k: max(times[f"{k} held"]) for k in ("recompute", "bare", "raw")}
    table.add_row(
        "  longest event-loop hold while it runs (ms, worst of 3)",
        f"{held['recompute']:.0f}",
        f"{held['bare']:.0f} (fetch into dicts), {held['raw']:.0f} (raw)",
        "",
    )


def _split_table(spent: dict[str, float]) -> Table:
    split = Table(title="where a recompute's time goes: its steps one after the other")
    split.add_column("step")
    split.add_column("s", justify="right")
    split.add_column("share", justify="right")
    for name, took in sorted(spent.items(), key=lambda item: -item[1]):
        split.add_row(name, f"{took:.2f}", f"{took / sum(spent.values()):.0%}")
    split.add_row(
        "sum of the steps (the recompute overlaps reads and work)", f"{sum(spent.values()):.2f}", ""
    )
    return split


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--members", type=int, default=200_000)
    parser.add_argument("--reads", type=int, default=500)
    parser.add_argument("--redis-url", default=Settings().redis_url)
    args = parser.parse_args()
    site = f"bstand{uuid.uuid4().hex[:6]}"
    keys = Keys("bonusd", site)
    r = aioredis.Redis.from_url(args.redis_url, decode_responses=True)
    raw = _raw_client(args.redis_url)
    try:
        store = await _setup(r, keys, args.members, site)
        result, times = await _rounds(r, raw, keys, store)
        console.print(f"recompute all draws: {result}")
        spent = await _split(r, keys, store)
        ref_took, ref_n, ref_ranked = await _recompute_reference(store, "halfway")
        await store.publish_board(GH, "halfway", Side.SLOTS, dt.datetime.now(dt.UTC))
        published, live, ping = [], [], []
        for _ in range(args.reads):
            t0 = time.perf_counter()
            await store.published_board(GH, "halfway", Side.SLOTS)
            published.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await store.live_board(GH, "halfway", Side.SLOTS)
            live.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await r.ping()
            ping.append(time.perf_counter() - t0)
    finally:
        async for key in r.scan_iter(match=f"bonusd:{{{site}}}:*", count=10_000):
            await r.unlink(key)
        await r.aclose()
        await raw.aclose()
    table = Table(title=f"standings benchmark: {args.members:,} members, Golden Horse")
    for col in ("figure", "value", "bare baseline", "ratio"):
        table.add_column(col, justify="right" if col != "figure" else "left")
    _recompute_rows(table, result, times)
    table.add_row(
        f"reference path, halfway only: {ref_n:,} explained standings, {ref_ranked:,} places (s)",
        f"{ref_took:.2f}",
        "",
        "",
    )
    for name, values in (("published board read", published), ("live top-10 read", live)):
        for q in (50, 99):
            table.add_row(
                f"{name} p{q} (ms)",
                f"{_pct(values, q):.2f}",
                f"{_pct(ping, q):.2f} (PING)",
                f"{_pct(values, q) / _pct(ping, q):.1f}x",
            )
    console.print(table)
    console.print(_split_table(spent))


if __name__ == "__main__":
    asyncio.run(main())
