"""The daemon on the shared simulated clock fires each scheduled action exactly once at its
simulated instant: across speed changes, a restart, and jumps over several actions (each
then runs once, in order, late).

A small promotion in tmp_path has eight timed actions five simulated minutes apart (four
multiplier windows opening and closing). The evidence is the scheduler's own: its markers
in Redis (`fired:...`, holding the simulated instant each action ran at), its count of
actions run, and its "done" log lines. Waits are for conditions, with a safety timeout.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.infra.keys import Keys
from bonusd.infra.sharedclock import SharedClock
from bonusd.promotions import TimedAction
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import Daemon, running
from tests.service.helpers import (
    MIN,
    ON_TIME,
    OPENS,
    PROMOTION,
    WINDOW,
    controller,
    done_order,
    label,
    timetable,
)


@pytest.fixture
def promotions(tmp_path: Path, site: str) -> Path:
    """Windows 17:00-17:05, 17:10-17:15, 17:20-17:25, 17:30-17:35: an action every 5 min."""
    windows = "".join(WINDOW.format(n=n, a=10 * n, b=10 * n + 5) for n in range(4))
    folder = tmp_path / "promotions"
    folder.mkdir()
    (folder / "clock.toml").write_text(PROMOTION.format(site=site, windows=windows))
    return folder


@pytest.fixture
def shared(
    site: str, redis_url: str, broker: LocalMosquitto, promotions: Path
) -> Callable[[dt.datetime], Settings]:
    """Settings of a daemon on the site's shared clock, created at `start` at x600 if the
    clock does not exist yet."""

    def make(start: dt.datetime) -> Settings:
        return Settings(
            site=site,
            redis_url=redis_url,
            mqtt_url=broker.url,
            mqtt_client_id=f"bonusd-{site}",
            http_port=free_port(),
            promotions=promotions,
            clock="shared",
            clock_start=start,
            clock_speed=600,
        )

    return make


class Markers:
    """The scheduler's markers of one site: when (simulated) each action ran."""

    def __init__(self, r: aioredis.Redis, keys: Keys) -> None:
        self.r = r
        self.keys = keys

    def key(self, a: TimedAction) -> str:
        return f"{self.keys.base}fired:{a.at.isoformat()}:{a.action.value}:{':'.join(a.ids)}"

    async def fired_at(self, a: TimedAction) -> dt.datetime | None:
        value = await self.r.get(self.key(a))
        return None if value is None else dt.datetime.fromisoformat(str(value))

    async def wait(self, a: TimedAction, timeout: float = 30.0) -> dt.datetime:
        async with asyncio.timeout(timeout):
            while (at := await self.fired_at(a)) is None:
                await asyncio.sleep(0.01)
        return at


async def leading(d: Daemon) -> None:
    """Wait until the daemon leads the site and its scheduler waits for the next action, so
    the paused clock is resumed on a running timetable (a busy machine can take a while to
    start a daemon; every simulated minute then is a tenth of a second)."""
    await asyncio.wait_for(d.service.scheduler.caught_up.wait(), 30)


async def test_each_action_once_on_time_across_speed_changes_and_a_restart(
    site: str,
    shared: Callable[[dt.datetime], Settings],
    promotions: Path,
    aredis: aioredis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bonusd.service.scheduler")
    actions = timetable(promotions)
    settings = shared(OPENS + 30 * MIN)  # ignored: the clock exists when the daemon starts
    markers = Markers(aredis, Keys("bonusd", site))
    runs: list[Daemon] = []

    async with controller(aredis, site, start=OPENS - 2 * MIN) as clock, running(settings) as d:
        runs.append(d)
        assert d.service.clock.now() == clock.now() < OPENS  # it follows, paused
        await leading(d)
        await clock.resume()
        await markers.wait(actions[0])
        await clock.set_speed(240)  # slower, between two actions
        await markers.wait(actions[1])
        await clock.set_speed(900)  # faster
        await markers.wait(actions[2])
        await clock.set_speed(600)
        await markers.wait(actions[3])
        await clock.pause()  # hold time while the daemon restarts
    async with running(settings) as d, controller(aredis, site) as clock:
        runs.append(d)
        assert clock.state.paused
        assert await markers.fired_at(actions[4]) is None
        await leading(d)
        await clock.set_speed(900)  # paused still: the rest run at the fastest speed above
        await clock.resume()
        for a in actions[4:]:
            await markers.wait(a)
        d.service.stop()

    for a in actions:
        fired = await markers.fired_at(a)
        assert fired is not None
        assert a.at <= fired < a.at + ON_TIME, (label(a), fired)
    assert sum(d.service.scheduler.fired for d in runs) == len(actions)  # once each
    assert done_order(caplog) == [label(a) for a in actions]
    assert await aredis.smembers(Keys("bonusd", site).active_multipliers) == set()


async def test_jumps_over_actions_run_each_once_in_order_late(
    site: str,
    shared: Callable[[dt.datetime], Settings],
    promotions: Path,
    aredis: aioredis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bonusd.service.scheduler")
    actions = timetable(promotions)
    settings = shared(OPENS - MIN)
    markers = Markers(aredis, Keys("bonusd", site))
    runs: list[Daemon] = []
    first_jump = OPENS + 17 * MIN  # over 17:05, 17:10 and 17:15
    second_jump = OPENS + 32 * MIN  # over 17:20, 17:25 and 17:30, while the daemon is down

    async with controller(aredis, site, start=OPENS - MIN) as clock, running(settings) as d:
        runs.append(d)
        await leading(d)
        await clock.resume()
        await markers.wait(actions[0])
        await clock.jump_to(first_jump)  # while running
        await markers.wait(actions[3])
        await clock.pause()
    async with controller(aredis, site) as clock:
        await clock.jump_to(second_jump)  # nobody is running the timetable now
    async with running(settings) as d, controller(aredis, site) as clock:
        runs.append(d)
        assert clock.state.paused
        await markers.wait(actions[6])
        await clock.resume()
        await markers.wait(actions[7])
        d.service.stop()

    fired = [await markers.fired_at(a) for a in actions]
    assert None not in fired
    assert actions[0].at <= fired[0] < actions[0].at + ON_TIME  # type: ignore[operator]
    for n in (1, 2, 3):
        assert fired[n] >= first_jump, (label(actions[n]), fired[n])  # type: ignore[operator]
    for n in (4, 5, 6):
        assert fired[n] == second_jump  # run on restart, the clock paused: exactly then
    assert actions[7].at <= fired[7] < actions[7].at + ON_TIME  # type: ignore[operator]
    assert fired == sorted(fired)  # type: ignore[type-var]
    assert sum(d.service.scheduler.fired for d in runs) == len(actions)  # once each
    assert done_order(caplog) == [label(a) for a in actions]  # in order
    late = {
        r.getMessage().split(" late by ")[0]
        for r in caplog.records
        if r.name == "bonusd.service.scheduler" and " late by " in r.getMessage()
    }
    for n in range(1, 7):
        assert f"running {actions[n].action} {'/'.join(actions[n].ids)}" in late


async def test_the_daemon_creates_the_clock_only_if_missing(
    site: str, shared: Callable[[dt.datetime], Settings], aredis: aioredis.Redis
) -> None:
    """BONUSD_CLOCK_START / BONUSD_CLOCK_SPEED create the shared clock; a daemon started
    later (another of the site's daemons, or a restart) follows it as it is."""
    first = Service(shared(OPENS), serve_http=False)
    async with first:
        assert isinstance(first.clock, SharedClock)
        assert (first.clock.state.speed, first.clock.state.version) == (600, 1)
        assert OPENS <= first.clock.now() < OPENS + 30 * MIN
        later = Service(shared(OPENS + 24 * 60 * MIN).model_copy(update={"clock_speed": 5}))
        async with later:
            assert isinstance(later.clock, SharedClock)
            assert later.clock.state == first.clock.state
    stored = await aredis.hgetall(f"bonusd:{{{site}}}:clock")
    assert stored["speed"] == "600.0"
