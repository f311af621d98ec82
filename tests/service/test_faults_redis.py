"""Redis restarted or away (a real redis-server with AOF, `appendfsync always`): during a
telemetry burst every event is applied exactly once; during a running claim timer the
deadline is the stored one and the no-show comes once, at it; a 60 s outage holds the
floor's messages at the broker, /health says so, and ingest catches up afterwards."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.infra import health as health_module
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, LocalRedis, free_port
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
from tests.push.helpers import GH, draw_day, ensure_closed, golden_horse

T = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)
SUBJECT = f"{GH}.halfway"


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[LocalRedis]:
    with LocalRedis(tmp_path / "redis", appendfsync="always") as r:
        yield r  # type: ignore[misc]


def _client(url: str) -> aioredis.Redis:
    """The test's own Redis client; it reconnects after a restart instead of failing once."""
    retry = Retry(NoBackoff(), 3)
    return aioredis.Redis.from_url(
        url, decode_responses=True, retry=retry, retry_on_error=[ConnectionError, OSError]
    )


def _settings(site: str, redis: LocalRedis, broker: LocalMosquitto, **more: Any) -> Settings:
    return Settings(
        site=site,
        redis_url=redis.url,
        mqtt_url=broker.url,
        mqtt_client_id=f"bonusd-{site}",
        http_port=free_port(),
        backoff_max_s=0.5,
        **more,
    )


def _at(record: dict[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(record["time"])


async def _applied_reaches(r: aioredis.Redis, site: str, n: int, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while True:
            try:
                if await site_stat(r, site, "applied") >= n:
                    return
            except (ConnectionError, OSError):
                pass  # our own client while Redis restarts
            await asyncio.sleep(0.05)


async def test_redis_killed_and_restarted_during_a_burst_applies_each_event_once(
    broker: LocalMosquitto, own_redis: LocalRedis, site: str
) -> None:
    burst = Burst(site, 8_000, 40, T, tag="rb")
    half = len(burst.games) // 2
    clock = ManualClock(T + dt.timedelta(hours=1))
    r = _client(own_redis.url)
    async with running(_settings(site, own_redis, broker), clock) as d:
        pub = BurstPublisher(broker, burst)
        try:
            first = in_thread(pub.publish, 0, half)
            await _applied_reaches(r, site, 300)
            own_redis.stop(signal.SIGKILL)  # a crash, once ingest is under way
            await health_reaches(d, "redis", "unavailable")
            committed_while_down = d.service.ingest.committed
            # the burst goes on while Redis is away: the broker takes it, nothing is acked
            second = in_thread(pub.publish, half, len(burst.games))
            join_checked(first)
            await asyncio.sleep(0.5)
            assert d.service.ingest.committed == committed_while_down
            health = await d.get("/health")
            assert health["status"] == "degraded" and health["redis_error"]
            own_redis.start()  # AOF replayed: everything Redis acknowledged is back
            await health_reaches(d, "redis", "ok")
            join_checked(second)
            await _applied_reaches(r, site, len(burst.games))
            await asyncio.sleep(0.5)  # anything more would be a double application
            assert await site_stat(r, site, "applied") == len(burst.games)
            assert await floor_totals(d, burst) == burst.totals()
        finally:
            pub.close()
            await r.aclose()


async def test_redis_restarted_during_a_claim_timer_keeps_the_deadline(
    broker: LocalMosquitto, own_redis: LocalRedis, site: str, tmp_path: Path
) -> None:
    settings = golden_horse(_settings(site, own_redis, broker), tmp_path, site)
    r = _client(own_redis.url)
    ledger_key = f"bonusd:{{{site}}}:ledger:{SUBJECT}"
    index_key = f"bonusd:{{{site}}}:deadlines"

    async def ledger() -> list[dict[str, Any]]:
        return [json.loads(x) for x in await r.lrange(ledger_key, 0, -1)]

    def acted(rows: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
        return [x for x in rows if x["kind"] == "claim" and x["payload"]["action"] == action]

    async def settled(rows_wanted: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(30):
            while len(acted(await ledger(), "no_show")) < rows_wanted:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # a doubled no-show would land now
        return await ledger()

    try:
        async with draw_day(settings, own_redis.url, site) as d:
            clock = d.service.clock
            assert isinstance(clock, ManualClock)
            await ensure_closed(d)  # 18:55: the bin closes at 19:00
            desk = await d.client(Role.DESK)
            response = await desk.post(f"/promotions/{GH}/draws/halfway/run", json={"round": 1})
            await desk.aclose()
            assert response.status_code == 200, response.text
            before = await ledger()
            created = acted(before, "created")
            assert len(created) == 5
            deadline = dt.datetime.fromisoformat(created[0]["payload"]["detail"]["deadline"])
            indexed = await r.zscore(index_key, f"draw:{SUBJECT}")
            assert indexed == deadline.timestamp()

            # 1. Redis crashes and comes back while the claim time runs
            clock.set(deadline - dt.timedelta(seconds=30))
            own_redis.stop(signal.SIGKILL)
            await health_reaches(d, "redis", "unavailable")
            own_redis.start()
            await health_reaches(d, "redis", "ok")
            assert await ledger() == before
            assert await r.zscore(index_key, f"draw:{SUBJECT}") == indexed
            clock.set(deadline)  # deadlines are strict: not yet due
            await asyncio.sleep(0.5)
            assert acted(await ledger(), "no_show") == []
            clock.set(deadline + dt.timedelta(seconds=1))
            rows = await settled(5)
            no_shows = acted(rows, "no_show")
            assert sorted(x["payload"]["card"] for x in no_shows) == sorted(
                x["payload"]["card"] for x in created
            )
            assert {_at(x) for x in no_shows} == {clock.now()}  # at the first instant after it
            assert rows[: len(before)] == before

            # 2. Redis is away when the redraws' deadline passes: acted on once it is back
            redrawn = acted(rows, "created")[5:]
            assert len(redrawn) == 5
            again = dt.datetime.fromisoformat(redrawn[0]["payload"]["detail"]["deadline"])
            own_redis.stop(signal.SIGKILL)
            await health_reaches(d, "redis", "unavailable")
            clock.set(again + dt.timedelta(seconds=1))
            await asyncio.sleep(1.0)  # the timer tries, fails and waits
            own_redis.start()
            await health_reaches(d, "redis", "ok")
            rows = await settled(10)
            late = acted(rows, "no_show")[5:]
            assert sorted(x["payload"]["card"] for x in late) == sorted(
                x["payload"]["card"] for x in redrawn
            )
            assert len(acted(rows, "no_show")) == 10
            assert {_at(x) for x in late} == {clock.now()}
    finally:
        await r.aclose()


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_redis_unreachable_for_60_s_holds_messages_then_catches_up(
    broker: LocalMosquitto, own_redis: LocalRedis, site: str
) -> None:
    burst = Burst(site, 3_000, 30, T, tag="r60")
    clock = ManualClock(T + dt.timedelta(hours=1))
    settings = _settings(site, own_redis, broker)
    async with running(settings, clock) as d:
        pub = BurstPublisher(broker, burst)
        try:
            pub.publish(0, 500)
            await d.wait_committed(500)
            own_redis.stop()
            await health_reaches(d, "redis", "unavailable")
            # the floor publishes on: far more than the daemon may hold unacknowledged
            assert len(burst.games) - 500 > settings.mqtt_receive_maximum
            pub.publish(500, len(burst.games))
            for _ in range(12):  # 60 s away, looked at every 5 s
                await asyncio.sleep(5)
                health = await d.get("/health")
                assert health["status"] == "degraded"
                assert health["redis"] == "unavailable" and health["redis_error"]
                assert health["mqtt"] == "connected"
                assert health["ingest_lag_seconds"] > 0
                assert d.service.ingest.committed == 500
            metrics = (await d.http.get("/metrics")).text
            assert 'bonusd_connected{service="redis"} 0.0' in metrics
            own_redis.start()
            await health_reaches(d, "redis", "ok")
            await d.wait_committed(len(burst.games), timeout=60)
            await asyncio.sleep(0.5)
            assert d.service.ingest.committed == len(burst.games)
            assert await floor_totals(d, burst) == burst.totals()
            assert (await d.get("/health"))["status"] == "ok"
        finally:
            pub.close()


async def test_a_hung_redis_turns_health_degraded_and_the_ingest_stalled(
    broker: LocalMosquitto, own_redis: LocalRedis, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGSTOP: Redis accepts connections and never answers (hung, not down). /health
    says so by its ping timeout, with the broker still connected; the messages that
    arrive meanwhile wait unacknowledged and /health calls the ingest stalled; after
    SIGCONT all is applied exactly once. (How fast: docs/robustness.md, measured by
    loadtests/hostile_figures.py.)"""
    # a message uncommitted for a second counts as stalled here, not after five: the same
    # judgement, reached sooner (nothing here is judged while the ingest is healthy)
    monkeypatch.setattr(health_module, "INGEST_STALL_S", 1.0)
    burst = Burst(site, 200, 10, T, tag="stop")
    clock = ManualClock(T + dt.timedelta(hours=1))
    async with running(_settings(site, own_redis, broker), clock) as d:
        pub = BurstPublisher(broker, burst)
        assert own_redis.proc is not None
        try:
            pub.publish(0, 100)
            await d.wait_committed(100)
            own_redis.proc.send_signal(signal.SIGSTOP)
            try:
                health = await health_reaches(d, "redis", "unavailable", timeout=15)
                assert health["status"] == "degraded"
                assert health["redis_error"]
                assert health["mqtt"] == "connected"
                pub.publish(100, 200)
                health = await health_reaches(d, "ingest", "stalled", timeout=15)
                assert health["status"] == "degraded"
                assert health["ingest_lag_seconds"] > 0
                assert "uncommitted" in health["ingest_error"]
                assert d.service.ingest.committed == 100
            finally:
                own_redis.proc.send_signal(signal.SIGCONT)
            await d.wait_committed(200, timeout=60)
            health = await health_reaches(d, "status", "ok", timeout=30)
            assert (health["redis"], health["ingest"]) == ("ok", "ok")
            assert await floor_totals(d, burst) == burst.totals()
        finally:
            pub.close()
