"""Redis's health as `/health` and `/metrics` show it, kept true when no telemetry flows:
the daemon pings Redis every `REDIS_WATCH_INTERVAL_S` of wall time, and a ping not answered
within `REDIS_PROBE_TIMEOUT_S` is an outage (a hung Redis: SIGSTOP, a full disk, a stuck
failover), so `/health` turns degraded within their sum, not only on a refused connection
(1.5 s, measured in docs/robustness.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.asyncio import Redis

from bonusd.infra.health import Health
from bonusd.infra.metrics import Metrics
from bonusd.infra.redisclient import REDIS_ERRORS

logger = logging.getLogger(__name__)
REDIS_WATCH_INTERVAL_S = 0.5
REDIS_PROBE_TIMEOUT_S = 1.0


class RedisWatch:
    """Pings one Redis and records the answer in the daemon's health and metrics."""

    def __init__(self, redis: Redis, url: str, health: Health, metrics: Metrics) -> None:
        self.redis, self.url, self.health, self.metrics = redis, url, health, metrics

    async def probe(self) -> bool:
        """Ping Redis and record the answer; never raises for an outage."""
        try:
            async with asyncio.timeout(REDIS_PROBE_TIMEOUT_S):
                await self.redis.ping()
        except (*REDIS_ERRORS, TimeoutError) as exc:
            problem = str(exc) or f"no answer to a ping within {REDIS_PROBE_TIMEOUT_S}s"
            if self.health.redis_ok:
                logger.warning("Redis at %s is not answering (%s)", self.url, problem)
                self.metrics.reconnects.labels("redis").inc()
            self.health.redis_ok = False
            self.health.redis_error = problem
            self.metrics.connected.labels("redis").set(0)
            return False
        if not self.health.redis_ok:
            logger.warning("Redis at %s answers again", self.url)
        self.health.redis_ok = True
        self.health.redis_error = ""
        self.metrics.connected.labels("redis").set(1)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Probe on a wall-clock cadence until `stop`."""
        while not stop.is_set():
            await self.probe()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), REDIS_WATCH_INTERVAL_S)
