"""Shared fixtures: a real Redis, a real Mosquitto (bonusd's configuration), and a daemon.
Helpers a test imports (`Daemon`, `running`, `SAST`, `PROJECT`) are in daemon_helpers.py.

Every test gets its own site name, which is both its Redis key prefix (`bonusd:{site}:`)
and its topic prefix (`bonusd/{site}/`), so tests never collide.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import hypothesis
import pytest
import redis
import redis.asyncio as aioredis

from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import SAST, Daemon, running

# Shared machines are noisy: judge properties by their examples, not by their speed.
hypothesis.settings.register_profile(
    "bonusd", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("bonusd")

TEST_REDIS_URL = os.environ.get("BONUSD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# The suite's Redis is a development one (scripts/ensure-services.sh), and the tests that
# run `bonusd run` inherit this environment: the daemon must not refuse it for its policy.
# tests/deploy/ checks the refusal against redis-servers of its own.
os.environ.setdefault("BONUSD_REDIS_CHECK", "off")


@pytest.fixture(scope="session")
def redis_url() -> str:
    try:
        redis.Redis.from_url(TEST_REDIS_URL).ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.fail(
            f"no Redis at {TEST_REDIS_URL} ({exc}); run the tests with `make test`, which "
            "starts one, or set BONUSD_TEST_REDIS_URL"
        )
    return TEST_REDIS_URL


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalMosquitto]:
    """One Mosquitto for the session, with the broker configuration bonusd ships."""
    with LocalMosquitto(tmp_path_factory.mktemp("mosquitto")) as mq:
        yield mq  # type: ignore[misc]


@pytest.fixture(scope="session")
def sync_redis(redis_url: str) -> Iterator[redis.Redis]:
    """One blocking client per worker, for the fixtures' own bookkeeping."""
    r = redis.Redis.from_url(redis_url)
    yield r
    r.close()


@pytest.fixture
def site(sync_redis: redis.Redis) -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:10]}"
    yield name
    # KEYS, not SCAN: one pass over the suite's shared Redis (which holds every site the
    # run left behind, tens of thousands of keys) instead of one round trip per 1000 keys
    keys = sync_redis.keys(f"bonusd:{{{name}}}:*")
    if keys:
        sync_redis.delete(*keys)


@pytest.fixture
def settings(site: str, redis_url: str, broker: LocalMosquitto, tmp_path: Path) -> Settings:
    return Settings(
        site=site,
        redis_url=redis_url,
        mqtt_url=broker.url,
        mqtt_client_id=f"bonusd-{site}",
        http_port=free_port(),
        retention_audit_archive=tmp_path / "audit-archive",
        digest_dir=tmp_path / "audit-digests",
        seed_key_file=tmp_path / "seed-key",
        receipt_key_file=tmp_path / "receipt-key",
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST))


@pytest.fixture
async def daemon(settings: Settings, clock: ManualClock) -> AsyncIterator[Daemon]:
    async with running(settings, clock) as d:
        yield d


@pytest.fixture
async def aredis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield r
    await r.aclose()
