"""The idle sweeper: ends the sessions whose card-out was lost, on the daemon's clock.

A leader task (docs/leader.md): one daemon of the site sweeps. The sweep itself is one
script (`lua/sweep.lua`), so a sweep racing the ingest of a late card-out ends a session
once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

from bonusd.clocks.clock import Clock, sleep_until_or_stop
from bonusd.floor.store import FloorStore
from bonusd.infra.backoff import Backoff
from bonusd.infra.metrics import Metrics
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.settings import Settings

logger = logging.getLogger(__name__)


async def sweep_idle(
    *,
    store: FloorStore,
    clock: Clock,
    metrics: Metrics,
    settings: Settings,
    stop: asyncio.Event,
) -> None:
    """Until `stop`: end sessions idle for `BONUSD_SESSION_IDLE_TIMEOUT_S`, checking every
    quarter of the timeout (at most a minute apart)."""
    timeout_s = settings.session_idle_timeout_s
    interval = dt.timedelta(seconds=min(60, timeout_s / 4))
    backoff = Backoff(cap=settings.backoff_max_s)
    while not stop.is_set():
        wake = clock.now() + interval
        if await sleep_until_or_stop(clock, wake, stop):
            return
        try:
            ended = await store.sweep_idle(clock.now(), timeout_s)
        except REDIS_ERRORS as exc:
            logger.warning("idle sweep skipped, Redis unavailable (%s)", exc)
            await asyncio.sleep(backoff.next_delay())
            continue
        backoff.reset()
        if ended:
            metrics.sessions_idled.inc(len(ended))
            logger.info("ended %d idle session(s) with no card-out", len(ended))
