"""Shared fixtures: a real Redis, a real Mosquitto (bonusd's configuration), and a daemon.

Every test gets its own site name, which is both its Redis key prefix (`bonusd:{site}:`)
and its topic prefix (`bonusd/{site}/`), so tests never collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import hypothesis
import pytest
import redis
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port

# Shared machines are noisy: judge properties by their examples, not by their speed.
hypothesis.settings.register_profile(
    "bonusd", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("bonusd")

TEST_REDIS_URL = os.environ.get("BONUSD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SAST = dt.timezone(dt.timedelta(hours=2))


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


@pytest.fixture
def site(redis_url: str) -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:10]}"
    yield name
    r = redis.Redis.from_url(redis_url)
    keys = list(r.scan_iter(match=f"bonusd:{{{name}}}:*", count=1000))
    if keys:
        r.delete(*keys)


@pytest.fixture
def settings(site: str, redis_url: str, broker: LocalMosquitto, tmp_path: Path) -> Settings:
    return Settings(
        site=site,
        redis_url=redis_url,
        mqtt_url=broker.url,
        mqtt_client_id=f"bonusd-{site}",
        http_port=free_port(),
        retention_audit_archive=tmp_path / "audit-archive",
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST))


class Daemon:
    """A running in-process `Service` and an HTTP client (admin token) on its real port."""

    def __init__(self, service: Service, http: httpx.AsyncClient) -> None:
        self.service = service
        self.http = http

    async def wait_committed(self, n: int, timeout: float = 20.0) -> None:
        """Wait until the ingest has committed at least `n` messages this run."""
        async with asyncio.timeout(timeout):
            while self.service.ingest.committed < n:
                await asyncio.sleep(0.01)

    async def client(self, role: Role, area: str = "") -> httpx.AsyncClient:
        """A new HTTP client holding a fresh token of `role` (close it after use)."""
        issued = await self.service.tokens.issue(
            role=role,
            name=f"test {role}",
            area=area,
            now=self.service.clock.now(),
            valid_for=dt.timedelta(days=400),
        )
        return httpx.AsyncClient(
            base_url=str(self.http.base_url),
            headers={"Authorization": f"Bearer {issued.token}"},
            timeout=10,
        )

    async def get(self, path: str) -> Any:
        response = await self.http.get(path)
        response.raise_for_status()
        return response.json()


@contextlib.asynccontextmanager
async def running(settings: Settings, clock: ManualClock | None = None) -> AsyncIterator[Daemon]:
    async with Service(settings, clock=clock) as service, asyncio.TaskGroup() as tg:
        tg.create_task(service.run(install_signal_handlers=False))
        base = f"http://127.0.0.1:{settings.http_port}"
        admin = await service.tokens.issue(
            role=Role.ADMIN,
            name="test suite",
            now=service.clock.now(),
            valid_for=dt.timedelta(days=365),
        )
        headers = {"Authorization": f"Bearer {admin.token}"}
        # idle connections dropped before the server's keep-alive timeout (uvicorn: 5 s)
        # ends them: reusing one the server is closing fails with ReadError
        limits = httpx.Limits(keepalive_expiry=2)
        async with httpx.AsyncClient(
            base_url=base, timeout=10, headers=headers, limits=limits
        ) as http:
            async with asyncio.timeout(10):
                while True:
                    with contextlib.suppress(httpx.TransportError):
                        if (await http.get("/health")).json()["mqtt"] == "connected":
                            break
                    await asyncio.sleep(0.02)
            try:
                yield Daemon(service, http)
            finally:
                service.stop()  # a graceful stop, also when the test body failed


@pytest.fixture
async def daemon(settings: Settings, clock: ManualClock) -> AsyncIterator[Daemon]:
    async with running(settings, clock) as d:
        yield d


@pytest.fixture
async def aredis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield r
    await r.aclose()


PROJECT = Path(__file__).resolve().parent.parent
