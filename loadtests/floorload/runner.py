"""Run one named scenario end to end: set up, baseline, load, tear down, report.

1. Set-up (not measured): a private site (`lt-xxxxxx`, key prefix `lt`, topic prefix
   `lt`), the floor exported and imported with the `bonusd` command, the scenario's
   promotion moved to the site, the stream written as slices, tokens issued; a throwaway
   Mosquitto with bonusd's broker configuration unless `--mqtt-url` names a broker.
2. Bare baseline (`--baseline-time`, default the scenario's): the same MQTT users play
   the same stream for that long to the same broker under another topic prefix, read by
   a subscriber that only counts; no daemon runs.
3. The daemon (`bonusd run`, its clock at the scenario's instant and speed) unless
   `--daemon-url` names a running one; the warm-up's card events set the floor; then
   every user class for `--run-time`, with CPU and /health sampled every second and
   /metrics read before and after.
4. Tear-down: the daemon stopped and its MQTT session ended, the site's keys deleted
   (a running daemon's site keeps its data; the run's tokens are revoked), the broker
   stopped. The report (locust's HTML and CSV per phase, summary.md/json) is in `--out`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import redis
import redis.asyncio as aioredis

from bonusd.access.auth import TokenStore
from bonusd.promotions import Promotion
from floorload import prepare, report
from floorload.config import CONFIG_ENV, LoadConfig, Options, Tokens
from floorload.sampler import Sampler
from floorload.scenarios import ROOT, Scenario
from floorload.services import (
    BareSubscriber,
    Metrics,
    forget_session,
    open_draw,
    publish_all,
    scrape,
    start_daemon,
    stop_daemon,
    wait_healthy,
)
from simulators.local.services import LocalMosquitto, LocalRedis, free_port

LOCUSTFILE = ROOT / "loadtests" / "locustfile.py"
MQTT_CLASSES = ("EgmBank", "TablePit", "IngestProbe")


class PrivateRedis(LocalRedis):
    """A throwaway redis-server for the run, without persistence (as docs/benchmarks.md's
    machine): the shared Redis of a development machine carries other work."""

    def command(self) -> list[str]:
        return [
            "redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
            "--dir", str(self.workdir), "--appendonly", "no", "--save", "",
        ]  # fmt: skip


def pick_draw(promotion: Promotion, day: dt.date) -> str:
    """Tonight's draw of the promotion, or its next one."""
    draws = sorted(promotion.draw_list, key=lambda d: d.date)
    for d in draws:
        if d.date >= day:
            return d.id
    return draws[-1].id


def users_of(scn: Scenario) -> dict[str, int]:
    return {
        "EgmBank": scn.egm_users,
        "TablePit": scn.table_users,
        "IngestProbe": 1,
        "SignageScreen": sum(scn.signage.values()),
        "CrewHandheld": scn.crew,
        "PromotionsDesk": scn.desk,
        "Kiosk": scn.kiosks,
    }


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


def redis_pid(url: str) -> int | None:
    info: dict[str, Any] = redis.Redis.from_url(url).info("server")
    return int(info["process_id"]) if "process_id" in info else None


def delete_site(url: str, base: str) -> int:
    r = redis.Redis.from_url(url)
    batch: list[bytes] = []
    deleted = 0
    for key in r.scan_iter(match=f"{base}*", count=10_000):
        batch.append(key)
        if len(batch) >= 5000:
            deleted += int(r.unlink(*batch))
            batch.clear()
    if batch:
        deleted += int(r.unlink(*batch))
    return deleted


def wait_applied(base: str, target: float, timeout: float = 120.0) -> float:
    deadline = time.monotonic() + timeout
    applied = 0.0
    while time.monotonic() < deadline:
        applied = scrape(base).applied
        if applied >= target:
            break
        time.sleep(0.5)
    return applied


def drained(base: str, timeout: float = 30.0) -> None:
    """Wait until the daemon has nothing pending (what locust published is committed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        h = httpx.get(f"{base}/health", timeout=5).json()
        if int(h.get("pending_messages", 0)) == 0 and float(h["ingest_lag_seconds"]) == 0:
            return
        time.sleep(0.5)


def daemon_pid(daemon: subprocess.Popen[bytes] | None) -> int | None:
    return daemon.pid if daemon is not None else None


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


def run(scn: Scenario, opts: Options) -> dict[str, Any]:
    opts.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"bonusd-load-{scn.name}-"))
    tag = uuid.uuid4().hex[:6]
    site = prepare.Site(opts.site or f"lt-{tag}", opts.key_prefix, opts.topic_prefix)
    broker = LocalMosquitto(work / "mosquitto") if opts.mqtt_url is None else None
    own_redis = PrivateRedis(work / "redis") if opts.redis_url is None else None
    for server in (broker, own_redis):
        if server is not None:
            server.start()
    mqtt_url = opts.mqtt_url or (broker.url if broker else "")
    redis_url = opts.redis_url or (own_redis.url if own_redis else "")
    mq = urlsplit(mqtt_url)
    mq_host, mq_port = mq.hostname or "127.0.0.1", mq.port or 1883
    http_port = free_port()
    base = opts.daemon_url or f"http://127.0.0.1:{http_port}"
    daemon: subprocess.Popen[bytes] | None = None
    tokens: Tokens | None = None
    results: dict[str, Any] = {"scenario": scn.name, "site": site.site}
    t_setup = time.monotonic()
    try:
        spec, floor, start = prepare.build(scn)
        measured = start + dt.timedelta(seconds=scn.warmup_s)
        shift = dt.timedelta(0)
        clock_start = measured - dt.timedelta(seconds=15)
        if opts.daemon_url:
            clock = dt.datetime.fromisoformat(wait_healthy(base, None, work / "none")["clock"])
            shift, clock_start = clock - measured, clock
        env = site.daemon_env(
            redis_url=redis_url, mqtt_url=mqtt_url, http_port=http_port, work=work, zone=spec.zone
        ) | {
            "BONUSD_CLOCK": "simulated",
            "BONUSD_CLOCK_START": clock_start.isoformat(),
            "BONUSD_CLOCK_SPEED": str(opts.speed),
            "BONUSD_LOG_LEVEL": "WARNING",
        }
        importing = prepare.start_imports(floor, work / "registry", env)
        promotion = prepare.write_promotion(scn.promotion, site.site, work / "promotions")
        promotion_id, draw = promotion.id, pick_draw(promotion, start.date())
        seconds = (max(opts.run_time_s, opts.baseline_s) + 30) * opts.speed
        stream = prepare.write_stream(
            scn, floor, start, promotion, zone=spec.zone, seconds=seconds,
            folder=work / "slices", shift=shift,
        )  # fmt: skip
        results["import"] = prepare.wait_imports(importing, work / "registry")
        areas = sorted(scn.signage)
        tokens = asyncio.run(prepare.issue_tokens(redis_url, site.keys, areas, clock_start))
        if opts.daemon_url:  # its own promotions, not the scenario's copy
            promotion_id, draw = open_draw(base, tokens.desk) or (promotion.id, draw)
        results["setup_s"] = round(time.monotonic() - t_setup, 1)
        users = users_of(scn)

        def config(phase: str, head: str) -> LoadConfig:
            return LoadConfig(
                phase=phase, run_tag=tag, speed=opts.speed, mqtt_host=mq_host,
                mqtt_port=mq_port, topic_head=head, redis_url=redis_url,
                key_base=site.keys.base, http_base=base if phase == "full" else "",
                slices=str(work / "slices"), egm_slices=stream.egm_slices,
                table_slices=stream.table_slices, users=users, signage_areas=scn.signage,
                tokens=tokens, promotion=promotion_id, draw=draw,
                gaming_day=start.date().isoformat(), cards=stream.floor_cards,
                desk_wait=scn.desk_wait, kiosk_wait=scn.kiosk_wait,
                screen_hold=scn.screen_hold,
            )  # fmt: skip

        shared = {"broker": broker.proc.pid if broker and broker.proc else None}
        shared["redis"] = redis_pid(redis_url)
        if opts.baseline_s:
            bare_head = f"{site.topic_prefix}bare/{site.site}/"
            cfg = config("bare", bare_head)
            with BareSubscriber(mq_host, mq_port, f"{bare_head}+/+/events") as bare:
                proc, _log = run_locust(
                    cfg, list(MQTT_CLASSES), opts.baseline_s, opts.out / "baseline",
                    opts.processes,
                )  # fmt: skip
                pids = {**shared, "locust": proc.pid, "bare subscriber": bare.pid}
                with Sampler(pids, None) as sampler:
                    rc = proc.wait()
            results["baseline"] = {
                "seconds": opts.baseline_s,
                "locust_exit": rc,
                "bare_received": bare.received,
                "samples": sampler.samples.summary(),
            }
        if opts.daemon_url is None:
            daemon = start_daemon(env, work / "daemon.log")
        wait_healthy(base, daemon, work / "daemon.log")
        warm = [(f"{site.topic_head}{kd}/events", body) for kd, body in stream.warmup]
        before = scrape(base)
        results["warmup"] = {
            "events": len(warm),
            "publish_s": round(publish_all(mq_host, mq_port, warm), 2),
            "applied": wait_applied(base, before.applied + len(warm)) - before.applied,
        }
        cfg = config("full", site.topic_head)
        settled = opts.out / "locust-startup.json"
        settled.unlink(missing_ok=True)
        if opts.settle_s:
            cfg.extra.update(settled=str(settled), settle_s=opts.settle_s)
        cfg.extra["desk_summary"] = opts.desk_summary
        results["full"] = full_phase(cfg, opts, base, {**shared, "daemon": daemon_pid(daemon)})
    finally:
        if daemon is not None:
            results["daemon_exit"] = stop_daemon(daemon)
            forget_session(mq_host, mq_port, f"bonusd-{site.site}")
        if opts.daemon_url is None and own_redis is None:
            results["keys_deleted"] = delete_site(redis_url, site.keys.base)
        elif tokens is not None:
            asyncio.run(_revoke(redis_url, site, tokens))
        for server in (broker, own_redis):
            if server is not None:
                server.stop()
        if (work / "daemon.log").exists():
            shutil.copy(work / "daemon.log", opts.out / "daemon.log")
        shutil.rmtree(work, ignore_errors=True)
    return report.write(scn, opts, results, stream, users)


async def _revoke(redis_url: str, site: prepare.Site, tokens: Tokens) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    store = TokenStore(r, site.keys)
    now = dt.datetime.now(dt.UTC)
    for token in [*tokens.signage.values(), tokens.crew, tokens.desk, tokens.kiosk]:
        await store.revoke(token.split("_")[1], now)
    await r.aclose()
