"""The shared simulated clock in Redis: creation, changes seen by every holder, forward
only, wake-ups of sleepers, the watcher's re-reads and Redis restarts, and `bonusd clock`.

Waits here are for conditions (with a generous safety timeout), never for durations.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from bonusd.cli.clock import parse_duration
from bonusd.errors import ClockError, ConfigError
from bonusd.infra.sharedclock import SharedClock
from bonusd.settings import load_settings
from simulators.local.services import LocalRedis
from tests.infra.helpers import (
    HOUR,
    START,
    changes_reach_every_holder,
    clock_cli_commands,
    until,
    watching,
)


@pytest.fixture
async def prefix(aredis: aioredis.Redis) -> AsyncIterator[str]:
    p = SharedClock.site_prefix("bonusd", f"c{uuid.uuid4().hex[:10]}")
    yield p
    await aredis.delete(f"{p}:clock")


async def test_created_once_then_followed(aredis: aioredis.Redis, prefix: str) -> None:
    a = await SharedClock.connect(aredis, prefix, start=START, speed=600, changed_by="sim")
    b = await SharedClock.connect(aredis, prefix, start=START + 30 * HOUR, speed=1)
    assert a.state == b.state  # the second start and speed are ignored: the clock exists
    assert (a.state.speed, a.state.version, a.state.changed_by) == (600.0, 1, "sim")
    assert START <= b.now() < START + HOUR
    raw = await aredis.hgetall(f"{prefix}:clock")
    assert set(raw) == {
        "origin_wall",
        "origin_sim_ms",
        "speed",
        "paused",
        "version",
        "epoch",
        "changed_by",
    }
    assert int(raw["origin_sim_ms"]) == int(START.timestamp() * 1000)


async def test_the_clock_only_moves_forward(aredis: aioredis.Redis, prefix: str) -> None:
    c = await SharedClock.connect(aredis, prefix, start=START, speed=1)
    for bad in (
        c.jump(-HOUR),
        c.jump(dt.timedelta(0)),
        c.jump_to(START - dt.timedelta(seconds=1)),
        c.set(start=START - HOUR, speed=60),
    ):
        with pytest.raises(ClockError, match="only moves forward"):
            await bad
    for speed in (0.5, 10_001, float("nan")):
        with pytest.raises(ClockError, match="between x1 and x10,000"):
            await c.set_speed(speed)
    assert c.state.version == 1  # nothing was written
    with pytest.raises(ClockError, match="UTC offset"):
        await c.jump_to(dt.datetime(2026, 10, 4, 12, 0))


async def test_now_never_goes_back_in_a_process(aredis: aioredis.Redis, prefix: str) -> None:
    c = await SharedClock.connect(aredis, prefix, start=START, speed=10_000)
    seen = [c.now()]
    for change in (c.pause, c.resume, lambda: c.set_speed(1), lambda: c.set_speed(10_000)):
        await change()
        seen.append(c.now())
    assert seen == sorted(seen)


async def test_sleepers_wake_on_changes(aredis: aioredis.Redis, prefix: str) -> None:
    """A paused clock holds sleepers; a jump releases those it passes, a resume at a high
    speed releases the rest, each at or after its instant."""
    ctl = await SharedClock.connect(aredis, prefix, start=START, speed=1)
    await ctl.pause()
    paused_at = ctl.now()
    c = await SharedClock.connect(aredis, prefix)
    woke: dict[str, dt.datetime] = {}

    async def sleeper(name: str, at: dt.datetime) -> None:
        await c.sleep_until(at)
        woke[name] = c.now()

    async with watching(c), asyncio.TaskGroup() as tg:
        tg.create_task(sleeper("1h", paused_at + HOUR))
        tg.create_task(sleeper("3h", paused_at + 3 * HOUR))
        for _ in range(20):
            await asyncio.sleep(0)
        assert woke == {}
        await ctl.jump(2 * HOUR)
        await until(lambda: "1h" in woke)
        assert "3h" not in woke
        await ctl.set_speed(10_000)  # x10,000: one simulated hour in 0.36 s
        await ctl.resume()
        await until(lambda: "3h" in woke)
    assert woke["1h"] == paused_at + 2 * HOUR  # woken by the jump, while paused
    assert woke["3h"] >= paused_at + 3 * HOUR


async def test_a_missed_notification_is_caught_by_the_re_read(
    aredis: aioredis.Redis, prefix: str
) -> None:
    c = await SharedClock.connect(aredis, prefix, start=START, speed=1)
    async with watching(c):
        state = c.state.changed(c.state.origin_wall, "hand", paused=True)
        fields: dict[Any, Any] = state.to_fields()
        await aredis.hset(f"{prefix}:clock", mapping=fields)  # written behind its back: no PUBLISH
        await until(lambda: c.state.paused)
    assert c.state.changed_by == "hand"


async def test_a_lost_hash_is_restored_from_the_cache(aredis: aioredis.Redis, prefix: str) -> None:
    c = await SharedClock.connect(aredis, prefix, start=START, speed=1)
    await c.jump(5 * HOUR)
    before = c.state
    async with watching(c):
        await aredis.delete(f"{prefix}:clock")
        await until(lambda: c.state.version > before.version)
    restored = await aredis.hgetall(f"{prefix}:clock")
    assert restored["epoch"] == before.epoch
    assert int(restored["origin_sim_ms"]) >= before.origin_sim_ms  # carries on, not back


async def test_a_corrupt_hash_stops_nobody(
    aredis: aioredis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A running holder keeps its cached time and says why; a new one refuses to start."""
    c = await SharedClock.connect(aredis, prefix, start=START, speed=1)
    async with watching(c):
        await aredis.hset(f"{prefix}:clock", "speed", "fast")
        await until(lambda: "cannot be read" in caplog.text)
        assert c.now() >= START
    with pytest.raises(ClockError, match=r"corrupt .* delete the key"):
        await SharedClock.connect(aredis, prefix)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[LocalRedis]:
    with LocalRedis(tmp_path / "redis") as r:
        yield r  # type: ignore[misc]


async def test_the_watcher_survives_a_redis_restart(own_redis: LocalRedis) -> None:
    """Redis goes away and comes back empty (no persistence): holders keep time meanwhile,
    and the clock is restored where it was, not at its start."""
    r = aioredis.Redis.from_url(own_redis.url, decode_responses=True, socket_timeout=2)
    prefix = SharedClock.site_prefix("bonusd", "restart")
    c = await SharedClock.connect(r, prefix, start=START, speed=600)
    await c.jump(10 * HOUR)
    async with watching(c):
        own_redis.stop()
        for item in own_redis.workdir.iterdir():  # come back empty
            if item.name != own_redis.log_path.name:
                shutil.rmtree(item) if item.is_dir() else item.unlink()
        held = c.now()
        assert held >= START + 10 * HOUR  # the cache keeps running without Redis
        own_redis.start()
        await until(lambda: c.state.version > 2, timeout=30)
    raw = await r.hgetall(f"{prefix}:clock")
    assert int(raw["origin_sim_ms"]) >= int((START + 10 * HOUR).timestamp() * 1000)
    await r.aclose()


def test_clock_settings() -> None:
    assert load_settings(clock="shared", clock_speed=10_000).clock == "shared"
    with pytest.raises(ConfigError, match=r"BONUSD_CLOCK_SPEED: .*1 to 10000"):
        load_settings(clock="shared", clock_speed=20_000)
    with pytest.raises(ConfigError, match="BONUSD_CLOCK: "):
        load_settings(clock="fast")
    assert load_settings(clock="simulated", clock_speed=20_000).clock_speed == 20_000


# -- bonusd clock --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("2h", dt.timedelta(hours=2)),
        ("90m", dt.timedelta(minutes=90)),
        ("1d12h", dt.timedelta(days=1, hours=12)),
        ("1h30m", dt.timedelta(hours=1, minutes=30)),
        ("45s", dt.timedelta(seconds=45)),
        ("1.5h", dt.timedelta(minutes=90)),
    ],
)
def test_durations(text: str, delta: dt.timedelta) -> None:
    assert parse_duration(text) == delta


@pytest.mark.parametrize("text", ["", "2", "h", "2x", "-2h", "2h-", "two hours"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ClockError, match="cannot read the duration"):
        parse_duration(text)


async def test_changes_reach_every_holder(aredis: aioredis.Redis, prefix: str) -> None:
    await changes_reach_every_holder(aredis, prefix)


async def test_cli(redis_url: str, aredis: aioredis.Redis, site: str) -> None:
    await clock_cli_commands(redis_url, aredis, site)
