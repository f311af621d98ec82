"""Draw benchmark: a draw round and a RAPS pick, each timed end to end from the trigger to
the winner records committed in Redis, beside one bare Redis round trip (PING) measured
in the same run.

    python loadtests/bench_draws.py [--runs 50] [--members 200000] [--tickets 1000000]
                                    [--cold 5] [--actives 20000]

Draws (set-up not timed): a throwaway promotion (temporary TOML, real loader) with
`--runs` + `--cold` nightly draws of one round of 15 pooled winners; `--members` members
imported through the real import path; per draw, the entry pool frozen at bin close
(`--tickets` tickets, one each, the rest log-normal), `commit_seeds` and `close_bin`.
Timed: `DrawRunner.run_round(promotion, draw, 1)` until the 15 pick and 15 claim records
are committed. Warm: the desk that closed the bin. Cold: a fresh desk (as after a
restart) rebuilding its book from the ledger and the archived pool file; a bare GET of
that file is its baseline.

Seeds: opening one sealed seed (what a draw or pick adds per seed) beside parsing a plain
one, in µs. RAPS: `RapsRunner.run_jackpot` among `--actives` players put on the floor through the
real ingest store (`FloorStore.apply_batch`), timed from the trigger to the pool, pick
and claim records committed with the floor snapshot and pool file archived.

Redis is BONUSD_REDIS_URL (default redis://127.0.0.1:6379/0); every key is under a fresh
bench-only site and is deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import secrets
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import redis.asyncio as aioredis
from floorseed import bench_store, play_on, seed_floor
from rich.console import Console
from rich.progress import Progress, track
from rich.table import Table
from sealcost import seal_cost

from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.runner import DrawRunner
from bonusd.draws.seal import SeedSeal
from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.promotions import Promotion, load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.store import PromotionStore
from bonusd.raps.runner import RapsRunner
from bonusd.registry.records import Member, Tier
from bonusd.settings import Settings

PID = "bench-draws"
WINNERS = 15
SEAL = SeedSeal(secrets.token_bytes(32), source="the benchmark's throwaway seed key")
FIRST_DAY = dt.date(2027, 1, 4)
console = Console()

PROMOTION = """\
format = 1
id = "{pid}"
name = "Draw benchmark"
casino = "Bench"
site = "{site}"
timezone = "Africa/Johannesburg"
gaming_day_start = "08:00"
start = {start}
end = {end}

[prize_sets.reveal]
kind = "reveal"
description = "Each verified winner picks one reveal."
values_cents = []

[draw_series.nightly]
name = "Nightly draw"
dates = [{dates}]
mode = "electronic"
system = "TEEDS"
tombolas = "pooled"
prize_set = "reveal"
window = {{ kind = "play_window", start = "08:00", end = "20:00" }}
qualification = {{ kind = "play_in_window", sides = ["slots", "tables"] }}

[draw_series.nightly.tickets]
per_points = 100
min_one_if_played = true

[draw_series.nightly.activation]
channels = ["kiosk", "app"]
app_requires_active = true
opens = "08:00"
bin_close = "20:00"

[[draw_series.nightly.rounds]]
time = "20:00"
winners = {winners}

[jackpot_series.jackpot]
name = "Bench Jackpot"
dates = [{jp_day}]
start = "14:00"
end = "21:00"
areas = ["main", "smoking"]
min_spend_cents = 10000
times = {{ every_minutes = 1, first = "14:01", last = "{jp_last}" }}
active_play_minutes = 5
prize_set = "reveal"
"""


def _promotion(site: str, n_draws: int, folder: Path) -> Promotion:
    days = [FIRST_DAY + dt.timedelta(days=i) for i in range(n_draws)]
    path = folder / f"{PID}.toml"
    path.write_text(
        PROMOTION.format(
            pid=PID,
            site=site,
            start=days[0].isoformat(),
            end=(days[-1] + dt.timedelta(days=1)).isoformat(),
            jp_day=(days[-1] + dt.timedelta(days=1)).isoformat(),
            dates=", ".join(d.isoformat() for d in days),
            winners=WINNERS,
            jp_last=_jackpot_instant(n_draws).strftime("%H:%M"),
        )
    )
    return load_promotion(path)


def _jackpot_instant(runs: int) -> dt.time:
    """The session (the day after the last draw: the audit trail is in time order) has a
    jackpot each minute from 14:01; all are run at the last one's instant (a jackpot may
    run late, never early), so one floor snapshot serves all."""
    return (dt.datetime.combine(FIRST_DAY, dt.time(14, 0)) + dt.timedelta(minutes=runs)).time()


def _store(r: aioredis.Redis, keys: Keys) -> FloorStore:
    return bench_store(r, keys)


def _cards(n: int) -> list[str]:
    return [f"8{i:09d}" for i in range(n)]


async def _import_members(r: aioredis.Redis, keys: Keys, cards: list[str]) -> None:
    rng = np.random.default_rng(7)
    grades = ["10", "J", "Q", "K", "A"]
    tiers = rng.choice(grades, size=len(cards), p=[0.4, 0.3, 0.18, 0.08, 0.04]).tolist()
    app = (rng.random(len(cards)) < 0.35).tolist()
    floor = _store(r, keys)
    born = dt.date(1980, 1, 1)
    members = [
        Member(card=c, name=f"M {i}", tier=Tier(tiers[i]), app_user=app[i], date_of_birth=born)
        for i, c in enumerate(cards)
    ]
    with Progress(transient=True) as bar:  # written in atomic batches, as the CLI does
        task = bar.add_task("importing members", total=len(members))
        await floor.import_members(members, progress=lambda n: bar.advance(task, n))


def _ticket_counts(cards: list[str], tickets: int) -> dict[str, int]:
    """Exactly `tickets` tickets over the cards: one each, the rest spread log-normally."""
    if tickets < len(cards):
        raise SystemExit("--tickets must be at least --members (every holder has a ticket)")
    rng = np.random.default_rng(11)
    weights = rng.lognormal(0.0, 1.2, size=len(cards))
    extra = rng.multinomial(tickets - len(cards), weights / weights.sum())
    return {card: 1 + int(n) for card, n in zip(cards, extra.tolist(), strict=True)}


def _pct(values: list[float], q: float) -> float:
    """Percentile in ms (linear interpolation; with 50 runs p99 lies between the two
    slowest)."""
    return float(np.percentile(np.array(values), q)) * 1000


class DrawBench:
    def __init__(self, r: aioredis.Redis, keys: Keys, promotion: Promotion) -> None:
        self.r, self.keys, self.promotion = r, keys, promotion
        draw = promotion.draw_list[0]
        self.clock = ManualClock(self.draw_time(draw.id))
        self.desk = self.new_desk()

    def new_desk(self) -> DrawRunner:
        """A desk with nothing in memory, as a freshly started daemon builds it."""
        store = PromotionStore(self.r, self.keys, [self.promotion])
        audit = AuditStore(self.r, self.keys)
        return DrawRunner(
            redis=self.r, keys=self.keys, audit=audit, promotions=store, clock=self.clock, seal=SEAL
        )

    def draw_time(self, draw_id: str) -> dt.datetime:
        draw = self.promotion.draw(draw_id)
        return dt.datetime.combine(draw.date, draw.rounds[0].time, self.promotion.zone)

    async def prepare(self, draw_id: str, base: EntryPool) -> None:
        """Bin close (not timed): the entry pool frozen for this draw, seeds committed,
        the round's pool frozen and archived."""
        self.clock.set(self.draw_time(draw_id))
        pool = dataclasses.replace(base, draw_id=draw_id, closed_at=self.clock.now())
        await self.r.set(self.desk.promotions.keys.pool(PID, draw_id), pool.canonical())
        await self.desk.commit_seeds(PID, draw_id)
        await self.desk.close_bin(PID, draw_id)

    async def draw(self, desk: DrawRunner, draw_id: str) -> float:
        self.clock.set(self.draw_time(draw_id) + dt.timedelta(seconds=1))
        t0 = time.perf_counter()
        records = await desk.run_round(PID, draw_id, 1)
        took = time.perf_counter() - t0
        kinds = [rec.kind for rec in records]
        if kinds.count("pick") != WINNERS or kinds.count("claim") != WINNERS:
            raise SystemExit(f"{draw_id}: expected {WINNERS} picks and claims, got {kinds}")
        return took


async def _ping(r: aioredis.Redis) -> float:
    t0 = time.perf_counter()
    await r.ping()
    return time.perf_counter() - t0


async def bench_draws(
    r: aioredis.Redis, keys: Keys, promotion: Promotion, args: argparse.Namespace
) -> dict[str, list[float]]:
    cards = _cards(args.members)
    await _import_members(r, keys, cards)
    counts = _ticket_counts(cards, args.tickets)
    bench = DrawBench(r, keys, promotion)
    draws = [d.id for d in promotion.draw_list]
    base = EntryPool.freeze(
        promotion_id=PID,
        draw_id=draws[0],
        closed_at=bench.clock.now(),
        counts={Tombola.POOLED: counts},
    )
    if base.total(Tombola.POOLED) != args.tickets:
        raise SystemExit("ticket counts do not add up")
    out: dict[str, list[float]] = {"warm": [], "ping": [], "cold": [], "poolfile": []}
    for draw_id in track(draws[: args.runs], description="warm desk: bin close, then draw"):
        await bench.prepare(draw_id, base)
        out["ping"].append(await _ping(r))
        out["warm"].append(await bench.draw(bench.desk, draw_id))
    for draw_id in track(draws[args.runs :], description="cold desk: bin close, then draw"):
        await bench.prepare(draw_id, base)
        # the pool file this draw archived, fetched bare: what the cold desk must read
        book = await bench.desk.book(PID, draw_id)
        frozen = book.draw.round(*book.plan.keys[0]).pool
        assert frozen is not None
        t0 = time.perf_counter()
        await r.get(f"{keys.base}poolfile:{frozen.commitment}")
        out["poolfile"].append(time.perf_counter() - t0)
        out["cold"].append(await bench.draw(bench.new_desk(), draw_id))
    return out


async def bench_raps(
    r: aioredis.Redis, keys: Keys, promotion: Promotion, args: argparse.Namespace
) -> dict[str, list[float]]:
    """`--runs` RAPS jackpots of one session, each `RapsRunner.run_jackpot` timed from
    the trigger to the pool, pick and claim records committed, with `--actives` players
    on the floor (the members imported by the draw part)."""
    session = promotion.jackpot_sessions[0]
    at = dt.datetime.combine(session.date, _jackpot_instant(args.runs), promotion.zone)
    clock = ManualClock(at)
    layout = await seed_floor(r, keys, promotion, _cards(args.members)[: args.actives], at)
    desk = RapsRunner(
        redis=r,
        keys=keys,
        audit=AuditStore(r, keys),
        promotions=PromotionStore(r, keys, [promotion]),
        clock=clock,
        calendar=promotion.calendar,
        seal=SEAL,
    )
    await desk.commit_seeds(PID, session.id)  # at the session start: not part of a pick
    out: dict[str, list[float]] = {"pick": [], "ping": [], "snapshot": [], "eligible": []}
    # the daemon's mirror of the floor is read whole once, when it starts following
    t0 = time.perf_counter()
    await desk.live_floor.sync()
    out["full_read"] = [time.perf_counter() - t0]
    for number in track(range(1, args.runs + 1), description="RAPS picks"):
        # what the floor did since the mirror last looked (not timed)
        await play_on(r, keys, layout, at, n=args.churn, seed=number)
        out["ping"].append(await _ping(r))
        t0 = time.perf_counter()
        records = await desk.run_jackpot(PID, session.id, number)
        out["pick"].append(time.perf_counter() - t0)
        kinds = [rec.kind for rec in records]
        if kinds.count("pick") != 1 or kinds.count("claim") != 1:
            raise SystemExit(f"jackpot {number}: expected a pick and a claim, got {kinds}")
        pool = next(rec for rec in records if rec.kind == "pool")
        out["eligible"].append(float(pool.payload.get("members", -1)))
        await play_on(r, keys, layout, at, n=args.churn, seed=10_000 + number)
        t0 = time.perf_counter()
        await desk.snapshot(at)
        out["snapshot"].append(time.perf_counter() - t0)
    return out


async def _cleanup(r: aioredis.Redis, site: str) -> None:
    found = [key async for key in r.scan_iter(match=f"bonusd:{{{site}}}:*", count=10_000)]
    for at in range(0, len(found), 5_000):
        await r.unlink(*found[at : at + 5_000])


def _rows(table: Table, name: str, values: list[float], bare: list[float], bare_name: str) -> None:
    for q in (50, 99):
        table.add_row(
            f"{name} p{q} (ms)",
            f"{_pct(values, q):.1f}",
            f"{_pct(bare, q):.2f} ({bare_name})",
            f"{_pct(values, q) / _pct(bare, q):,.0f}x",
        )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=50, help="timed draws (and RAPS picks)")
    parser.add_argument("--members", type=int, default=200_000)
    parser.add_argument("--tickets", type=int, default=1_000_000)
    parser.add_argument("--cold", type=int, default=5, help="extra draws run on a fresh desk")
    parser.add_argument("--actives", type=int, default=20_000)
    parser.add_argument("--raps-only", action="store_true", help="skip the draw rounds")
    parser.add_argument(
        "--churn",
        type=int,
        default=400,
        help="players whose rows change between two RAPS picks (a quarter second at a "
        "Saturday peak: what the mirror's sync carries)",
    )
    parser.add_argument("--redis-url", default=Settings().redis_url)
    args = parser.parse_args()
    site = f"bdraw{uuid.uuid4().hex[:6]}"
    keys = Keys("bonusd", site)
    r = aioredis.Redis.from_url(args.redis_url, decode_responses=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            promotion = _promotion(site, args.runs + args.cold, Path(tmp))
        if args.raps_only:
            await _import_members(r, keys, _cards(args.members))
        draws = {} if args.raps_only else await bench_draws(r, keys, promotion, args)
        raps = await bench_raps(r, keys, promotion, args)
    finally:
        await _cleanup(r, site)
        await r.aclose()
    table = Table(
        title=f"draw benchmark: {WINNERS} winners from {args.tickets:,} tickets held by "
        f"{args.members:,} members; {args.runs} runs"
    )
    for col in ("figure", "value", "bare baseline", "ratio"):
        table.add_column(col, justify="right" if col != "figure" else "left")
    if draws:
        _rows(table, "draw round, warm desk", draws["warm"], draws["ping"], "PING")
        cold, got = _pct(draws["cold"], 50), _pct(draws["poolfile"], 50)
        n = len(draws["cold"])
        table.add_row(
            f"draw round, cold desk (first after restart), median of {n} (ms)",
            f"{cold:.0f}",
            f"{got:.1f} (GET pool file)",
            f"{cold / got:,.0f}x",
        )
        table.add_row("draw round, cold desk, slowest (ms)", f"{max(draws['cold']) * 1e3:.0f}")
        table.add_row("draw round, warm desk, slowest (ms)", f"{max(draws['warm']) * 1e3:.1f}")
    eligible = int(statistics.median(raps["eligible"]))
    name = (
        f"RAPS pick, {args.actives:,} on the floor, {eligible:,} eligible, "
        f"{args.churn:,} rows changed since the mirror's last sync"
    )
    _rows(table, name, raps["pick"], raps["ping"], "PING")
    table.add_row("RAPS pick, slowest (ms)", f"{max(raps['pick']) * 1000:.1f}")
    for q in (50, 99):
        snap = f"{_pct(raps['snapshot'], q):.1f}"
        table.add_row(f"  of which floor snapshot alone p{q} (ms)", snap)
    full = f"{raps['full_read'][0] * 1000:.1f}"
    table.add_row("floor mirror's first (whole) read, once at start (ms)", full)
    opened, parsed = seal_cost()
    table.add_row(
        "seed opened, sealed (AES-GCM), per seed (µs)",
        f"{opened:.1f}",
        f"{parsed:.2f} (plain hex parsed)",
        f"{opened / parsed:,.0f}x",
    )
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
