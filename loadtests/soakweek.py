"""The soak's week mode (`python loadtests/soak.py --week`): a week of the floor compressed
on the shared clock, its campaign, and the sampling loop that follows simulated time.

The floor simulator plays the scenario's floor from `--week-start` (Monday 20 October
2025, 08:00) for `--days` (7) at `--speed` (300) simulated seconds per wall second, with
aggregated play (one `play` event per carded-in player per at most `--play-minutes`, 15);
its weekly demand profile gives the Saturday-night peak and the quiet Tuesday mornings.
The campaign is the real Festa Fortuna file (promotions/montecasino-festa-fortuna.toml)
moved to the run's site and week (`week_promotion`): its Saturday draw's rules every
evening (play 20:00-23:00, a round of ten winners at 23:00), its Wednesday J/Q draw on the
Wednesday, and its RAPS session (14:00-21:00, a jackpot every 30 minutes) every day.

Samples every --sample-s wall seconds; a census by key family every `census_hours` of
simulated time on a grid from the start (exact at the warm-up's end and at the end: the
bytes of every key but the static member registry, soakcensus.key_bytes). For those two
the soak pauses the clock and waits for the daemon to apply what the simulator sent, so
used_memory, MEMORY STATS and the keys are read on one state; it resumes the clock after
the warm-up's census and stops at the week's end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import redis
import redis.asyncio as aioredis
from floorload import prepare
from floorload.scenarios import ROOT
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from soakcensus import census_sample, newest_event_ms, redis_memory
from soakparts import Kiosks, LogWatch, heap_dump, heap_mb

from bonusd.infra.sharedclock import SharedClock
from simulators import load_floor
from simulators.demand import Demand

FESTA = ROOT / "promotions" / "montecasino-festa-fortuna.toml"
WEEK_PROMOTION_ID = "soak-week-festa-fortuna"
DRAIN_WAIT_S = 600.0  # wall seconds the daemon may take to apply the rest at the end


def add_week_options(parser: argparse.ArgumentParser) -> None:
    """The week mode's options on the soak's command line."""
    week = parser.add_argument_group("a week on the floor (--week)")
    week.add_argument("--week", action="store_true", help="a compressed week, not 30 minutes")
    week.add_argument("--days", type=float, default=7.0, help="simulated days [7]")
    week.add_argument("--speed", type=float, default=1000.0, help="top speed (x) [1000]")
    week.add_argument("--no-governor", action="store_true", help="hold --speed throughout")
    week.add_argument("--rate", type=float, default=2200.0, help="events/wall s planned [2200]")
    week.add_argument("--lag-target", type=float, default=3.0, help="hold if s behind [3]")
    week.add_argument("--wall-minutes", type=float, default=40.0, help="stop there [40]")
    week.add_argument("--play-minutes", type=float, default=15.0, help="play interval [15]")
    week.add_argument("--week-start", default="2025-10-20T08:00:00", help="a Monday's 08:00")
    week.add_argument("--census-hours", type=float, default=6.0, help="simulated h per census")
    week.add_argument("--trace-memory", action="store_true", help="heap dumps (soakparts)")


@dataclass(frozen=True)
class WeekPlan:
    """What the week mode runs: from when, for how long, how fast, how fine."""

    start: dt.datetime
    days: float
    speed: float
    play_minutes: float
    warmup_days: float = 1.0
    census_hours: float = 6.0

    @property
    def end(self) -> dt.datetime:
        return self.start + dt.timedelta(days=self.days)

    @property
    def wall_minutes(self) -> float:
        return self.days * 86400 / self.speed / 60

    def describe(self, floor: str) -> dict[str, Any]:
        """The plan as the report prints it."""
        return {
            "start": self.start.isoformat(), "days": self.days, "speed": self.speed,
            "play_minutes": self.play_minutes, "warmup_days": self.warmup_days,
            "census_hours": self.census_hours, "floor": floor, "retention_interval_s": 3600,
            "wall_minutes_at_top_speed": round(self.wall_minutes, 1),
        }  # fmt: skip

    @classmethod
    def from_args(cls, args: argparse.Namespace, zone: Any) -> WeekPlan:
        start = dt.datetime.fromisoformat(args.week_start)
        return cls(
            start=start if start.tzinfo else start.replace(tzinfo=zone),
            days=args.days,
            speed=args.speed,
            play_minutes=args.play_minutes,
            warmup_days=args.warmup if args.warmup is not None else min(1.0, args.days / 3),
            census_hours=args.census_hours,
        )


def week_promotion(site: str, plan: WeekPlan, source: Path = FESTA) -> str:
    """The Festa Fortuna file moved to `site` and the plan's week: its Saturday draw every
    day, its Wednesday draw on the week's Wednesday(s), its RAPS session every day."""
    days = [plan.start.date() + dt.timedelta(days=n) for n in range(max(1, round(plan.days)))]
    wednesdays = [day for day in days if day.weekday() == 2] or days[:1]

    def dates(values: list[dt.date]) -> str:
        return "dates = [" + ", ".join(day.isoformat() for day in values) + "]"

    text = source.read_text()
    text = re.sub(r'(?m)^id = "[^"]*"', f'id = "{WEEK_PROMOTION_ID}"', text)
    text = re.sub(r'(?m)^site = "[^"]*"', f'site = "{site}"', text)
    top = r"(?m)^{} = \d{{4}}-\d\d-\d\d"  # the campaign's dates, not a session's times
    text = re.sub(top.format("start"), f"start = {days[0].isoformat()}", text, count=1)
    text = re.sub(top.format("end"), f"end = {days[-1].isoformat()}", text, count=1)
    for table, values in (
        ("draw_series.wednesday", wednesdays),
        ("draw_series.saturday", days),
        ("jackpot_series.jackpot", days),
    ):
        head = re.escape(f"[{table}]")
        text, found = re.subn(
            rf"(?s)({head}.*?)^dates = \[.*?\]", rf"\g<1>{dates(values)}", text, count=1,
            flags=re.MULTILINE,
        )  # fmt: skip
        if found != 1:
            raise SystemExit(f"{source}: no `dates` in [{table}]")
    header = (
        "# Generated by loadtests/soak.py --week from promotions/montecasino-festa-fortuna.toml:\n"
        "# the same rules, moved to the soak's site and week (a draw and a RAPS session a day).\n"
    )
    return header + text


def draw_of(clock: dt.datetime, plan: WeekPlan) -> str:
    """The draw whose entries a kiosk activates at `clock`: the day's evening draw."""
    day = clock.astimezone(plan.start.tzinfo)
    if day.hour < 8:  # before the gaming day's start: the previous evening's draw
        day -= dt.timedelta(days=1)
    return f"saturday-{day.date().isoformat()}"


def simulator_command(
    plan: WeekPlan, scn_floor: str, seed: int, site: prepare.Site, *, urls: tuple[str, str],
    promotion: Path,
) -> list[str]:  # fmt: skip
    """The floor simulator for the week: aggregated play, on the site's shared clock."""
    redis_url, mqtt_url = urls
    return [
        sys.executable, "-m", "simulators", "run", "--floor", scn_floor, "--seed", str(seed),
        "--start", plan.start.isoformat(), "--duration", f"{round(plan.days * 24 * 60)}m",
        "--speed", "1", "--clock", "shared", "--redis-url", redis_url,  # the daemon's clock
        "--key-prefix", site.key_prefix, "--site", site.site, "--prefix", site.topic_prefix,
        "--mqtt-url", mqtt_url, "--no-progress", "--promotion", str(promotion),
        "--granularity", "play", "--play-minutes", f"{plan.play_minutes:g}",
    ]  # fmt: skip


def change_clock(
    redis_url: str, site: prepare.Site, speed: float | None = None, *, resume: bool = False
) -> dt.datetime:
    """Pause the site's shared clock, resume it, or set its speed; its instant then."""

    async def change() -> dt.datetime:
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            prefix = SharedClock.site_prefix(site.key_prefix, site.site)
            clock = SharedClock(client, prefix, changed_by="soak")
            await clock.open_existing()
            if speed is not None:
                await clock.set_speed(speed)
            else:
                await (clock.resume() if resume else clock.pause())
            return clock.now()
        finally:
            await client.aclose()

    return asyncio.run(change())


class Governor:
    """The clock's speed, as fast as the machine allows: planned from the floor's weekly
    profile so that the events per wall second stay near `--rate`, whatever the hour.

    The simulator sends about `EVENTS_PER_OCCUPANCY` x occupancy events a simulated
    second (measured: 19.1/s in the Saturday 20:00 hour at 77 % carded in), so the speed
    for the hour ahead is `rate / (EVENTS_PER_OCCUPANCY x occupancy)`, within [`FLOOR`,
    --speed]. Every sample moves the clock at most 15 % towards it, and never while the
    daemon is more than `hold_s` wall seconds behind the floor: the floor simulator reads
    a new speed only when it waits for the clock, so a cut while it is behind lets it
    publish ahead of the clock. `--no-governor` keeps --speed."""

    EVENTS_PER_OCCUPANCY = 25.0
    FLOOR, STEP = 30.0, 0.15
    LOOKAHEAD = dt.timedelta(minutes=30)

    def __init__(
        self, plan: WeekPlan, occupancy: Callable[[dt.datetime], float], args: argparse.Namespace
    ) -> None:
        self.top, self.rate, self.hold_s = plan.speed, args.rate, args.lag_target
        self.occupancy, self.enabled = occupancy, not args.no_governor
        self.speed = self.planned(plan.start) if self.enabled else plan.speed

    def planned(self, clock: dt.datetime) -> float:
        """The speed the profile gives for the half hour after `clock`."""
        busiest = max(self.occupancy(clock), self.occupancy(clock + self.LOOKAHEAD), 0.01)
        return min(self.top, max(self.FLOOR, self.rate / (self.EVENTS_PER_OCCUPANCY * busiest)))

    def next_speed(self, clock: dt.datetime, behind_sim_s: float | None) -> float | None:
        """The new speed, or None to keep it."""
        if not self.enabled or behind_sim_s is None or behind_sim_s / self.speed > self.hold_s:
            return None
        wanted = self.planned(clock)
        wanted = min(self.speed * (1 + self.STEP), max(self.speed * (1 - self.STEP), wanted))
        wanted = round(wanted, 1)
        if abs(wanted - self.speed) < 0.02 * self.speed:
            return None
        self.speed = wanted
        return wanted


def occupancy_of(floor: str) -> Callable[[dt.datetime], float]:
    """The floor simulator's target occupancy at an instant (simulators/demand.py)."""
    spec = load_floor(floor)
    demand = Demand(spec.config, spec.zone)
    return lambda instant: demand.at(instant.astimezone(spec.zone))


def first_speed(plan: WeekPlan, args: argparse.Namespace, floor: str) -> float:
    """The speed the week's clock starts at."""
    return Governor(plan, occupancy_of(floor), args).speed


@dataclass
class WeekRun:
    """What the sampling loop needs of the running soak."""

    plan: WeekPlan
    args: argparse.Namespace
    daemon: subprocess.Popen[bytes]
    sim: subprocess.Popen[bytes]
    client: redis.Redis
    site: prepare.Site
    base: str
    kiosk_token: str
    log: LogWatch
    redis_url: str
    floor: str


class WeekSampler:
    """Samples a week run until the clock reaches its end and the daemon has applied the
    rest; census on the simulated-time grid."""

    def __init__(self, run: WeekRun, status: Callable[[float, str], None]) -> None:
        self.run, self.status = run, status
        self.proc = psutil.Process(run.daemon.pid)
        self.samples: list[dict[str, Any]] = []
        self.clock = run.plan.start
        self.health_misses = 0
        self.next_census = run.plan.start
        self.warm_at = run.plan.start + dt.timedelta(days=run.plan.warmup_days)
        self.warm_done = False
        self.paused_at: dt.datetime | None = None
        self.t0 = self.clock_read = time.monotonic()
        (run.args.out / "samples.jsonl").unlink(missing_ok=True)
        self.governor = Governor(run.plan, occupancy_of(run.floor), run.args)

    def loop(self) -> list[dict[str, Any]]:
        run, plan, governor = self.run, self.run.plan, self.governor
        wall_limit = self.t0 + 60 * run.args.wall_minutes
        with Kiosks(run.base, run.kiosk_token, run.client, run.site, WEEK_PROMOTION_ID) as kiosks:
            while self.paused_at is None:
                sample = self.sample(kiosks)
                since_read = time.monotonic() - self.clock_read
                to_end = (plan.end - self.clock).total_seconds() / governor.speed - since_read
                if to_end <= run.args.sample_s or time.monotonic() >= wall_limit:
                    time.sleep(max(0.0, min(to_end, wall_limit - time.monotonic())))
                    self.paused_at = change_clock(run.redis_url, run.site)
                    sample["paused_at"] = self.paused_at.isoformat()
                    break
                speed = governor.next_speed(self.clock, sample.get("behind_sim_s"))
                if speed is not None:
                    change_clock(run.redis_url, run.site, speed)
                time.sleep(run.args.sample_s)
            self.drain(kiosks)
        return self.samples

    def drain(self, kiosks: Kiosks) -> None:
        """After the pause: the simulator ends, the daemon applies the rest; last census."""
        run = self.run
        deadline = time.monotonic() + DRAIN_WAIT_S
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.sim.wait(max(1.0, deadline - time.monotonic()))
        self.settle(deadline)
        final = self.sample(kiosks, final=True)
        final["simulator_exit"] = run.sim.poll()

    def settle(self, deadline: float) -> None:
        """Wait until the daemon's applied count stands still (or `deadline`)."""
        run, last = self.run, -1
        while time.monotonic() < deadline:
            applied = int(run.client.hget(run.site.keys.stats, "applied") or 0)
            if applied == last:
                break
            last = applied
            time.sleep(min(5.0, run.args.sample_s))

    def sample(self, kiosks: Kiosks, *, final: bool = False) -> dict[str, Any]:
        run, plan = self.run, self.run.plan
        if run.daemon.poll() is not None:
            raise SystemExit(f"the daemon exited (status {run.daemon.returncode}): see its log")
        try:
            health = httpx.get(f"{run.base}/health", timeout=10).json()
            self.clock = dt.datetime.fromisoformat(health["clock"])
            self.clock_read = time.monotonic()
        except httpx.HTTPError:  # the daemon too busy to answer in 10 s: noted
            health = {"clock": self.clock.isoformat()}
            self.health_misses += 1
        warm = not final and not self.warm_done and self.clock >= self.warm_at
        if warm:  # the warm-up's census on a still state, as the end's: clock paused, drained
            self.clock = change_clock(run.redis_url, run.site)
            health["clock"] = self.clock.isoformat()
            self.settle(time.monotonic() + DRAIN_WAIT_S)
        kiosks.draw = draw_of(self.clock, plan)
        run.log.read()
        used_mb, dbsize = redis_memory(run.client)
        newest = newest_event_ms(run.client, run.site.keys.lastseen)
        lag_s = None if newest is None else self.clock.timestamp() - newest / 1000
        sample: dict[str, Any] = {
            "t_s": round(time.monotonic() - self.t0, 1), "clock": health["clock"],
            "sim_h": round((self.clock - plan.start).total_seconds() / 3600, 2),
            "rss_mb": round(self.proc.memory_info().rss / 2**20, 1), "heap_mb": heap_mb(run.base),
            "redis_used_mb": round(used_mb, 1), "redis_used_bytes": round(used_mb * 2**20),
            "dbsize": dbsize, "applied": int(run.client.hget(run.site.keys.stats, "applied") or 0),
            "dead_letters": int(run.client.xlen(run.site.keys.deadletters)),
            "rounds_drawn": run.log.rounds, "warnings": len(run.log.warnings),
            "errors": len(run.log.errors), "ingest_lag_s": health.get("ingest_lag_seconds"),
            "behind_sim_s": None if lag_s is None else round(lag_s, 1), "frontier_ms": newest,
            "speed": self.governor.speed, "health_unanswered": self.health_misses,
            "load_avg": round(psutil.getloadavg()[0], 2),
        }  # fmt: skip
        if final or warm or self.clock >= self.next_census:
            self.census(sample, final=final)
        if warm:
            change_clock(run.redis_url, run.site, resume=True)
            self.clock_read = time.monotonic()
        sample["activations"] = dict(kiosks.counts)
        self.samples.append(sample)
        with (run.args.out / "samples.jsonl").open("a") as fh:  # to follow a long run
            fh.write(json.dumps(sample, default=str) + "\n")
        self.status(
            min(1.0, (self.clock - plan.start) / (plan.end - plan.start)),
            f"{self.clock.astimezone(plan.start.tzinfo):%a %H:%M} x{self.governor.speed:g} "
            f"RSS {sample['rss_mb']:.0f} MB, Redis {used_mb:.0f} MB, "
            f"{sample['applied']:,.0f} events, {run.log.rounds} rounds, "
            f"{len(run.log.errors)} errors",
        )
        return sample

    def census(self, sample: dict[str, Any], *, final: bool) -> None:
        """A census into `sample`: exact at the warm-up's end and at the end, both taken
        with the clock paused and the daemon drained (`census_sample`)."""
        run, plan = self.run, self.run.plan
        warm = not self.warm_done and self.clock >= self.warm_at
        sample |= census_sample(run.client, run.site.keys.base, exact=warm or final)
        if warm or final:  # where the daemon's memory is, with --trace-memory (soakparts)
            sample["heap_dump"] = heap_dump(run.args.trace_memory, run.daemon.pid)
        if warm:
            sample["warmup_end"] = self.warm_done = True
        step = dt.timedelta(hours=plan.census_hours)
        while self.next_census <= self.clock:
            self.next_census += step


def sample_week(week: WeekRun, console: Console) -> list[dict[str, Any]]:
    """`WeekSampler.loop` behind a progress bar."""
    bar = Progress(
        TextColumn("[bold]soak week"), BarColumn(), TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(), console=console,
    )  # fmt: skip
    with bar:
        task = bar.add_task("week", total=1.0, status="starting")
        sampler = WeekSampler(
            week, lambda done, status: bar.update(task, completed=done, status=status)
        )
        return sampler.loop()
