"""The layout version of a site's data (bonusd/infra/layout.py): recorded by the first
daemon, migrated forward by a newer one (in order, once, one daemon at a time, again after
a crash), refused by an older one and while a restore is unfinished — by `Service` and by
`bonusd run` (exit status 2, which systemd does not restart)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable

import pytest
import redis.asyncio as aioredis

from bonusd.infra import layout
from bonusd.infra.health import Health
from bonusd.infra.keys import Keys
from bonusd.infra.layout import LayoutError, LayoutPlan, Migration, ensure_layout
from bonusd.infra.leader import Leadership
from bonusd.infra.metrics import Metrics
from bonusd.service.root import Service
from bonusd.settings import Settings
from tests.daemon_helpers import Daemon

Step = Callable[[aioredis.Redis, Keys], Awaitable[None]]


def _step(name: str, ran: list[str], failures: list[bool]) -> Step:
    async def run(redis: aioredis.Redis, keys: Keys) -> None:
        if failures and failures.pop():
            raise RuntimeError(f"{name} cut short")
        await asyncio.sleep(0.05)  # long enough for a second daemon to arrive meanwhile
        ran.append(name)

    return run


def _plan(
    ran: list[str], *, rolling: bool = True, failures: list[bool] | None = None
) -> LayoutPlan:
    """Layout 3, reached by two migrations that note when they run."""
    cuts = failures if failures is not None else []
    return LayoutPlan(
        version=3,
        migrations=(
            Migration(2, "a family added", rolling, _step("to 2", ran, cuts)),
            Migration(3, "another one", True, _step("to 3", ran, [])),
        ),
    )


async def test_a_new_site_is_recorded_in_this_release_s_layout(
    daemon: Daemon, aredis: aioredis.Redis
) -> None:
    assert await aredis.get(daemon.service.keys.layout()) == str(layout.LAYOUT.version) == "1"


async def test_migrations_run_in_order_once_with_two_daemons_starting_together(
    site: str, aredis: aioredis.Redis
) -> None:
    keys, ran = Keys("bonusd", site), []
    await aredis.set(keys.layout(), "1")
    plan = _plan(ran)
    both = await asyncio.gather(
        ensure_layout(aredis, keys, holder="a", plan=plan),
        ensure_layout(aredis, keys, holder="b", plan=plan),
    )
    assert both == [3, 3]
    assert ran == ["to 2", "to 3"]  # in order, each once: the other daemon waited
    assert await aredis.get(keys.layout()) == "3"
    assert await aredis.exists(keys.layout("lock")) == 0
    assert await ensure_layout(aredis, keys, plan=plan) == 3 and len(ran) == 2


async def test_a_migration_cut_short_is_run_again_by_the_next_start(
    site: str, aredis: aioredis.Redis
) -> None:
    keys, ran = Keys("bonusd", site), []
    plan = _plan(ran, failures=[True])  # no layout stored: a site from before versions
    with pytest.raises(RuntimeError, match="cut short"):
        await ensure_layout(aredis, keys, plan=plan)
    assert await aredis.get(keys.layout()) is None  # nothing recorded as done
    assert await ensure_layout(aredis, keys, plan=plan) == 3
    assert ran == ["to 2", "to 3"]


async def test_a_lock_left_by_a_daemon_that_died_lapses(
    site: str, aredis: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys, ran = Keys("bonusd", site), []
    await aredis.set(keys.layout("lock"), "died", px=400)
    monkeypatch.setattr(layout, "LOCK_MS", 400)
    began = time.monotonic()
    assert await ensure_layout(aredis, keys, plan=_plan(ran)) == 3
    assert time.monotonic() - began >= 0.3 and ran == ["to 2", "to 3"]


def _lease(aredis: aioredis.Redis, site: str) -> Leadership:
    return Leadership(
        redis=aredis,
        keys=Keys("bonusd", site),
        holder="bonusd-old",
        ttl_s=1.0,
        renew_s=0.25,
        poll_s=0.25,
        health=Health(),
        metrics=Metrics(),
    )


async def test_a_migration_that_cannot_run_beside_the_old_release_needs_no_leader(
    site: str, aredis: aioredis.Redis
) -> None:
    keys, ran = Keys("bonusd", site), []
    await aredis.set(keys.layout(), "1")
    old = _lease(aredis, site)
    stop = asyncio.Event()

    async def lead(until: asyncio.Event) -> None:
        await until.wait()

    running = asyncio.create_task(old.run(stop, lead))  # a daemon of the old release leads
    try:
        async with asyncio.timeout(10):
            while await aredis.get(keys.leader) is None:
                await asyncio.sleep(0.02)
        with pytest.raises(LayoutError) as refused:
            await ensure_layout(aredis, keys, plan=_plan(ran, rolling=False))
    finally:
        stop.set()
        await running
    assert "cannot run beside daemons of the release before" in str(refused.value)
    assert "bonusd-old#" in str(refused.value) and "stop every daemon" in str(refused.value)
    assert ran == [] and await aredis.get(keys.layout()) == "1"
    # a lease left by a daemon that died (no release, no renewal) is waited out
    assert await _lease(aredis, site).acquire() is not None
    assert await ensure_layout(aredis, keys, plan=_plan(ran, rolling=False)) == 3


async def test_an_older_daemon_refuses_newer_data_and_a_half_restored_site(
    settings: Settings, aredis: aioredis.Redis
) -> None:
    keys = Keys(settings.key_prefix, settings.site)
    for stored, words in (
        ("2", ("layout 2, written by a newer bonusd", "knows layouts up to 1")),
        ("restoring td-20261107T190512Z", ("a restore into this Redis has not finished",)),
    ):
        await aredis.set(keys.layout(), stored)
        service = Service(settings, serve_http=False)
        try:
            with pytest.raises(LayoutError) as refused:
                await service.__aenter__()
        finally:
            await service.redis.aclose()
        for word in words:
            assert word in str(refused.value)
        assert await aredis.get(keys.layout()) == stored  # left as it was


async def test_bonusd_run_refuses_newer_data_with_exit_status_2(
    settings: Settings, aredis: aioredis.Redis
) -> None:
    await aredis.set(Keys(settings.key_prefix, settings.site).layout(), "7")
    env = {
        **os.environ,
        "BONUSD_SITE": settings.site,
        "BONUSD_REDIS_URL": settings.redis_url,
        "BONUSD_MQTT_URL": settings.mqtt_url,
        "BONUSD_HTTP_PORT": str(settings.http_port),
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bonusd", "run", env=env, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 2  # RestartPreventExitStatus=2: systemd leaves it stopped
    message = " ".join(err.decode().split())
    assert "in layout 7, written by a newer bonusd" in message, message
    assert 'docs/deploy.md, "Upgrades"' in message
