"""Redis as a system of record: deploy/redis/bonusd.conf gives a Redis that `bonusd run`
accepts, and a Redis that could lose what bonusd acknowledged is refused before anything
is written, with what to fix; `warn` runs anyway, saying so; `off` asks nothing. Each
test talks to real redis-servers of its own on spare ports: one from a Debian-like main
file (no AOF, no memory limit), one with the policy file included after it."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.errors import ConfigError
from bonusd.infra.redischeck import RedisPolicyError, check_redis, masked, read_facts, redis_ready
from bonusd.infra.redisclient import redis_client
from bonusd.settings import Settings
from simulators.local.cluster import LocalRedisCluster
from simulators.local.services import free_port
from tests.daemon_helpers import run_until_exit, running
from tests.deploy.helpers import NotifySocket, PolicyRedis, tool


@pytest.fixture(scope="module")
def policy_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyRedis]:
    tool("redis-server", "redis-server")
    with PolicyRedis(tmp_path_factory.mktemp("policy-redis"), policy=True) as server:
        assert isinstance(server, PolicyRedis)
        yield server


@pytest.fixture(scope="module")
def debian_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyRedis]:
    tool("redis-server", "redis-server")
    with PolicyRedis(tmp_path_factory.mktemp("debian-redis"), policy=False) as server:
        assert isinstance(server, PolicyRedis)
        yield server


@pytest.fixture
async def client(policy_redis: PolicyRedis) -> AsyncIterator[aioredis.Redis]:
    """A client of the policy Redis; whatever a test changes with CONFIG SET is undone."""
    r = aioredis.Redis.from_url(policy_redis.url, decode_responses=True)
    before = await r.config_get("*")
    yield r
    for name in ("appendonly", "appendfsync", "no-appendfsync-on-rewrite", "maxmemory-policy"):
        await r.config_set(name, before[name])
    await r.aclose()


def _settings(url: str, check: str = "refuse") -> Settings:
    return Settings(redis_url=url, redis_check=check)  # type: ignore[arg-type]


async def test_the_policy_file_gives_what_bonusd_checks(client: aioredis.Redis) -> None:
    (facts,) = await read_facts(client)
    assert facts.problems() == [] and facts.cautions() == []
    assert (facts.appendfsync, facts.maxmemory_policy) == ("always", "noeviction")
    assert facts.aof_enabled and facts.maxmemory == 8 * 1024**3


async def test_the_policy_redis_is_accepted(
    policy_redis: PolicyRedis, client: aioredis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bonusd.infra.redischeck")
    await check_redis(_settings(policy_redis.url), client)
    assert "keeps what bonusd needs" in caplog.text


async def test_a_default_debian_redis_is_refused_with_every_fix(debian_redis: PolicyRedis) -> None:
    r = aioredis.Redis.from_url(debian_redis.url, decode_responses=True)
    try:
        with pytest.raises(RedisPolicyError) as refused:
            await check_redis(_settings(debian_redis.url), r)
    finally:
        await r.aclose()
    message = str(refused.value)
    assert "would break bonusd's promises" in message
    assert "appendonly is no" in message and "set appendonly yes" in message
    assert "appendfsync is everysec" in message and "set appendfsync always" in message
    assert "BONUSD_REDIS_CHECK=warn" in message
    assert f"127.0.0.1:{debian_redis.port}" in message


@pytest.mark.parametrize(
    ("name", "value", "named"),
    [
        ("maxmemory-policy", "allkeys-lru", "maxmemory-policy is allkeys-lru"),
        ("maxmemory-policy", "volatile-ttl", "maxmemory-policy is volatile-ttl"),
        ("appendfsync", "everysec", "appendfsync is everysec"),
        ("appendfsync", "no", "appendfsync is no"),
        ("no-appendfsync-on-rewrite", "yes", "no-appendfsync-on-rewrite is yes"),
        ("appendonly", "no", "appendonly is no"),
    ],
)
async def test_each_setting_that_can_lose_a_write_is_refused(
    policy_redis: PolicyRedis, client: aioredis.Redis, name: str, value: str, named: str
) -> None:
    await client.config_set(name, value)
    with pytest.raises(RedisPolicyError) as refused:
        await check_redis(_settings(policy_redis.url), client)
    assert named in str(refused.value)
    assert len(refused.value.problems) == 1


async def test_warn_runs_anyway_and_says_what_can_be_lost(
    policy_redis: PolicyRedis, client: aioredis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    await client.config_set("maxmemory-policy", "allkeys-lru")
    await client.config_set("maxmemory", "0")
    try:
        facts = await check_redis(_settings(policy_redis.url, "warn"), client)
    finally:
        await client.config_set("maxmemory", str(8 * 1024**3))
    assert facts[0].maxmemory_policy == "allkeys-lru"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("maxmemory-policy is allkeys-lru" in w for w in warnings)
    assert any("maxmemory is 0 (no limit)" in w for w in warnings)


async def test_a_user_that_may_not_read_the_config_is_refused(
    policy_redis: PolicyRedis, client: aioredis.Redis
) -> None:
    await client.acl_setuser(
        "noconfig",
        enabled=True,
        passwords=["+secret-pw"],
        keys=["*"],
        commands=["+@all", "-config"],
    )
    url = f"redis://noconfig:secret-pw@127.0.0.1:{policy_redis.port}/0"
    limited = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        with pytest.raises(RedisPolicyError) as refused:
            await check_redis(_settings(url), limited)
    finally:
        await limited.aclose()
        await client.acl_deluser("noconfig")
    assert "appendfsync cannot be read" in str(refused.value)
    assert "secret-pw" not in str(refused.value)  # the URL's password is masked


def test_a_password_is_masked_in_messages() -> None:
    assert masked("redis://:s3cret@10.0.0.11:6379/0") == "redis://:***@10.0.0.11:6379/0"
    assert masked("rediss://bonusd:s3cret@redis.casino:6380/1") == (
        "rediss://bonusd:***@redis.casino:6380/1"
    )
    assert masked("redis://10.0.0.11:6379/0") == "redis://10.0.0.11:6379/0"


async def test_bonusd_run_waits_for_redis_then_checks_it(tmp_path: Path) -> None:
    """A Redis that is not up yet is waited for (systemd is told why, each time), and
    checked once it answers."""
    port = free_port()
    told: list[str] = []
    waiting = asyncio.create_task(
        redis_ready(_settings(f"redis://127.0.0.1:{port}/0"), waiting=told.append)
    )
    async with asyncio.timeout(10):
        while not told:
            await asyncio.sleep(0.02)
    assert not waiting.done()
    with PolicyRedis(tmp_path, policy=True, port=port):
        async with asyncio.timeout(15):
            await waiting  # checked and accepted: the policy file is there


def test_off_asks_nothing() -> None:
    """`off` (a throwaway development Redis) returns at once, even with no Redis at all."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    asyncio.run(redis_ready(_settings(dead, "off"), waiting=lambda why: None))


def test_bonusd_run_refuses_to_start_and_says_why(
    debian_redis: PolicyRedis, tmp_path: Path
) -> None:
    """The real command against a Debian-default Redis: exit status 2 (the unit's
    RestartPreventExitStatus), the findings on stderr, and no READY=1 to systemd."""
    notify = NotifySocket()
    env = {
        **os.environ,
        "BONUSD_REDIS_URL": debian_redis.url,
        "BONUSD_REDIS_CHECK": "refuse",
        "BONUSD_SITE": "refused",
        "BONUSD_HTTP_PORT": str(free_port()),
        "NOTIFY_SOCKET": str(notify.path),
    }
    try:
        done = run_until_exit(env, tmp_path)
        assert done.returncode == 2, done.stderr
        assert "would break bonusd's promises" in done.stderr
        assert "appendonly is no" in done.stderr
        with pytest.raises(AssertionError):
            notify.until("READY=1", timeout=0.3)
    finally:
        notify.close()


async def test_a_running_daemon_reports_a_policy_broken_under_it(
    settings: Settings,
    policy_redis: PolicyRedis,
    client: aioredis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Someone runs CONFIG SET on the Redis of a running daemon: the next sample says so
    in the log and in bonusd_redis_policy_ok, which BonusdRedisPolicy pages on."""
    here = settings.model_copy(update={"redis_url": policy_redis.url, "redis_check": "warn"})
    async with running(here) as d:
        await d.service.ops.sample()
        assert "bonusd_redis_policy_ok 1.0" in (await d.http.get("/metrics")).text
        await client.config_set("maxmemory-policy", "allkeys-lru")
        await d.service.ops.sample()
        assert "bonusd_redis_policy_ok 0.0" in (await d.http.get("/metrics")).text
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("no longer keeps" in w and "maxmemory-policy is allkeys-lru" in w for w in warned)


async def test_a_user_that_may_not_read_info_is_told_what_to_grant(
    policy_redis: PolicyRedis, client: aioredis.Redis
) -> None:
    await client.acl_setuser(
        "noinfo", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-info"]
    )
    url = f"redis://noinfo:pw@127.0.0.1:{policy_redis.port}/0"
    limited = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        with pytest.raises(
            ConfigError, match=r"needs INFO and CONFIG GET \(\+info \+config\|get\)"
        ):
            await check_redis(_settings(url), limited)
    finally:
        await limited.aclose()
        await client.acl_deluser("noinfo")


async def test_every_primary_of_a_cluster_is_checked(tmp_path: Path) -> None:
    tool("redis-cli", "redis-tools")
    with LocalRedisCluster(tmp_path / "cluster") as cluster:
        settings = Settings(redis_url=cluster.url, redis_cluster=True, redis_check="refuse")
        client = redis_client(settings)
        try:
            facts = await read_facts(client)
            with pytest.raises(RedisPolicyError) as refused:
                await check_redis(settings, client)
        finally:
            await client.aclose()
    assert len(facts) == 3 and len({f.node for f in facts}) == 3
    for fact in facts:  # the local cluster runs without persistence: each node is named
        assert f"{fact.node}: appendonly is no" in str(refused.value)
