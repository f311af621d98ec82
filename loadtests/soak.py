"""Soak: the daemon under a 10,000-EGM Saturday-night floor for a long while, a draw every
five simulated minutes, with its memory, Redis and log watched throughout.

    python loadtests/soak.py                    # = make soak: 30 minutes
    python loadtests/soak.py --minutes 4        # a short run
    python loadtests/soak.py --week             # = make soak-week: a week in ~34 minutes
    python loadtests/soak.py --help             # every option

The floor, instant and rate are the `saturday-20h` load scenario's (docs/loadtests.md):
`loadtests/floors/mega-10k.toml` (10,000 EGMs, 400 tables, 470,000 members imported with
`bonusd members import`) from Saturday 25 October 2025 20:00, every game, ~1,360 events/s,
published by the floor simulator itself (`python -m simulators run`) on the daemon's
shared clock at x1. The promotion is generated for the run (`soak_promotion`): one draw
per five simulated minutes, each with its own five-minute play window, a round of three
winners at the window's end; members on the floor activate entries at a kiosk
(`POST .../activations`) as the night goes on. Own Redis (no persistence) and Mosquitto
(bonusd's configuration) unless --redis-url / --mqtt-url; own site (`soak-xxxxxx`).

Every --sample-s seconds: the daemon's RSS, Redis used_memory and keys, events applied,
rounds drawn, warnings and errors in the daemon's log; every --census-s a SCAN of the
site's keys by family with their estimated bytes (loadtests/soakcensus.py). The retention
sweeper (bonusd/service/retention.py) runs every five simulated minutes: in the daemon when the
daemon runs it, else in this process against the same Redis and clock. The report
(`soak.json`, `soak.md`, the daemon's log) goes to --out; exit status 1 if a check fails.

`--week` plays a week of the floor instead, compressed on the shared clock, with the real
Festa Fortuna campaign moved to the run's week: loadtests/soakweek.py says how, and
loadtests/soakweekreport.py what it reports and checks.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
import psutil
import redis
import redis.asyncio as aioredis
import soakweek as wk
from floorload import prepare
from floorload.runner import PrivateRedis
from floorload.scenarios import ROOT, SCENARIOS
from floorload.services import forget_session, start_daemon, stop_daemon, wait_healthy
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from soakcensus import redis_memory, take_census
from soakparts import (
    DRAW_EVERY_MIN,
    Kiosks,
    LogWatch,
    SweeperThread,
    daemon_runs_sweeper,
    log_sweeper_to,
    soak_promotion,
    trace_env,
)
from soakreport import report
from soakweekreport import week_report

from bonusd.access.auth import Role, TokenStore
from bonusd.infra.keys import Keys
from simulators import build_floor, load_floor
from simulators.local.services import LocalMosquitto, free_port

SWEEP_EVERY_S = 300  # simulated: one retention sweep per draw
console = Console(stderr=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The soak's command line."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--minutes", type=int, default=30, help="run length, wall minutes [30]")
    p.add_argument(
        "--scenario", choices=sorted(SCENARIOS), default="saturday-20h",
        help="whose floor, instant and seed (smoke: the small ci floor, to try the script)",
    )  # fmt: skip
    p.add_argument("--warmup", type=float, help="minutes before the baseline [5, or a third]")
    p.add_argument("--sample-s", type=float, help="seconds between samples [10; week 5]")
    p.add_argument("--census-s", type=float, default=120.0, help="seconds between key censuses")
    p.add_argument("--out", type=Path, help="report folder [.run/soak, .run/soak-week]")
    p.add_argument("--redis-url", help="an existing Redis [a throwaway redis-server]")
    p.add_argument("--mqtt-url", help="an existing broker [a throwaway Mosquitto]")
    p.add_argument("--rss-tolerance", type=float, help="RSS change allowed [0.10; week 0.05]")
    wk.add_week_options(p)
    args = p.parse_args(argv)
    if args.out is None:
        args.out = ROOT / ".run" / ("soak-week" if args.week else "soak")
    if args.sample_s is None:
        args.sample_s = 5.0 if args.week else 10.0
    if args.rss_tolerance is None:
        args.rss_tolerance = 0.05 if args.week else 0.10
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    soak = Soak(args)
    try:
        soak.run()
    finally:
        soak.tear_down()
    if args.week:
        return week_report(args, soak.results, soak.log)
    return report(args, soak.results, soak.log)


class Soak:
    """One soak run: its site and work folder, the servers, the daemon, the simulator and
    the sweeper, and what the run found (`results`, the daemon's `log`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.warmup_min = args.warmup if args.warmup is not None else min(5.0, args.minutes / 3)
        self.scn = SCENARIOS[args.scenario]
        args.out.mkdir(parents=True, exist_ok=True)
        self.work = work = Path(tempfile.mkdtemp(prefix="bonusd-soak-"))
        self.site = prepare.Site(f"soak-{uuid.uuid4().hex[:6]}", "soak", "soak")
        self.own_redis = None if args.redis_url else PrivateRedis(work / "redis")
        self.broker = None if args.mqtt_url else LocalMosquitto(work / "mqtt")
        self.daemon: subprocess.Popen[bytes] | None = None
        self.sim: subprocess.Popen[bytes] | None = None
        self.plan = (
            wk.WeekPlan.from_args(args, load_floor(self.scn.floor).zone) if args.week else None
        )
        self.results: dict[str, Any] = {
            "site": self.site.site, "minutes": args.minutes, "warmup_min": self.warmup_min,
        }  # fmt: skip
        self.log = LogWatch(work / "daemon.log")
        self.sweeper_log = LogWatch(work / "none.log")

    def build(self) -> tuple[Any, Any, dt.datetime]:
        """The floor and the run's start: the scenario's, or the week's."""
        if self.plan is None:
            return prepare.build(self.scn)
        spec = load_floor(self.scn.floor)
        floor = build_floor(spec.config, seed=self.scn.seed, as_of=self.plan.start.date())
        return spec, floor, self.plan.start

    def run(self) -> None:
        """Start the servers, import the floor, start the daemon, the simulator and (if
        the daemon does not run it) the sweeper; sample until the run's end."""
        args, site, work, results, plan = self.args, self.site, self.work, self.results, self.plan
        for server in (self.own_redis, self.broker):
            if server is not None:
                server.workdir.mkdir(parents=True, exist_ok=True)
                server.start()
        redis_url = args.redis_url or self.own_redis.url  # type: ignore[union-attr]
        mqtt_url = args.mqtt_url or self.broker.url  # type: ignore[union-attr]
        console.print(f"soak: site {site.site}, Redis {redis_url}, broker {mqtt_url}")
        spec, floor, start = self.build()
        http_port = free_port()
        env = site.daemon_env(
            redis_url=redis_url, mqtt_url=mqtt_url, http_port=http_port, work=work, zone=spec.zone
        ) | {
            "BONUSD_CLOCK": "shared",
            "BONUSD_CLOCK_START": start.isoformat(),
            "BONUSD_CLOCK_SPEED": f"{wk.first_speed(plan, args, self.scn.floor):g}"
            if plan
            else "1",
            "BONUSD_LOG_LEVEL": "INFO",
            "BONUSD_RETENTION_AUDIT_ARCHIVE": str(work / "audit-archive"),
            "BONUSD_DIGEST_DIR": str(work / "audit-digests"),
            "BONUSD_SEED_KEY_FILE": str(work / "seed-key"),
            "BONUSD_RECEIPT_KEY_FILE": str(work / "receipt-key"),
        }
        if plan is None:  # the week sweeps at the production interval (an hour)
            env["BONUSD_RETENTION_INTERVAL_S"] = str(SWEEP_EVERY_S)
        importing = prepare.start_imports(floor, work / "registry", env)
        (work / "promotions").mkdir()
        promotion = work / "promotions" / "soak.toml"
        promotion.write_text(
            wk.week_promotion(site.site, plan)
            if plan
            else soak_promotion(site.site, start, args.minutes + DRAW_EVERY_MIN)
        )
        results["import"] = prepare.wait_imports(importing, work / "registry")
        console.print(f"soak: imported {results['import']}")
        r = redis.Redis.from_url(redis_url)
        days = plan.days + 2 if plan else 2
        kiosk = asyncio.run(_kiosk_token(redis_url, site.keys, start, days))
        base = f"http://127.0.0.1:{http_port}"
        traced = trace_env(bool(plan) and args.trace_memory, args.out)  # the daemon's alone
        self.daemon = start_daemon(env | traced, work / "daemon.log")
        wait_healthy(base, self.daemon, work / "daemon.log")
        if plan is not None:
            self.run_week(env, r, base, kiosk, (redis_url, mqtt_url))
            return
        self.start_simulator(env, start, redis_url=redis_url, mqtt_url=mqtt_url)
        sweeper = self.sweeper(env)
        if sweeper is not None:
            sweeper.__enter__()
        samples = _run(
            args=args,
            warmup_min=self.warmup_min,
            daemon=self.daemon,
            r=r,
            site=site,
            base=base,
            kiosk=kiosk,
            log=self.log,
            start=start,
        )
        results["samples"] = samples
        if sweeper is not None:
            sweeper.__exit__()
            results["sweeps_in_soak_process"] = sweeper.sweeps

    def run_week(
        self, env: dict[str, str], r: redis.Redis, base: str, kiosk: str, urls: tuple[str, str]
    ) -> None:
        """The week: the simulator on the shared clock, sampled until the week's end."""
        plan, site, work = self.plan, self.site, self.work
        assert plan is not None
        assert self.daemon is not None
        if not daemon_runs_sweeper():
            raise SystemExit("the week mode needs the daemon's own retention sweeper")
        self.results["sweeper"] = "daemon"
        self.results["week"] = plan.describe(self.scn.floor)
        command = wk.simulator_command(
            plan, self.scn.floor, self.scn.seed, site, urls=urls,
            promotion=work / "promotions" / "soak.toml",
        )  # fmt: skip
        with (work / "simulator.log").open("wb") as sim_log:
            self.sim = subprocess.Popen(command, stdout=sim_log, stderr=subprocess.STDOUT, env=env)
        week = wk.WeekRun(
            plan=plan, args=self.args, daemon=self.daemon, sim=self.sim, client=r, site=site,
            base=base, kiosk_token=kiosk, log=self.log, redis_url=urls[0], floor=self.scn.floor,
        )  # fmt: skip
        self.results["samples"] = wk.sample_week(week, console)

    def start_simulator(
        self, env: dict[str, str], start: dt.datetime, *, redis_url: str, mqtt_url: str
    ) -> None:
        """Start the floor simulator on the site's shared clock (its log: simulator.log)."""
        args, scn, site, work = self.args, self.scn, self.site, self.work
        sim_cmd = [
            sys.executable, "-m", "simulators", "run", "--floor", scn.floor,
            "--seed", str(scn.seed), "--start", start.isoformat(),
            "--duration", f"{args.minutes + 3}m", "--speed", "1", "--clock", "shared",
            "--redis-url", redis_url, "--key-prefix", site.key_prefix, "--site", site.site,
            "--prefix", site.topic_prefix, "--mqtt-url", mqtt_url, "--no-progress",
            "--promotion", str(work / "promotions" / "soak.toml"),
        ]  # fmt: skip
        with (work / "simulator.log").open("wb") as sim_log:
            self.sim = subprocess.Popen(sim_cmd, stdout=sim_log, stderr=subprocess.STDOUT, env=env)

    def sweeper(self, env: dict[str, str]) -> SweeperThread | None:
        """The sweeper to run in this process, or None when the daemon runs it."""
        in_daemon = daemon_runs_sweeper()
        if not in_daemon:  # its log beside the daemon's, read by the same watch
            log_sweeper_to(self.work / "sweeper.log")
            self.sweeper_log.path = self.work / "sweeper.log"
        self.results["sweeper"] = "daemon" if in_daemon else "soak process"
        return None if in_daemon else SweeperThread(env)

    def tear_down(self) -> None:
        """Stop the simulator and the daemon, read the logs, keep them (and the audit
        archive) in --out, stop the servers and delete the work folder."""
        args, work, log, sweeper_log = self.args, self.work, self.log, self.sweeper_log
        if self.sim is not None and self.sim.poll() is None:
            self.sim.terminate()
            self.sim.wait(30)
        if self.daemon is not None:
            self.results["daemon_exit"] = stop_daemon(self.daemon)
            if self.broker is not None or args.mqtt_url:
                host_port = (args.mqtt_url or self.broker.url).split("//")[1]  # type: ignore[union-attr]
                host, port = host_port.rsplit(":", 1)
                forget_session(host, int(port), f"bonusd-{self.site.site}")
        log.read()
        sweeper_log.read()
        log.errors += sweeper_log.errors
        log.warnings += sweeper_log.warnings
        log.sweeps += sweeper_log.sweeps
        for name in ("daemon.log", "simulator.log", "sweeper.log"):
            if (work / name).exists():
                shutil.copy(work / name, args.out / name)
        for folder in ("audit-archive", "audit-digests", "promotions"):
            if (work / folder).exists():
                shutil.copytree(work / folder, args.out / folder, dirs_exist_ok=True)
        for server in (self.broker, self.own_redis):
            if server is not None:
                server.stop()
        shutil.rmtree(work, ignore_errors=True)


async def _kiosk_token(redis_url: str, keys: Keys, now: dt.datetime, days: float) -> str:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        store = TokenStore(r, keys)
        issued = await store.issue(
            role=Role.KIOSK, name="soak kiosks", now=now, valid_for=dt.timedelta(days=days)
        )
        return issued.token
    finally:
        await r.aclose()


def _run(
    *,
    args: argparse.Namespace,
    warmup_min: float,
    daemon: subprocess.Popen[bytes],
    r: redis.Redis,
    site: prepare.Site,
    base: str,
    kiosk: str,
    log: LogWatch,
    start: dt.datetime,
) -> list[dict[str, Any]]:
    """Sample until the run's end; the census at the warm-up's end and at the end."""
    proc = psutil.Process(daemon.pid)
    rng = random.Random(7)
    samples: list[dict[str, Any]] = []
    total_s, warm_s = args.minutes * 60.0, warmup_min * 60.0
    t0 = time.monotonic()
    next_census, warm_done = 0.0, False
    clock, health_misses = start, 0
    bar = Progress(
        TextColumn("[bold]soak"),
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
    )
    with bar, Kiosks(base, kiosk, r, site) as kiosks:
        task = bar.add_task("soak", total=total_s, status="starting")
        while True:
            elapsed = time.monotonic() - t0
            last = elapsed >= total_s
            if daemon.poll() is not None:
                raise SystemExit(f"the daemon exited (status {daemon.returncode}): see its log")
            try:
                health = httpx.get(f"{base}/health", timeout=10).json()
                clock = dt.datetime.fromisoformat(health["clock"])
            except httpx.HTTPError:  # the daemon too busy to answer in 10 s: noted
                health, health_misses = {"clock": clock.isoformat()}, health_misses + 1
            n = int((clock - start).total_seconds() // (DRAW_EVERY_MIN * 60)) + 1
            kiosks.draw = f"d{n:03d}"
            log.read()
            used_mb, dbsize = redis_memory(r)
            sample: dict[str, Any] = {
                "t_s": round(elapsed, 1),
                "clock": health["clock"],
                "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                "redis_used_mb": round(used_mb, 1),
                "dbsize": dbsize,
                "applied": int(r.hget(f"{site.keys.base}stats", "applied") or 0),
                "rounds_drawn": log.rounds,
                "warnings": len(log.warnings),
                "errors": len(log.errors),
                "ingest_lag_s": health.get("ingest_lag_seconds"),
                "health_unanswered": health_misses,
            }
            census_due = elapsed >= next_census or last or (not warm_done and elapsed >= warm_s)
            if census_due:
                c = take_census(r, site.keys.base, rng)
                sample |= {
                    "families": dict(c.keys),
                    "family_mb": {f: round(b / 2**20, 2) for f, b in c.bytes.items()},
                    "retained_mb": round(c.retained_mb(), 1),
                    "bounded_mb": round(c.bounded_mb(), 1),
                    "seen_ids": c.seen_ids,
                }
                next_census = elapsed + args.census_s
                if not warm_done and elapsed >= warm_s:
                    sample["warmup_end"] = warm_done = True
            sample["activations"] = dict(kiosks.counts)
            samples.append(sample)
            status = (
                f"{clock.astimezone(start.tzinfo):%H:%M:%S} RSS {sample['rss_mb']:.0f} MB, "
                f"Redis {used_mb:.0f} MB, "
                f"{sample['applied']:,.0f} events, {log.rounds} rounds, {len(log.errors)} errors"
            )
            bar.update(task, completed=min(elapsed, total_s), status=status)
            if last:
                return samples
            time.sleep(max(0.0, min(args.sample_s, total_s - (time.monotonic() - t0))))


if __name__ == "__main__":
    sys.exit(main())
