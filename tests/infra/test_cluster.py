"""The core against a local 3-master Redis Cluster: several sites whose hash tags land on
different masters, each with its own daemon ingesting through a real Mosquitto; the
scripted Golden Horse week (standings, boards), a draw round to its prize letter and a
RAPS jackpot to its verified winner, each site's audit chain verified.

The scenarios are the suite's own (the helpers of tests/promotions, tests/draws,
tests/raps and tests/infra), run here with a `RedisCluster` client (`BONUSD_REDIS_CLUSTER=true`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import types
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot
from typer.testing import CliRunner

from bonusd.audit.chain import verify_chain
from bonusd.audit.store import AuditStore
from bonusd.cli import main as cli
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.infra.sharedclock import SharedClock
from bonusd.promotions import load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.store import PromotionStore
from bonusd.settings import Settings
from simulators.local.cluster import LocalRedisCluster
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import PROJECT, SAST, running
from tests.draws import helpers as draw_helpers
from tests.infra import helpers as clock_helpers
from tests.promotions import helpers as promotion_helpers
from tests.raps import helpers as raps_helpers
from tests.telemetry_helpers import Publisher, game

T = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    with LocalRedisCluster(tmp_path_factory.mktemp("redis-cluster")) as c:
        yield c


@pytest.fixture(scope="module")
def owners(cluster: LocalRedisCluster) -> list[tuple[int, int, int]]:
    """(first slot, last slot, port) of each master, from CLUSTER SLOTS."""
    r = redis.Redis(port=cluster.ports[0])
    rows = cast(list[Any], r.execute_command("CLUSTER", "SLOTS"))
    r.close()
    return sorted((int(row[0]), int(row[1]), int(row[2][1])) for row in rows)


def owner(owners: list[tuple[int, int, int]], slot: int) -> int:
    return next(port for first, last, port in owners if first <= slot <= last)


def spread(owners: list[tuple[int, int, int]], stem: str) -> list[str]:
    """One site per master, in the masters' slot order: the first names `{stem}-N` whose
    hash tag lands on each."""
    chosen: dict[int, str] = {}
    for n in range(1000):
        name = f"{stem}-{n}"
        chosen.setdefault(owner(owners, key_slot(Keys("bonusd", name).base.encode())), name)
        if len(chosen) == len(owners):
            break
    return [chosen[port] for _, _, port in owners]


@pytest.fixture(scope="module")
def sites(owners: list[tuple[int, int, int]]) -> list[str]:
    return spread(owners, "cl")


@pytest.fixture
async def acluster(cluster: LocalRedisCluster) -> AsyncIterator[aioredis.Redis]:
    r = redis_client(Settings(redis_url=cluster.url, redis_cluster=True))
    yield r
    await r.aclose()


def site_settings(
    cluster: LocalRedisCluster, broker: LocalMosquitto, site: str, **more: Any
) -> Settings:
    return Settings(
        site=site,
        redis_url=cluster.url,
        redis_cluster=True,
        mqtt_url=broker.url,
        mqtt_client_id=f"bonusd-{site}",
        http_port=free_port(),
        **more,
    )


async def test_each_site_lives_on_its_own_master(
    sites: list[str], owners: list[tuple[int, int, int]], acluster: aioredis.Redis
) -> None:
    assert len(owners) == 3
    ports = set()
    for site in sites:
        keys = Keys("bonusd", site)
        slot = int(await acluster.execute_command("CLUSTER KEYSLOT", keys.base))
        # every key of the site, the shared clock's and the leader lease's too, is in its slot
        for key in (
            keys.stats,
            keys.member("1001"),
            keys.active("egm", "main"),
            keys.day("d", "1"),
            f"{SharedClock.site_prefix('bonusd', site)}:clock",
            f"{keys.base}leader",
        ):
            assert int(await acluster.execute_command("CLUSTER KEYSLOT", key)) == slot
        ports.add(owner(owners, slot))
    assert len(ports) == 3


async def test_three_sites_ingest_at_once(
    cluster: LocalRedisCluster,
    broker: LocalMosquitto,
    owners: list[tuple[int, int, int]],
    acluster: aioredis.Redis,
) -> None:
    sites = spread(owners, "ingest")  # one on each master
    clock = ManualClock(T + dt.timedelta(hours=1))
    n = 300
    async with contextlib.AsyncExitStack() as stack:
        daemons = [
            await stack.enter_async_context(running(site_settings(cluster, broker, site), clock))
            for site in sites
        ]
        sent: list[int] = []
        for k, d in enumerate(daemons):
            pub = Publisher(broker, d.service.settings.site)
            per_site = n + 50 * k  # each site its own total, so a crossed key shows
            for i in range(per_site):
                pub.egm(
                    f"EGM-{i % 10}", game(str(1000 + i % 10), T + dt.timedelta(seconds=i), 100, 1)
                )
            pub.close()
            sent.append(per_site)
        for d, count in zip(daemons, sent, strict=True):
            await d.wait_committed(count, timeout=60)
        masters = set()
        for d in daemons:
            slot = await acluster.execute_command("CLUSTER KEYSLOT", d.service.keys.stats)
            masters.add(owner(owners, int(slot)))
        assert len(masters) == 3  # the three sites' writes went to three masters
        for d, count in zip(daemons, sent, strict=True):
            stats = await d.service.store.stats()
            assert stats["applied"] == count and stats.get("duplicates", 0) == 0
            games = 0
            for c in range(10):
                games += (await d.get(f"/members/{1000 + c}/days/2026-10-03"))["games"]
            assert games == count
            active = await d.get("/floor/active")  # one read-only script over the site's sets
            assert {row["card"] for row in active} == {str(1000 + c) for c in range(10)}
            check = verify_chain(await AuditStore(acluster, d.service.keys).records())
            assert check.ok, check


async def test_scripted_week_on_every_master(
    cluster: LocalRedisCluster, broker: LocalMosquitto, sites: list[str], tmp_path: Path
) -> None:
    for site in sites:
        folder = tmp_path / site
        folder.mkdir()
        gh = promotion_helpers.GH
        text = (PROJECT / "promotions" / f"{gh}.toml").read_text()
        (folder / f"{gh}.toml").write_text(
            text.replace('site = "golden-horse"', f'site = "{site}"')
        )
        pub = Publisher(broker, site)
        try:
            await promotion_helpers.scripted_week_standings_and_boards(
                site_settings(cluster, broker, site, promotions=folder), pub
            )
        finally:
            pub.close()


async def test_a_draw_round_to_its_letter(
    cluster: LocalRedisCluster,
    owners: list[tuple[int, int, int]],
    acluster: aioredis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = spread(owners, "draw")[1]
    keys = Keys("bonusd", site)
    promotion = load_promotion(draw_helpers.GH)
    store = PromotionStore(acluster, keys, [promotion])
    draw = promotion.draw("halfway")
    clock = ManualClock(dt.datetime.combine(draw.date, dt.time(12, 0), promotion.zone))
    counts = {Tombola.POOLED: {f"C{n:05d}": 1 + n % 7 for n in range(1000)}}
    pool = EntryPool.freeze(
        promotion_id=draw_helpers.PID, draw_id="halfway", closed_at=clock.now(), counts=counts
    )
    await acluster.set(store.keys.pool(draw_helpers.PID, "halfway"), pool.canonical())
    desk = draw_helpers.desk_runner(store, clock)
    await draw_helpers.a_draw_from_commitment_to_letter((desk, clock))
    chain, _ = await desk.verify(f"{draw_helpers.PID}.halfway")  # round 1 not settled yet
    assert chain.startswith("chain intact")
    # `bonusd audit verify` reaches the site's shard through the cluster client too
    monkeypatch.setenv("BONUSD_SITE", site)
    monkeypatch.setenv("BONUSD_REDIS_URL", cluster.url)
    monkeypatch.setenv("BONUSD_REDIS_CLUSTER", "true")
    result = await asyncio.to_thread(CliRunner().invoke, cli.app, ["audit", "verify"])
    assert result.exit_code == 0, result.output
    assert f"site {site}: chain intact: 34 records" in result.output


async def test_a_raps_jackpot_to_its_verified_winner(
    cluster: LocalRedisCluster,
    owners: list[tuple[int, int, int]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the suite's RAPS site, its client made for the cluster
    def from_url(url: str, **kwargs: Any) -> aioredis.Redis:
        return cast(aioredis.Redis, RedisCluster.from_url(url, **kwargs))

    shim = types.SimpleNamespace(Redis=types.SimpleNamespace(from_url=from_url))
    monkeypatch.setattr(raps_helpers, "aioredis", shim)
    site = spread(owners, "raps")[2]
    s = await raps_helpers.make_site(site, cluster.url, tmp_path, "carry_over")
    try:
        assert isinstance(s.redis, RedisCluster)
        await raps_helpers.crew_verifies_at_the_device_and_the_jackpot_verifies(s)
    finally:
        await s.redis.aclose()


async def test_the_shared_clock_on_a_site_shard(
    owners: list[tuple[int, int, int]], acluster: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock_a, clock_b, _ = spread(owners, "clock")
    prefix = SharedClock.site_prefix("bonusd", clock_a)
    await clock_helpers.changes_reach_every_holder(acluster, prefix)
    # `bonusd clock ...` with BONUSD_REDIS_CLUSTER=true from the environment
    monkeypatch.setenv("BONUSD_REDIS_CLUSTER", "true")
    url = cast(RedisCluster, acluster).get_default_node()
    await clock_helpers.clock_cli_commands(f"redis://{url.host}:{url.port}/0", acluster, clock_b)
