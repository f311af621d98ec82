"""Benchmark: a 45 MB member import through a running daemon (`bonusd run` in a process
of its own), with `/health` latency sampled during it and the daemon's RSS, beside a bare
baseline: the same `/health` sampling with no import running, in the same run.

    .venv/bin/python loadtests/bench_import.py [--mb 45] [--format json|csv]
        [--interval-ms 20] [--baseline-s 5] [--pythonpath DIR]

Set-up (not timed): a throwaway site on the Redis given, a Mosquitto of its own, the
daemon started with `python -m bonusd run`, an admin token, and a member file of `--mb`
megabytes written to a temporary folder. Measured: the import's wall time (POST
/members/import until its answer), `/health` latency p50/p99/max (one request every
`--interval-ms`, each timed from send to answer) with and without the import, and the
daemon's RSS before, at its peak during, and after the import. `--pythonpath DIR` runs
the daemon from another checkout (its `bonusd` package first on the path), to measure an
older release the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import redis.asyncio as aioredis

from bonusd.access.auth import Role, TokenStore
from bonusd.infra.keys import Keys
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port

FIRST = ("Thandi", "Johan", "Lerato", "Pieter", "Naledi", "Sipho", "Anele", "Marike")
LAST = ("Mokoena", "Botha", "Dlamini", "van der Merwe", "Sithole", "Nkosi", "Pillay")


def member(n: int) -> dict[str, object]:
    return {
        "card": f"M{n:08d}",
        "name": f"{FIRST[n % len(FIRST)]} {LAST[n % len(LAST)]} {n}",
        "tier": ("10", "J", "Q", "K", "A")[n % 5],
        "app_user": n % 3 == 0,
        "date_of_birth": f"19{50 + n % 50}-{1 + n % 12:02d}-{1 + n % 28:02d}",
        "sms_opt_in": n % 4 == 0,
        "excluded": n % 97 == 0,
        "exclusion_reason": "self-exclusion" if n % 97 == 0 else "",
        "last_visit": f"2026-09-{1 + n % 28:02d}",
        "mobile": f"+2782{n % 10_000_000:07d}" if n % 2 else "",
    }


def write_members(path: Path, megabytes: float, fmt: str) -> int:
    """A member file of about `megabytes` MB; returns how many members it holds."""
    target = int(megabytes * 1_000_000)
    n, size = 0, 0
    with path.open("w", encoding="utf-8") as f:
        columns = list(member(0))
        if fmt == "csv":
            f.write(",".join(columns) + "\n")
        else:
            f.write("[\n")
        while size < target:
            row = member(n)
            if fmt == "csv":
                line = (
                    ",".join(
                        str(row[c]).lower() if row[c] in (True, False) else str(row[c])
                        for c in columns
                    )
                    + "\n"
                )
            else:
                line = ("," if n else "") + json.dumps(row) + "\n"
            f.write(line)
            size += len(line)
            n += 1
        if fmt == "json":
            f.write("]\n")
    return n


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def sample_health(
    http: httpx.AsyncClient, stop: asyncio.Event, interval_s: float, proc: psutil.Process
) -> tuple[list[float], int]:
    """/health latencies in ms until `stop`, and the daemon's peak RSS meanwhile."""
    times: list[float] = []
    peak = proc.memory_info().rss
    while not stop.is_set():
        start = time.perf_counter()
        (await http.get("/health")).raise_for_status()
        times.append((time.perf_counter() - start) * 1000)
        peak = max(peak, proc.memory_info().rss)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                stop.wait(), max(0.0, interval_s - (time.perf_counter() - start))
            )
    return times, peak


def summary(label: str, times: list[float]) -> str:
    return (
        f"{label:<28} {len(times):6d} samples  p50 {statistics.median(times):7.1f} ms  "
        f"p99 {percentile(times, 99):7.1f} ms  max {max(times):8.1f} ms"
    )


def parse_args() -> argparse.Namespace:
    """The benchmark's command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=45.0, help="size of the member file")
    ap.add_argument("--format", choices=("json", "csv"), default="json")
    ap.add_argument("--interval-ms", type=float, default=20.0)
    ap.add_argument("--baseline-s", type=float, default=5.0)
    ap.add_argument("--redis-url", default=Settings().redis_url)
    ap.add_argument("--pythonpath", type=Path, help="run the daemon from this checkout")
    return ap.parse_args()


def daemon_env(
    args: argparse.Namespace, *, site: str, mqtt_url: str, port: int, folder: Path
) -> dict[str, str]:
    """The environment of the daemon under test (its own site, port and broker)."""
    env = {
        **os.environ,
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": args.redis_url,
        "BONUSD_MQTT_URL": mqtt_url,
        "BONUSD_HTTP_PORT": str(port),
        "BONUSD_PROMOTIONS": str(folder / "promotions"),
        "BONUSD_LOG_LEVEL": "WARNING",
        "BONUSD_REDIS_CHECK": "off",  # a throwaway Redis, no persistence (docs/deploy.md)
    }
    if args.pythonpath is not None:
        env["PYTHONPATH"] = f"{args.pythonpath.resolve()}:{env.get('PYTHONPATH', '')}"
    return env


@dataclass(frozen=True)
class Measured:
    """What one run measured: the import's answer and wall time, /health latencies in ms
    without and during the import, and the daemon's RSS around it."""

    answer: httpx.Response
    wall: float
    baseline: list[float]
    during: list[float]
    rss_before: int
    peak: int
    rss_after: int


async def measure(
    args: argparse.Namespace, r: aioredis.Redis, *, keys: Keys, port: int, pid: int, members: Path
) -> Measured:
    """Wait for the daemon, sample /health bare, then during the import of `members`."""
    issued = await TokenStore(r, keys).issue(
        role=Role.ADMIN,
        name="bench import",
        now=dt.datetime.now(dt.UTC),
        valid_for=dt.timedelta(hours=2),
    )
    headers = {"Authorization": f"Bearer {issued.token}"}
    url = f"http://127.0.0.1:{port}"
    async with (
        httpx.AsyncClient(base_url=url, headers=headers, timeout=600) as http,
        httpx.AsyncClient(base_url=url, timeout=60) as probe,
    ):
        for _ in range(400):
            with contextlib.suppress(httpx.TransportError):
                if (await probe.get("/health")).status_code == 200:
                    break
            await asyncio.sleep(0.05)
        proc = psutil.Process(pid)
        interval = args.interval_ms / 1000
        stop = asyncio.Event()
        baseline_task = asyncio.create_task(sample_health(probe, stop, interval, proc))
        await asyncio.sleep(args.baseline_s)
        stop.set()
        baseline, _ = await baseline_task
        rss_before = proc.memory_info().rss
        body = members.read_bytes()  # noqa: ASYNC240 (nothing is sampled meanwhile)
        stop = asyncio.Event()
        during_task = asyncio.create_task(sample_health(probe, stop, interval, proc))
        start = time.perf_counter()
        answer = await http.post("/members/import", content=body)
        wall = time.perf_counter() - start
        stop.set()
        during, peak = await during_task
        del body
        await asyncio.sleep(2)
        rss_after = proc.memory_info().rss
    return Measured(answer, wall, baseline, during, rss_before, peak, rss_after)


def report(args: argparse.Namespace, size_mb: float, count: int, m: Measured) -> None:
    """Print the figures of the run."""
    where = f" (daemon from {args.pythonpath})" if args.pythonpath else ""
    print(f"member import{where}: {size_mb:.1f} MB {args.format}, {count:,} members")
    print(
        f"POST /members/import: HTTP {m.answer.status_code} {m.answer.text[:80]} in {m.wall:.1f} s"
    )
    print(summary("/health, no import (bare):", m.baseline))
    print(summary("/health, during the import:", m.during))
    mb = 1024 * 1024
    print(
        f"daemon RSS: {m.rss_before / mb:.0f} MB before, {m.peak / mb:.0f} MB peak during, "
        f"{m.rss_after / mb:.0f} MB 2 s after"
    )


async def main() -> None:
    args = parse_args()
    site = f"bench-import-{uuid.uuid4().hex[:6]}"
    port = free_port()
    r = aioredis.Redis.from_url(args.redis_url, decode_responses=True)
    keys = Keys(Settings().key_prefix, site)
    with tempfile.TemporaryDirectory() as tmp, LocalMosquitto(Path(tmp) / "mq") as broker:
        folder = Path(tmp)
        (folder / "promotions").mkdir()
        members_file = folder / f"members.{args.format}"
        count = write_members(members_file, args.mb, args.format)
        size_mb = members_file.stat().st_size / 1_000_000
        mqtt_url = broker.url  # type: ignore[attr-defined]
        env = daemon_env(args, site=site, mqtt_url=mqtt_url, port=port, folder=folder)
        daemon = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bonusd", "run", env=env, cwd=tmp
        )
        try:
            measured = await measure(
                args, r, keys=keys, port=port, pid=daemon.pid, members=members_file
            )
        finally:
            daemon.terminate()
            await asyncio.wait_for(daemon.wait(), 30)
            found = [k async for k in r.scan_iter(match=f"{keys.base}*", count=1000)]
            for start_at in range(0, len(found), 10_000):
                await r.delete(*found[start_at : start_at + 10_000])
            await r.aclose()
    report(args, size_mb, count, measured)


if __name__ == "__main__":
    asyncio.run(main())
