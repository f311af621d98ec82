"""Locust run headless for one phase of a load run (loadtests/floorload/runner.py): its
command and config file, and the full phase's start-up and steady part, each with the
daemon's metrics and the CPU and /health samples of its own seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from floorload.config import CONFIG_ENV, LoadConfig, Options
from floorload.sampler import Sampler
from floorload.scenarios import ROOT
from floorload.services import Metrics, scrape

LOCUSTFILE = ROOT / "loadtests" / "locustfile.py"


def run_locust(
    cfg: LoadConfig, classes: list[str], seconds: int, prefix: Path, processes: int
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start locust headless for `seconds` on `classes`; its report files get `prefix`.
    The config (it holds the run's tokens) stays in the run's work folder."""
    path = Path(cfg.slices).parent / f"{prefix.name}-config.json"
    cfg.write(path)
    total = sum(cfg.users[c] for c in classes)
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--headless",
        "-u",
        str(total),
        "-r",
        str(max(10, total // 4)),
        "--run-time",
        f"{seconds}s",
        "--stop-timeout",
        "5",
        "--csv",
        str(prefix),
        "--html",
        str(prefix.parent / f"{prefix.name}.html"),
        "--only-summary",
        "--loglevel",
        "WARNING",
    ]
    if processes:
        cmd += ["--processes", str(processes)]
    log = prefix.parent / f"{prefix.name}.log"
    with log.open("wb") as out:
        env = {**os.environ, CONFIG_ENV: str(path)}
        proc = subprocess.Popen([*cmd, *classes], env=env, stdout=out, stderr=subprocess.STDOUT)
    return proc, log


def drained(base: str, timeout: float = 30.0) -> None:
    """Wait until the daemon has nothing pending (what locust published is committed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        h = httpx.get(f"{base}/health", timeout=5).json()
        if int(h.get("pending_messages", 0)) == 0 and float(h["ingest_lag_seconds"]) == 0:
            return
        time.sleep(0.5)


def full_phase(
    cfg: LoadConfig, opts: Options, base: str, pids: dict[str, int | None]
) -> dict[str, Any]:
    """Every user for the run time: start-up (until the settle file appears) and steady
    part, each with the daemon's metrics and the samples of its own seconds."""
    settled = Path(cfg.extra["settled"]) if cfg.extra.get("settled") else None
    before = scrape(base)
    at_settle: Metrics | None = None
    proc, _log = run_locust(
        cfg, list(cfg.users), opts.run_time_s, opts.out / "locust", opts.processes
    )
    t_start = t_settle = time.monotonic()
    with Sampler({**pids, "locust": proc.pid}, f"{base}/health") as sampler:
        mark = 0
        while proc.poll() is None:
            if settled is not None and at_settle is None and settled.exists():
                at_settle, mark, t_settle = scrape(base), sampler.mark(), time.monotonic()
            time.sleep(0.2)
    t_end = time.monotonic()
    at_end = scrape(base)
    drained(base)
    steady_from = at_settle or before
    out: dict[str, Any] = {
        "seconds": opts.run_time_s,
        "steady_s": round(t_end - t_settle, 1),
        "locust_exit": proc.returncode,
        "metrics_steady": at_end.minus(steady_from),
        "metrics_drained": scrape(base).minus(before),
        "samples_steady": sampler.samples.summary(mark),
    }
    if at_settle is not None and settled is not None:
        out["startup"] = {
            "seconds": round(t_settle - t_start, 1),
            **json.loads(settled.read_text()),
            "metrics": at_settle.minus(before),
            "samples": sampler.samples.summary(0, mark),
        }
    return out
