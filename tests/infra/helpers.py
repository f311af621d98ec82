"""What the infrastructure tests share: shared-clock scenarios (run on one Redis here and
on a Redis Cluster in test_cluster.py) and waiting for a clock change to arrive."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as aioredis
import typer
from typer.testing import CliRunner

from bonusd.cli.clock import add_clock_commands
from bonusd.errors import ClockError
from bonusd.infra.sharedclock import SharedClock
from bonusd.settings import Settings

START = dt.datetime(2026, 10, 3, 14, 55, tzinfo=dt.UTC)  # 16:55 in Johannesburg


HOUR = dt.timedelta(hours=1)


async def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for `check()` to hold (the timeout only guards against a hang)."""
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def watching(*clocks: SharedClock) -> AsyncIterator[None]:
    stop = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        for c in clocks:
            tg.create_task(c.watch(stop))
        try:
            yield
        finally:
            stop.set()


async def changes_reach_every_holder(aredis: aioredis.Redis, prefix: str) -> None:
    a = await SharedClock.connect(aredis, prefix, start=START, speed=600)
    b = await SharedClock.connect(aredis, prefix)
    async with watching(a, b):
        await b.pause()
        await until(lambda: a.state.paused)
        frozen = a.now()
        assert a.now() == frozen == b.now()  # paused: both read the same instant
        await b.jump(2 * HOUR)
        await until(lambda: a.now() == frozen + 2 * HOUR)
        await b.set(speed=3600)
        await b.resume()
        await until(lambda: not a.state.paused and a.state.speed == 3600)
        assert a.now() >= frozen + 2 * HOUR  # resumed from where it stood
        assert a.state == b.state


async def clock_cli_commands(redis_url: str, aredis: aioredis.Redis, site: str) -> None:
    settings = Settings(site=site, redis_url=redis_url)
    app = typer.Typer()
    add_clock_commands(app, lambda: settings)
    runner = CliRunner()

    async def invoke(*args: str) -> str:
        # the command runs its own event loop: keep it off this test's loop
        result = await asyncio.to_thread(runner.invoke, app, ["clock", *args])
        if result.exception is not None:
            raise result.exception
        return result.output

    with pytest.raises(ClockError, match="no shared clock"):
        await invoke("show")
    prefix = SharedClock.site_prefix("bonusd", site)
    c = await SharedClock.connect(aredis, prefix, start=START, speed=60)
    assert "running at x60" in await invoke("show")
    assert "paused at x60" in await invoke("pause")
    await c.refresh()
    paused_at = c.now()
    out = await invoke("jump", "2h")
    later = paused_at + 2 * HOUR  # paused, so exact
    assert f"now      {later.isoformat(timespec='seconds')}" in out
    assert f"({later.astimezone(settings.zone).isoformat(timespec='seconds')} local)" in out
    assert "paused at x600" in await invoke("speed", "600")
    assert "running at x600" in await invoke("resume")
    with pytest.raises(ClockError, match="only moves forward"):
        await invoke("set", "2026-10-03T16:00:00+02:00")
    await c.refresh()
    assert (c.state.changed_by, c.state.version) == ("cli", 5)
