"""The broker (Mosquitto with bonusd's configuration, persistence on) restarted in the
middle of a telemetry burst: QoS 1, the daemon's persistent session; the boards publish
on through the restart, republishing what the broker did not acknowledge. Every event is
applied exactly once, in telemetry contract v1 (by id) and v2 (by each device's sequence,
the burst reordered inside the window besides)."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import SAST, running
from tests.fault_helpers import (
    Burst,
    BurstPublisher,
    floor_totals,
    health_reaches,
    in_thread,
    join_checked,
    site_stat,
)

T = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[LocalMosquitto]:
    with LocalMosquitto(tmp_path / "mq") as mq:
        yield mq  # type: ignore[misc]


@pytest.mark.parametrize("contract", ["v1", "v2"])
async def test_broker_restarted_during_a_burst_applies_each_event_once(
    own_broker: LocalMosquitto, site: str, redis_url: str, contract: str
) -> None:
    burst = Burst(site, 8_000, 40, T, tag="bb", contract=contract)
    half = len(burst.games) // 2
    settings = Settings(
        site=site,
        redis_url=redis_url,
        mqtt_url=own_broker.url,
        mqtt_client_id=f"bonusd-{site}",
        http_port=free_port(),
        backoff_max_s=0.5,
    )
    r = aioredis.Redis.from_url(redis_url)
    restarted = threading.Event()

    def publish() -> None:
        pub = BurstPublisher(own_broker, burst)
        try:
            pub.publish(0, half)
            assert restarted.wait(60), "the broker was not restarted"
            pub.publish(half, len(burst.games))  # through the restart's reconnection
        finally:
            pub.close()

    async with running(settings, ManualClock(T + dt.timedelta(hours=1))) as d:
        publisher = in_thread(publish)
        try:
            async with asyncio.timeout(60):
                while await site_stat(r, site, "applied") < 300:
                    await asyncio.sleep(0.02)
            own_broker.restart()  # SIGTERM: Mosquitto saves its sessions and queues
            restarted.set()
            await health_reaches(d, "mqtt", "connected")
            join_checked(publisher)
            async with asyncio.timeout(60):
                while await site_stat(r, site, "applied") < len(burst.games):
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # anything more would be a double application
            assert await site_stat(r, site, "applied") == len(burst.games)
            assert await floor_totals(d, burst) == burst.totals()
            metrics = (await d.http.get("/metrics")).text
            assert 'bonusd_reconnects_total{service="mqtt"} 1.0' in metrics
            if contract == "v2":  # reordered and resent, yet nothing lost nor refused
                assert "bonusd_sequence_gaps_total 0.0" in metrics
                assert "bonusd_dead_letters_total{" not in metrics
                state = await d.get("/devices/EGM-0/sequence")
                assert state["current"] == {"epoch": "bb", "seq": 200, "missing": 0}
        finally:
            restarted.set()
            await r.aclose()
