"""Draw benchmark: a draw round and a RAPS pick, each timed end to end from the trigger to
the winner records committed in Redis, on two paths in the same run: the real one (seeds
sealed with AES-GCM under a key, as in production) and the one from before sealing (seeds
kept as plain hex, a bench-only `PlainSeal`), beside one bare Redis round trip (PING).

    python loadtests/bench_draws.py [--runs 50] [--members 200000] [--tickets 1000000]
                                    [--cold 5] [--actives 20000]

Each path has its own bench site (key prefix) holding the same data (`drawsetup.py`, not
timed): a throwaway promotion (temporary TOML, real loader) with `--runs` + `--cold`
nightly draws of one round of 15 pooled winners; `--members` members imported through the
real import path; per draw, the entry pool frozen at bin close (`--tickets` tickets, one
each, the rest log-normal), `commit_seeds` and `close_bin`. The runs are interleaved
(sealed, plain, sealed, plain, …) so that drifts of the machine's load hit both paths.
Timed: `DrawRunner.run_round(promotion, draw, 1)` until the 15 pick and 15 claim records
are committed. Warm: the desk that closed the bin, on both paths. Cold (sealed path only):
a fresh desk (as after a restart) rebuilding its book from the ledger and the archived
pool file; a bare GET of that file is its baseline.

RAPS: `RapsRunner.run_jackpot` among `--actives` players put on the floor through the real
ingest store (`FloorStore.apply_batch`), timed from the trigger to the pool, pick and
claim records committed with the floor snapshot and pool file archived; both paths in
turn, each after the same churn. Goal: the pick's p99 within 10x the p99 of a bare
PING of the same run. Where its time goes (`drawphases.py`): the mirror's sync, the
snapshot's view, the decision, the audit commit and the rest, the pick's CPU time and
its Redis round trips. Seeds: opening one sealed seed beside opening a plain
one, in µs, and how many seeds a round or a pick opens (what the p50 difference of the two
paths should be).

Redis is BONUSD_REDIS_URL (default redis://127.0.0.1:6379/0); every key is under the two
fresh bench-only sites and is deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import gc
import tempfile
import time
import uuid
from pathlib import Path

import redis.asyncio as aioredis
from drawphases import PickParts, watched
from drawreport import Timings, report
from drawsetup import (
    PID,
    WINNERS,
    BenchSite,
    bench_sites,
    import_members,
    jackpot_instant,
    member_cards,
    ticket_counts,
)
from floorseed import play_on, seed_floor
from rich.console import Console
from rich.progress import track
from sealcost import PlainSeal, seal_cost

from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.runner import DrawRunner
from bonusd.draws.seal import SeedSeal
from bonusd.floor.telemetry import FloorEvent
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.store import PromotionStore
from bonusd.raps.runner import RapsRunner
from bonusd.settings import Settings

console = Console()


def _opened(seal: SeedSeal) -> int:
    """Seeds opened so far by the plain path's seal (its count stands for both paths: the
    same code opens the same seeds); 0 for the real seal, which counts nothing."""
    return seal.opened if isinstance(seal, PlainSeal) else 0


class DrawBench:
    def __init__(self, r: aioredis.Redis, site: BenchSite) -> None:
        self.r, self.site, self.keys, self.promotion = r, site, site.keys, site.promotion
        draw = self.promotion.draw_list[0]
        self.clock = ManualClock(self.draw_time(draw.id))
        self.desk = self.new_desk()

    def new_desk(self) -> DrawRunner:
        """A desk with nothing in memory, as a freshly started daemon builds it."""
        store = PromotionStore(self.r, self.keys, [self.promotion])
        audit = AuditStore(self.r, self.keys)
        return DrawRunner(
            redis=self.r,
            keys=self.keys,
            audit=audit,
            promotions=store,
            clock=self.clock,
            seal=self.site.seal,
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
    r: aioredis.Redis, sites: list[BenchSite], args: argparse.Namespace
) -> dict[str, Timings]:
    """Warm draw rounds of both paths in turn, then the cold desk's on the sealed path."""
    cards = member_cards(args.members)
    counts = ticket_counts(cards, args.tickets)
    benches = []
    for site in sites:
        await import_members(r, site.keys, cards)
        benches.append(DrawBench(r, site))
    draws = [d.id for d in sites[0].promotion.draw_list]
    base = EntryPool.freeze(
        promotion_id=PID,
        draw_id=draws[0],
        closed_at=benches[0].clock.now(),
        counts={Tombola.POOLED: counts},
    )
    if base.total(Tombola.POOLED) != args.tickets:
        raise SystemExit("ticket counts do not add up")
    out: dict[str, Timings] = {site.label: {"warm": [], "ping": [], "opened": []} for site in sites}
    steps = "warm desks, sealed and plain in turn: bin close, then draw"
    for draw_id in track(draws[: args.runs], description=steps):
        for bench in benches:
            got = out[bench.site.label]
            await bench.prepare(draw_id, base)
            got["ping"].append(await _ping(r))
            before = _opened(bench.site.seal)
            got["warm"].append(await bench.draw(bench.desk, draw_id))
            got["opened"].append(_opened(bench.site.seal) - before)
    sealed = benches[0]
    cold: Timings = {"cold": [], "poolfile": []}
    for draw_id in track(draws[args.runs :], description="cold desk: bin close, then draw"):
        await sealed.prepare(draw_id, base)
        # the pool file this draw archived, fetched bare: what the cold desk must read
        book = await sealed.desk.book(PID, draw_id)
        frozen = book.draw.round(*book.plan.keys[0]).pool
        assert frozen is not None
        t0 = time.perf_counter()
        await r.get(sealed.keys.poolfile(frozen.commitment))
        cold["poolfile"].append(time.perf_counter() - t0)
        cold["cold"].append(await sealed.draw(sealed.new_desk(), draw_id))
    out[sealed.site.label] |= cold
    return out


@dataclasses.dataclass
class RapsPath:
    """One path's RAPS desk, its floor (each player's game, for `play_on`) and timings."""

    site: BenchSite
    desk: RapsRunner
    layout: list[FloorEvent]
    out: Timings
    parts: PickParts = dataclasses.field(default_factory=PickParts)


async def _raps_path(
    r: aioredis.Redis, site: BenchSite, at: dt.datetime, args: argparse.Namespace
) -> RapsPath:
    """`--actives` players on the path's floor, its session's seeds committed (at the
    session start: not part of a pick), and the daemon's mirror of the floor read whole
    once, as when it starts following (timed)."""
    promotion = site.promotion
    cards = member_cards(args.members)[: args.actives]
    layout = await seed_floor(r, site.keys, promotion, cards, at)
    desk = RapsRunner(
        redis=r,
        keys=site.keys,
        audit=AuditStore(r, site.keys),
        promotions=PromotionStore(r, site.keys, [promotion]),
        clock=ManualClock(at),
        calendar=promotion.calendar,
        seal=site.seal,
    )
    await desk.commit_seeds(PID, promotion.jackpot_sessions[0].id)
    t0 = time.perf_counter()
    await desk.live_floor.sync()
    out: Timings = {"full_read": [time.perf_counter() - t0]}
    out |= {"pick": [], "ping": [], "snapshot": [], "eligible": [], "opened": []}
    return RapsPath(site, desk, layout, out)


async def _raps_pick(
    r: aioredis.Redis, path: RapsPath, number: int, at: dt.datetime, churn: tuple[int, int]
) -> None:
    """Jackpot `number` on one path: its floor's base archived, then `base_churn` players
    play one more game and the mirror syncs, then `churn` more (none of it timed); then
    the pick; then, after `churn` more, the floor snapshot alone."""
    churn, base_churn = churn
    keys, out = path.site.keys, path.out
    session = path.site.promotion.jackpot_sessions[0]
    if base_churn:  # the leader archives the floor's base 2 s before (not timed), then the
        # floor changes and the mirror follows it, as in the daemon (docs/draws.md)
        await path.desk.prepare_floor(PID, session.id, number)
        await play_on(r, keys, path.layout, at, n=base_churn, seed=20_000 + number)
        await path.desk.live_floor.sync()
    await play_on(r, keys, path.layout, at, n=churn, seed=number)
    out["ping"].append(await _ping(r))
    before = _opened(path.site.seal)
    with watched(path.parts) as parts:
        t0 = time.perf_counter()
        parts.start()
        records = await path.desk.run_jackpot(PID, session.id, number)
        parts.end()
        out["pick"].append(time.perf_counter() - t0)
    out["opened"].append(_opened(path.site.seal) - before)
    kinds = [rec.kind for rec in records]
    if kinds.count("pick") != 1 or kinds.count("claim") != 1:
        raise SystemExit(f"jackpot {number}: expected a pick and a claim, got {kinds}")
    pool = next(rec for rec in records if rec.kind == "pool")
    out["eligible"].append(float(pool.payload.get("members", -1)))
    await play_on(r, keys, path.layout, at, n=churn, seed=10_000 + number)
    t0 = time.perf_counter()
    await path.desk.snapshot(at)
    out["snapshot"].append(time.perf_counter() - t0)


async def bench_raps(
    r: aioredis.Redis, sites: list[BenchSite], args: argparse.Namespace
) -> dict[str, Timings]:
    """`--runs` RAPS jackpots of one session on each path, in turn, each
    `RapsRunner.run_jackpot` timed from the trigger to the pool, pick and claim records
    committed, with `--actives` players on the floor (the members imported before)."""
    session = sites[0].promotion.jackpot_sessions[0]
    at = dt.datetime.combine(session.date, jackpot_instant(args.runs), sites[0].promotion.zone)
    paths = [await _raps_path(r, site, at, args) for site in sites]
    gc.collect()
    gc.freeze()  # as the daemon does once started (bonusd/service/root.py)
    for number in track(range(1, args.runs + 1), description="RAPS picks, sealed and plain"):
        for path in paths:
            await _raps_pick(r, path, number, at, (args.churn, args.base_churn))
    for path in paths:
        path.out |= {f"part:{label}": got for label, got in path.parts.parts.items()}
    return {path.site.label: path.out for path in paths}


async def _cleanup(r: aioredis.Redis, site: str) -> None:
    found = [key async for key in r.scan_iter(match=f"bonusd:{{{site}}}:*", count=10_000)]
    for at in range(0, len(found), 5_000):
        await r.unlink(*found[at : at + 5_000])


def _options() -> argparse.Namespace:
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
        default=80,
        help="players whose rows change between two RAPS picks: what the pick's own sync "
        "carries (80: a twentieth of a second of a 10,000-EGM Saturday peak, the mirror's "
        "interval around a jackpot, BONUSD_RAPS_FLOOR_NEAR_SYNC_S; 400: its regular "
        "quarter second)",
    )
    parser.add_argument(
        "--base-churn",
        type=int,
        default=880,
        help="players whose rows change between the floor's base (archived 2 s before each "
        "jackpot, BONUSD_RAPS_FLOOR_BASE_LEAD_S) and the mirror's last sync before the pick: "
        "what the pick's difference file holds with --churn (880: 2 s at a 10,000-EGM "
        "Saturday peak, 441 row writes a second, loadtests/bench_rowlog.py); 0: no base, every "
        "pick archives the whole floor",
    )
    parser.add_argument("--redis-url", default=Settings().redis_url)
    return parser.parse_args()


async def main() -> None:
    args = _options()
    r = aioredis.Redis.from_url(args.redis_url, decode_responses=True)
    with tempfile.TemporaryDirectory() as tmp:
        sites = bench_sites(uuid.uuid4().hex[:6], args.runs + args.cold, Path(tmp))
    try:
        if args.raps_only:
            for site in sites:
                await import_members(r, site.keys, member_cards(args.members))
        draws = {} if args.raps_only else await bench_draws(r, sites, args)
        raps = await bench_raps(r, sites, args)
    finally:
        for site in sites:
            await _cleanup(r, site.keys.site)
        await r.aclose()
    console.print(report(args, draws, raps, seal_cost()))


if __name__ == "__main__":
    asyncio.run(main())
