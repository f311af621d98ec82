"""Kiosk benchmark: card in -> the member's standings in every running draw, rendered as
the JSON a kiosk (or the app) receives, on a 200,000-member site, beside a bare pipelined
read of the same Redis keys in the same run.

    python loadtests/bench_kiosk.py [--members 200000] [--reads 2000] [--runs 5]

Set-up (not timed): the Golden Horse promotion on a throwaway site at 12:00 on the
halfway draw day, when three draws run (halfway, bonus, final: six published boards);
N members (member hash and index row, a realistic tier mix, 0.5 % excluded, 35 % app
users) and, for each running draw, every member's window totals as a month of play
leaves them (the nine per-field hashes of `pwf:`), some activations and the published
boards (each holding ten members).

Timed, per read, for a random card (1 in 50 no member at all), in alternating order:
- bare: the very commands `bonusd.kiosk.standings.player_view` sends (one pipeline:
  the member hash, `telemetry_since`, nine HGETs, the activation and the boards of each
  running draw), replies taken as they come, nothing parsed;
- view: `player_view` (the same round trip, the member record, the rules' standing of
  each draw, the view in plain words) and `PlayerViewOut` serialised to JSON bytes.
Each run reports p50 and p99 of both and their ratio; the summary gives the median of
the runs' figures. Goal: view p99 < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import time
import uuid
from pathlib import Path

import redis.asyncio as aioredis
from rich.console import Console
from rich.progress import track
from rich.table import Table

from bonusd.api.playermodels import PlayerViewOut
from bonusd.infra.keys import Keys
from bonusd.kiosk.playerview import running_draws
from bonusd.kiosk.standings import player_view, queue_reads
from bonusd.promotions import Draw, Promotion, parse_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.settings import Settings

GH = "golden-horse-mega-points-chase"
PROJECT = Path(__file__).resolve().parent.parent
NOW = dt.datetime(2026, 11, 7, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
TIERS = ("10", "J", "Q", "K", "A")
TIER_WEIGHTS = (0.4, 0.3, 0.18, 0.08, 0.04)
BATCH = 10_000
console = Console()


def _promotion(site: str) -> Promotion:
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    return parse_promotion(text.replace('site = "golden-horse"', f'site = "{site}"'), source=GH)


async def _members(r: aioredis.Redis, keys: Keys, cards: list[str], rng: random.Random) -> None:
    for start in track(range(0, len(cards), BATCH), description="writing members"):
        async with r.pipeline(transaction=False) as pipe:
            for n, card in enumerate(cards[start : start + BATCH], start):
                tier = rng.choices(TIERS, TIER_WEIGHTS)[0]
                app = "1" if rng.random() < 0.35 else "0"
                excluded = "1" if rng.random() < 0.005 else "0"
                record = {
                    "card": card,
                    "name": f"Member Number{n}",
                    "tier": tier,
                    "app_user": app,
                    "date_of_birth": "1980-01-01",
                    "sms_opt_in": "0",
                    "excluded": excluded,
                    "exclusion_reason": "on the list" if excluded == "1" else "",
                    "last_visit": "",
                    "mobile": "",
                }
                pipe.hset(keys.member(card), mapping=record)  # type: ignore[arg-type]
                pipe.hset(keys.member_index, card, f"{tier}|{app}|{excluded}|1980-01-01|")
                pipe.sadd(keys.members, card)
            await pipe.execute()


async def _play(
    r: aioredis.Redis, keys: Keys, promotion: Promotion, cards: list[str], rng: random.Random
) -> None:
    """Each running draw's window totals, some activations, and its published boards."""
    reached = 1_790_000_000_000
    for _, draw in track(running_draws([promotion], NOW), description="writing window totals"):
        for start in range(0, len(cards), BATCH):
            columns: dict[str, dict[str, int]] = {}
            for card in cards[start : start + BATCH]:
                visits = rng.randint(1, 20)
                slots = int(rng.lognormvariate(9.3, 1.1))
                row = {
                    "slots_points": slots,
                    "slots_plays": visits * 200,
                    "slots_visits": visits,
                    "slots_reached": reached + rng.randint(0, 30 * 86_400_000),
                    "visits": visits,
                }
                if rng.random() < 0.25:
                    row |= {
                        "tables_points": int(rng.lognormvariate(9.0, 1.2)),
                        "tables_plays": 4,
                        "tables_visits": 1,
                        "tables_reached": reached,
                    }
                for name, value in row.items():
                    columns.setdefault(name, {})[card] = value
            async with r.pipeline(transaction=False) as pipe:
                for name, values in columns.items():
                    pipe.hset(keys.window_field(promotion.id, draw.id, name), mapping=values)  # type: ignore[arg-type]
                await pipe.execute()
        activated = {
            card: json.dumps({"channel": "kiosk", "at": NOW.isoformat()})
            for card in rng.sample(cards, len(cards) // 20)
        }
        await r.hset(keys.activations(promotion.id, draw.id), mapping=activated)  # type: ignore[arg-type]
        for side in draw.qualification.sides if draw.leaderboard else ():
            top = rng.sample(cards, 10)
            board = {
                "promotion": promotion.id,
                "draw": draw.id,
                "side": side.value,
                "published_at": "2026-11-06T08:00:00+02:00",
                "entries": [
                    {"position": n, "card": c, "points": 900_000 - n} for n, c in enumerate(top, 1)
                ],
            }
            await r.set(keys.board_published(promotion.id, draw.id, side.value), json.dumps(board))


async def _bare(
    r: aioredis.Redis, keys: Keys, draws: list[tuple[Promotion, Draw]], card: str
) -> float:
    t0 = time.perf_counter()
    async with r.pipeline(transaction=False) as pipe:
        queue_reads(pipe, keys, card, draws)
        await pipe.execute()
    return time.perf_counter() - t0


async def _view(store: PromotionStore, card: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    body = PlayerViewOut.model_validate(await player_view(store, card, NOW)).model_dump_json()
    return time.perf_counter() - t0, len(body)


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


async def _run(
    r: aioredis.Redis, keys: Keys, store: PromotionStore, cards: list[str], *, reads: int, seed: int
) -> dict[str, float]:
    rng = random.Random(seed)
    draws = running_draws(list(store.promotions.values()), NOW)
    bare: list[float] = []
    view: list[float] = []
    sizes: list[int] = []
    for n in range(reads):
        card = rng.choice(cards) if rng.random() >= 0.02 else f"9{rng.randrange(10**9):09d}"
        if n % 2:
            bare.append(await _bare(r, keys, draws, card))
            took, size = await _view(store, card)
        else:
            took, size = await _view(store, card)
            bare.append(await _bare(r, keys, draws, card))
        view.append(took)
        sizes.append(size)
    out = {
        "bare_p50": _pct(bare, 50),
        "bare_p99": _pct(bare, 99),
        "view_p50": _pct(view, 50),
        "view_p99": _pct(view, 99),
        "bytes": statistics.median(sizes),
    }
    out["ratio_p50"] = out["view_p50"] / out["bare_p50"]
    out["ratio_p99"] = out["view_p99"] / out["bare_p99"]
    return out


def _report(runs: list[dict[str, float]], members: int, reads: int) -> None:
    table = Table(
        title=f"kiosk card-in -> standings JSON: {members:,} members, 3 running draws, "
        f"{reads:,} reads x {len(runs)} runs"
    )
    table.add_column("run")
    for col in ("bare p50", "bare p99", "view p50", "view p99", "p50 ratio", "p99 ratio"):
        table.add_column(col, justify="right")
    names = ("bare_p50", "bare_p99", "view_p50", "view_p99")
    for n, run in enumerate(runs, 1):
        cells = [f"{run[k]:.2f} ms" for k in names]
        table.add_row(str(n), *cells, f"{run['ratio_p50']:.1f}x", f"{run['ratio_p99']:.1f}x")
    median = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
    table.add_row(
        "median",
        *(f"{median[k]:.2f} ms" for k in names),
        f"{median['ratio_p50']:.1f}x",
        f"{median['ratio_p99']:.1f}x",
        style="bold",
    )
    console.print(table)
    verdict = "meets" if median["view_p99"] < 50 else "MISSES"
    console.print(
        f"view p99 {median['view_p99']:.2f} ms (median of runs) {verdict} the goal of < 50 ms; "
        f"median body {median['bytes']:,.0f} bytes"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--members", type=int, default=200_000)
    parser.add_argument("--reads", type=int, default=2_000, help="reads per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--redis-url", default=Settings().redis_url)
    args = parser.parse_args()
    site = f"bkiosk{uuid.uuid4().hex[:6]}"
    keys = Keys("bonusd", site)
    r = aioredis.Redis.from_url(args.redis_url, decode_responses=True)
    rng = random.Random(7)
    cards = [f"8{n:09d}" for n in range(args.members)]
    try:
        promotion = _promotion(site)
        await _members(r, keys, cards, rng)
        await _play(r, keys, promotion, cards, rng)
        store = PromotionStore(r, keys, [promotion])
        await _run(r, keys, store, cards, reads=200, seed=0)  # warm-up: connections, caches
        runs = [
            await _run(r, keys, store, cards, reads=args.reads, seed=n)
            for n in range(1, args.runs + 1)
        ]
    finally:
        doomed = [k async for k in r.scan_iter(match=f"bonusd:{{{site}}}:*", count=10_000)]
        for start in range(0, len(doomed), BATCH):
            await r.unlink(*doomed[start : start + BATCH])
        await r.aclose()
    _report(runs, args.members, args.reads)


if __name__ == "__main__":
    asyncio.run(main())
