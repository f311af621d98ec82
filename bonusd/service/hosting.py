"""How the daemon is hosted (docs/deploy.md): its HTTP server, and what it tells systemd
and the monitoring outside any request.

`HttpServing` runs `http_server`, uvicorn as the daemon runs it: without signal handlers of its own
(SIGTERM belongs to the `Service`), believing `X-Forwarded-For`/`-Proto` only from
`BONUSD_TRUSTED_PROXIES` (uvicorn's own default would believe loopback and read
`FORWARDED_ALLOW_IPS`), and logging through the daemon's handler in JSON mode.

`OpsWatch` is one task of the `Service`: `READY=1` to systemd once HTTP serves, a
`WATCHDOG=1` at half the unit's `WatchdogSec=` for as long as the event loop turns (a
loop that stops turning is killed and restarted by systemd; an outage of Redis or the
broker never stops the pings: the daemon waits those out), `STOPPING=1` at shutdown; and
the gauges the alert rules of deploy/prometheus/ read: Redis's memory and policy, the
oldest passed claim deadline, certificate expiries, websockets dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Generator
from pathlib import Path

import redis.exceptions
import uvicorn
from cryptography import x509
from redis.asyncio import Redis
from starlette.types import ASGIApp
from uvicorn.config import LOGGING_CONFIG

from bonusd.clocks.clock import Clock
from bonusd.errors import ConfigError
from bonusd.infra.backoff import pause
from bonusd.infra.health import Health
from bonusd.infra.keys import Keys
from bonusd.infra.metrics import Metrics
from bonusd.infra.redischeck import read_facts
from bonusd.infra.sdnotify import SystemdNotifier
from bonusd.push.hub import PushHub
from bonusd.settings import Settings

logger = logging.getLogger(__name__)

TICK_S = 1.0  # the watch's cadence: watchdog pings, push counters
SAMPLE_S = 15.0  # Redis INFO, claim deadlines, certificates: a scrape interval
SAMPLE_TIMEOUT_S = 3.0  # a hung Redis must not hold up the watchdog's pings


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: SIGTERM belongs to the `Service`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class HttpServing:
    """The daemon's HTTP server over its life: `run` serves `app` until told to stop; a
    port it cannot listen on is a `ConfigError` naming it (uvicorn itself exits the
    process, which would skip the daemon's clean shutdown)."""

    def __init__(self, settings: Settings, app: ASGIApp) -> None:
        self.settings, self.app = settings, app
        self.server: uvicorn.Server | None = None

    @property
    def started(self) -> bool:
        return bool(self.server and self.server.started)

    async def run(self, stop: asyncio.Event) -> None:
        server = self.server = http_server(self.settings, self.app)
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._serve(server), name="uvicorn")
            await stop.wait()
            server.should_exit = True

    async def _serve(self, server: uvicorn.Server) -> None:
        try:
            await server.serve()
        except SystemExit:  # uvicorn's answer to a port it could not bind (logged above)
            where = f"{self.settings.http_host}:{self.settings.http_port}"
            raise ConfigError(
                f"the HTTP server could not listen on {where} (the log line above says why; "
                "most often another program holds the port): stop it, or set "
                "BONUSD_HTTP_HOST / BONUSD_HTTP_PORT"
            ) from None


def http_server(settings: Settings, app: ASGIApp) -> uvicorn.Server:
    """The daemon's HTTP server for `app`, on `BONUSD_HTTP_HOST:BONUSD_HTTP_PORT`."""
    proxies = settings.proxies
    config = uvicorn.Config(
        app,
        host=settings.http_host,
        port=settings.http_port,
        log_level="warning",
        # JSON logs: uvicorn's records go to the root logger's (JSON) handler, not to a
        # text handler of its own
        log_config=None if settings.log_format == "json" else LOGGING_CONFIG,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies or [],
        lifespan="off",
        ws_per_message_deflate=settings.push_deflate,  # docs/push.md, "Delivery"
        ws_max_size=64 * 1024,  # clients send a token and pings, nothing more
        timeout_graceful_shutdown=5,  # then open connections are cancelled
    )
    return _QuietServer(config)


class OpsWatch:
    """systemd's notifications and the sampled gauges, until the daemon stops."""

    def __init__(
        self,
        settings: Settings,
        *,
        redis: Redis,
        keys: Keys,
        clock: Clock,
        metrics: Metrics,
        health: Health,
        push: PushHub,
        serving: Callable[[], bool],
    ) -> None:
        self._settings, self._redis, self._keys, self._clock = settings, redis, keys, clock
        self._metrics, self._push, self._serving = metrics, push, serving
        self.systemd = SystemdNotifier(settings.notify_socket)
        # pinged at half the unit's WatchdogSec, as sd_watchdog_enabled(3) advises
        self._ping_s = settings.watchdog_usec / 2e6
        metrics.ingest_lag.set_function(health.ingest_lag_s)
        metrics.push_clients.set_function(lambda: push.subscribers)
        self._counted = (0, 0)  # the push hub's kicked and resyncs, as last counted
        self.policy_ok: bool | None = None
        self._unreadable: set[Path] = set()  # certificates already reported

    async def run(self, stop: asyncio.Event) -> None:
        while not self._serving():  # READY only once the pages and the API answer
            if await pause(stop, 0.05):
                return
        self.systemd.notify("READY=1", f"STATUS=serving site {self._settings.site}")
        next_sample = next_ping = 0.0
        while True:
            now = time.monotonic()
            if self._ping_s and now >= next_ping:
                self.systemd.notify("WATCHDOG=1")
                next_ping = now + self._ping_s
            self._count_push()
            if now >= next_sample:
                next_sample = now + SAMPLE_S
                await self.sample()
            if await pause(stop, min(TICK_S, self._ping_s or TICK_S)):
                break
        self.systemd.notify("STOPPING=1", "STATUS=stopping: intake closed, draining")

    def _count_push(self) -> None:
        kicked, resyncs = self._push.stats.kicked, self._push.stats.resyncs
        self._metrics.push_dropped.inc(max(0, kicked - self._counted[0]))
        self._metrics.push_resyncs.inc(max(0, resyncs - self._counted[1]))
        self._counted = (kicked, resyncs)

    async def sample(self) -> None:
        """Refresh the sampled gauges; an unanswering Redis leaves its gauges as they were."""
        self._certificates()
        try:
            async with asyncio.timeout(SAMPLE_TIMEOUT_S):
                await self._redis_facts()
                await self._claim_timers()
        except (redis.exceptions.RedisError, OSError, TimeoutError) as exc:
            # a sampler never stops the daemon: a Redis away, busy or loading is /health's
            logger.debug("gauges not sampled (%s); again in %ss", exc, SAMPLE_S)

    async def _redis_facts(self) -> None:
        facts = await read_facts(self._redis)
        self._metrics.redis_used_memory.set(max(f.used_memory for f in facts))
        self._metrics.redis_maxmemory.set(min(f.maxmemory for f in facts))
        problems = [p for f in facts for p in f.problems()]
        ok = not problems
        self._metrics.redis_policy_ok.set(1 if ok else 0)
        # `bonusd run` judged Redis at start; what changes after is news (a CONFIG SET, a
        # failover to a replica configured otherwise, a full disk)
        if (
            self.policy_ok is not None
            and ok != self.policy_ok
            and self._settings.redis_check != "off"
        ):
            if ok:
                logger.warning("Redis keeps bonusd's promises again")
            else:
                logger.warning("Redis no longer keeps bonusd's promises: %s", "; ".join(problems))
        self.policy_ok = ok

    async def _claim_timers(self) -> None:
        """How long the earliest passed deadline has waited: the leader acts on each within
        a moment, so minutes mean its timers are not running."""
        now = self._clock.now().timestamp()
        due = await self._redis.zrangebyscore(
            self._keys.deadlines, "-inf", now, start=0, num=1, withscores=True
        )
        self._metrics.claim_timers_overdue.set(now - float(due[0][1]) if due else 0.0)

    def _certificates(self) -> None:
        """The expiry of each watched certificate file; 0 for one that cannot be read as
        PEM certificates, which the expiry alert reports as expired."""
        for path in self._settings.watched_certificates:
            try:
                certificates = x509.load_pem_x509_certificates(path.read_bytes())
            except (OSError, ValueError) as exc:
                if path not in self._unreadable:
                    logger.warning("certificate file %s cannot be read (%s)", path, exc)
                self._unreadable.add(path)
                self._metrics.cert_expiry.labels(str(path)).set(0)
                continue
            self._unreadable.discard(path)
            expiry = min(c.not_valid_after_utc for c in certificates).timestamp()
            self._metrics.cert_expiry.labels(str(path)).set(expiry)
