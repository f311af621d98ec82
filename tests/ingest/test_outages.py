"""Losing the broker or Redis never kills the daemon, and nothing is lost meanwhile."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bonusd.clocks.clock import ManualClock
from bonusd.ingest.target import paho_logger
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, LocalRedis, free_port
from tests.daemon_helpers import SAST, Daemon, running
from tests.telemetry_helpers import Publisher, game

T = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T + dt.timedelta(hours=1))


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[LocalMosquitto]:
    with LocalMosquitto(tmp_path / "mq") as mq:
        yield mq  # type: ignore[misc]


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[LocalRedis]:
    with LocalRedis(tmp_path / "redis") as r:
        yield r  # type: ignore[misc]


async def _until(d: Daemon, field: str, value: str, timeout: float = 20) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while (health := await d.get("/health"))[field] != value:
            await asyncio.sleep(0.05)
    return health


def _games(pub: Publisher, first: int, n: int) -> int:
    for i in range(first, first + n):
        pub.egm("EGM-1", game("1001", T + dt.timedelta(seconds=i), wager=100, points=1))
    return n


async def test_broker_restart_is_waited_out(
    own_broker: LocalMosquitto,
    site: str,
    redis_url: str,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(
        site=site,
        redis_url=redis_url,
        mqtt_url=own_broker.url,
        http_port=free_port(),
        backoff_max_s=1.0,
    )
    async with running(settings, clock) as d:
        pub = Publisher(own_broker, site)
        sent = _games(pub, 0, 100)
        pub.close()
        await d.wait_committed(sent)
        own_broker.stop()
        await _until(d, "mqtt", "reconnecting")
        health = await d.get("/health")
        assert health["status"] == "degraded"
        assert health["mqtt_error"]
        own_broker.start()
        await _until(d, "mqtt", "connected")
        pub = Publisher(own_broker, site)
        sent += _games(pub, 100, 100)
        pub.close()
        await d.wait_committed(sent)
        day = await d.get("/members/1001/days/2026-10-03")
        assert day["games"] == 200
        assert day["spend_cents"] == 200 * 100
        metrics = (await d.http.get("/metrics")).text
        assert 'bonusd_reconnects_total{service="mqtt"}' in metrics
    # an outage waited out is a warning, not an error (an operator's alarms key on ERROR)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_redis_outage_holds_messages_unacknowledged_then_catches_up(
    broker: LocalMosquitto, own_redis: LocalRedis, site: str, clock: ManualClock
) -> None:
    settings = Settings(
        site=site,
        redis_url=own_redis.url,
        mqtt_url=broker.url,
        mqtt_client_id=f"bonusd-{site}",
        http_port=free_port(),
        backoff_max_s=0.5,
    )
    async with running(settings, clock) as d:
        pub = Publisher(broker, site)
        sent = _games(pub, 0, 50)
        await d.wait_committed(sent)
        own_redis.stop()
        await _until(d, "redis", "unavailable")
        _games(pub, 50, 50)  # published while Redis is down: held, not acknowledged
        await asyncio.sleep(1.0)
        held = await d.get("/health")
        assert held["status"] == "degraded"
        assert d.service.ingest.committed == sent
        assert held["ingest_lag_seconds"] > 0
        own_redis.start()
        await _until(d, "redis", "ok")
        await d.wait_committed(sent + 50)
        pub.close()
        day = await d.get("/members/1001/days/2026-10-03")
        assert day["games"] == 100
        assert day["spend_cents"] == 100 * 100


def test_a_lost_broker_connection_reported_by_paho_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What paho logs, through the logger the ingest gives it, when the broker drops the
    connection (which the ingest waits out)."""
    with caplog.at_level(logging.DEBUG, logger="bonusd.mqtt"):
        paho_logger().error("failed to receive on socket: %s", "[Errno 104] reset")
        paho_logger().error("Caught exception in on_message: %s", "boom")
    assert [(r.levelname, r.getMessage()[:26]) for r in caplog.records] == [
        ("WARNING", "failed to receive on socke"),
        ("ERROR", "Caught exception in on_mes"),
    ]


async def test_a_hung_broker_is_not_connected(
    own_broker: LocalMosquitto, site: str, redis_url: str, clock: ManualClock
) -> None:
    """SIGSTOP: the broker's socket stays open and nothing answers. The ingest's ping
    goes unanswered, so /health stops saying `connected` (without waiting for paho's
    keepalive to give up on the connection) and says why; after SIGCONT it is connected
    again and what was published meanwhile is applied."""
    settings = Settings(
        site=site,
        redis_url=redis_url,
        mqtt_url=own_broker.url,
        http_port=free_port(),
        backoff_max_s=1.0,
    )
    async with running(settings, clock) as d:
        pub = Publisher(own_broker, site)
        sent = _games(pub, 0, 10)
        pub.close()
        await d.wait_committed(sent)
        assert own_broker.proc is not None
        own_broker.proc.send_signal(signal.SIGSTOP)
        try:
            await _until(d, "mqtt", "reconnecting", timeout=15)
            health = await d.get("/health")
            assert health["status"] == "degraded"
            assert "has not answered a ping" in health["mqtt_error"]
        finally:
            own_broker.proc.send_signal(signal.SIGCONT)
        await _until(d, "mqtt", "connected")
        pub = Publisher(own_broker, site)
        sent += _games(pub, 10, 10)
        pub.close()
        await d.wait_committed(sent)
        assert (await d.get("/members/1001/days/2026-10-03"))["games"] == 20
        assert (await d.get("/health"))["status"] == "ok"


async def test_a_dead_ingest_never_reads_as_connected(daemon: Daemon) -> None:
    """The ingest task ends (here: cancelled, as if it had died): /health stops saying
    `connected` and the daemon is degraded, whatever the ingest said last."""
    assert (await daemon.get("/health"))["mqtt"] == "connected"
    (task,) = [t for t in asyncio.all_tasks() if t.get_name() == "ingest"]
    task.cancel()
    health = await _until(daemon, "mqtt", "reconnecting", timeout=10)
    assert health["status"] == "degraded"
    assert health["mqtt_error"]
