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
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis
import redis.asyncio as aioredis

from bonusd.access.auth import TokenStore
from bonusd.promotions import Promotion
from floorload import prepare, report
from floorload.config import LoadConfig, Options, Tokens
from floorload.locustrun import full_phase, run_locust
from floorload.sampler import Sampler
from floorload.scenarios import Scenario
from floorload.services import (
    BareSubscriber,
    forget_session,
    open_draw,
    publish_all,
    scrape,
    start_daemon,
    stop_daemon,
    wait_healthy,
)
from simulators.local.services import LocalMosquitto, LocalRedis, free_port

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


def daemon_pid(daemon: subprocess.Popen[bytes] | None) -> int | None:
    return daemon.pid if daemon is not None else None


def run(scn: Scenario, opts: Options) -> dict[str, Any]:
    """Run the scenario end to end; returns the summary the report holds."""
    r = ScenarioRun(scn, opts)
    r.start_servers()
    try:
        r.set_up()
        shared = r.server_pids()
        if opts.baseline_s:
            r.results["baseline"] = r.baseline(shared)
        r.warm_up()
        r.results["full"] = r.full(shared)
    finally:
        r.tear_down()
    return report.write(scn, opts, r.results, r.stream, r.users)


class ScenarioRun:
    """One run of a scenario: its site, work folder and servers, the daemon, and what
    the set-up and each phase found (`results`)."""

    # set by start_servers
    mqtt_url: str
    redis_url: str
    mq_host: str
    mq_port: int
    http_port: int
    base: str
    t_setup: float
    # set by set_up
    env: dict[str, str]
    promotion_id: str
    draw: str
    stream: prepare.Stream
    gaming_day: str
    users: dict[str, int]

    def __init__(self, scn: Scenario, opts: Options) -> None:
        self.scn, self.opts = scn, opts
        opts.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix=f"bonusd-load-{scn.name}-"))
        self.tag = uuid.uuid4().hex[:6]
        self.site = prepare.Site(opts.site or f"lt-{self.tag}", opts.key_prefix, opts.topic_prefix)
        self.broker = LocalMosquitto(self.work / "mosquitto") if opts.mqtt_url is None else None
        self.own_redis = PrivateRedis(self.work / "redis") if opts.redis_url is None else None
        self.daemon: subprocess.Popen[bytes] | None = None
        self.tokens: Tokens | None = None
        self.results: dict[str, Any] = {"scenario": scn.name, "site": self.site.site}

    def start_servers(self) -> None:
        """Start the throwaway broker and Redis (those the options do not name)."""
        opts, broker, own_redis = self.opts, self.broker, self.own_redis
        for server in (broker, own_redis):
            if server is not None:
                server.start()
        self.mqtt_url = opts.mqtt_url or (broker.url if broker else "")
        self.redis_url = opts.redis_url or (own_redis.url if own_redis else "")
        mq = urlsplit(self.mqtt_url)
        self.mq_host, self.mq_port = mq.hostname or "127.0.0.1", mq.port or 1883
        self.http_port = free_port()
        self.base = opts.daemon_url or f"http://127.0.0.1:{self.http_port}"
        self.t_setup = time.monotonic()

    def set_up(self) -> None:
        """Import the floor, move the promotion to the site, write the stream as slices
        and issue the tokens (not measured)."""
        scn, opts, site, work = self.scn, self.opts, self.site, self.work
        spec, floor, start = prepare.build(scn)
        measured = start + dt.timedelta(seconds=scn.warmup_s)
        shift = dt.timedelta(0)
        clock_start = measured - dt.timedelta(seconds=15)
        if opts.daemon_url:
            clock = dt.datetime.fromisoformat(wait_healthy(self.base, None, work / "none")["clock"])
            shift, clock_start = clock - measured, clock
        self.env = site.daemon_env(
            redis_url=self.redis_url, mqtt_url=self.mqtt_url, http_port=self.http_port,
            work=work, zone=spec.zone,
        ) | {
            "BONUSD_CLOCK": "simulated",
            "BONUSD_CLOCK_START": clock_start.isoformat(),
            "BONUSD_CLOCK_SPEED": str(opts.speed),
            "BONUSD_LOG_LEVEL": "WARNING",
        }  # fmt: skip
        importing = prepare.start_imports(floor, work / "registry", self.env)
        promotion = prepare.write_promotion(scn.promotion, site.site, work / "promotions")
        self.promotion_id, self.draw = promotion.id, pick_draw(promotion, start.date())
        seconds = (max(opts.run_time_s, opts.baseline_s) + 30) * opts.speed
        self.stream = prepare.write_stream(
            scn, floor, start, promotion, zone=spec.zone, seconds=seconds,
            folder=work / "slices", shift=shift,
        )  # fmt: skip
        self.gaming_day = start.date().isoformat()
        self.results["import"] = prepare.wait_imports(importing, work / "registry")
        areas = sorted(scn.signage)
        self.tokens = asyncio.run(
            prepare.issue_tokens(self.redis_url, site.keys, areas, clock_start)
        )
        if opts.daemon_url:  # its own promotions, not the scenario's copy
            opened = open_draw(self.base, self.tokens.desk)
            self.promotion_id, self.draw = opened or (promotion.id, self.draw)
        self.results["setup_s"] = round(time.monotonic() - self.t_setup, 1)
        self.users = users_of(self.scn)

    def config(self, phase: str, head: str) -> LoadConfig:
        """The locust users' config for `phase`, publishing under `head`."""
        scn, stream = self.scn, self.stream
        return LoadConfig(
            phase=phase, run_tag=self.tag, speed=self.opts.speed, mqtt_host=self.mq_host,
            mqtt_port=self.mq_port, topic_head=head, redis_url=self.redis_url,
            key_base=self.site.keys.base, http_base=self.base if phase == "full" else "",
            slices=str(self.work / "slices"), egm_slices=stream.egm_slices,
            table_slices=stream.table_slices, users=self.users, signage_areas=scn.signage,
            tokens=self.tokens, promotion=self.promotion_id, draw=self.draw,
            gaming_day=self.gaming_day, cards=stream.floor_cards,
            desk_wait=scn.desk_wait, kiosk_wait=scn.kiosk_wait,
            screen_hold=scn.screen_hold,
        )  # fmt: skip

    def server_pids(self) -> dict[str, int | None]:
        """The broker's and Redis's processes, for the CPU samples."""
        broker = self.broker
        shared = {"broker": broker.proc.pid if broker and broker.proc else None}
        shared["redis"] = redis_pid(self.redis_url)
        return shared

    def baseline(self, shared: dict[str, int | None]) -> dict[str, Any]:
        """The MQTT users play the stream to a bare subscriber, with no daemon."""
        opts, site = self.opts, self.site
        bare_head = f"{site.topic_prefix}bare/{site.site}/"
        cfg = self.config("bare", bare_head)
        with BareSubscriber(self.mq_host, self.mq_port, f"{bare_head}+/+/events") as bare:
            proc, _log = run_locust(
                cfg, list(MQTT_CLASSES), opts.baseline_s, opts.out / "baseline", opts.processes
            )
            pids = {**shared, "locust": proc.pid, "bare subscriber": bare.pid}
            with Sampler(pids, None) as sampler:
                rc = proc.wait()
        return {
            "seconds": opts.baseline_s,
            "locust_exit": rc,
            "bare_received": bare.received,
            "samples": sampler.samples.summary(),
        }

    def warm_up(self) -> None:
        """Start the daemon (unless one runs) and publish the warm-up's card events."""
        if self.opts.daemon_url is None:
            self.daemon = start_daemon(self.env, self.work / "daemon.log")
        wait_healthy(self.base, self.daemon, self.work / "daemon.log")
        warm = [(f"{self.site.topic_head}{kd}/events", body) for kd, body in self.stream.warmup]
        before = scrape(self.base)
        self.results["warmup"] = {
            "events": len(warm),
            "publish_s": round(publish_all(self.mq_host, self.mq_port, warm), 2),
            "applied": wait_applied(self.base, before.applied + len(warm)) - before.applied,
        }

    def full(self, shared: dict[str, int | None]) -> dict[str, Any]:
        """Every user class against the daemon for the run time."""
        opts = self.opts
        cfg = self.config("full", self.site.topic_head)
        settled = opts.out / "locust-startup.json"
        settled.unlink(missing_ok=True)
        if opts.settle_s:
            cfg.extra.update(settled=str(settled), settle_s=opts.settle_s)
        cfg.extra["desk_summary"] = opts.desk_summary
        return full_phase(cfg, opts, self.base, {**shared, "daemon": daemon_pid(self.daemon)})

    def tear_down(self) -> None:
        """Stop the daemon, delete the site's keys (or revoke the run's tokens), stop the
        servers, keep the daemon's log in --out and delete the work folder."""
        opts, site, work, results = self.opts, self.site, self.work, self.results
        if self.daemon is not None:
            results["daemon_exit"] = stop_daemon(self.daemon)
            forget_session(self.mq_host, self.mq_port, f"bonusd-{site.site}")
        if opts.daemon_url is None and self.own_redis is None:
            results["keys_deleted"] = delete_site(self.redis_url, site.keys.base)
        elif self.tokens is not None:
            asyncio.run(_revoke(self.redis_url, site, self.tokens))
        for server in (self.broker, self.own_redis):
            if server is not None:
                server.stop()
        if (work / "daemon.log").exists():
            shutil.copy(work / "daemon.log", opts.out / "daemon.log")
        shutil.rmtree(work, ignore_errors=True)


async def _revoke(redis_url: str, site: prepare.Site, tokens: Tokens) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    store = TokenStore(r, site.keys)
    now = dt.datetime.now(dt.UTC)
    for token in [*tokens.signage.values(), tokens.crew, tokens.desk, tokens.kiosk]:
        await store.revoke(token.split("_")[1], now)
    await r.aclose()
