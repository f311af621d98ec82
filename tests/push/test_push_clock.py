"""The daemon's clock on the push streams (docs/push.md, "The clock"): every message carries
the clock's state, and a change of the clock (a jump, pause, resume or speed; a test
clock's set) goes out as a delta the moment the hub learns of it. `ClockWatch` reads each
kind of clock; a stream writes the clock into its snapshot at each send; a real daemon on
a test clock tells a websocket of an `advance` at once, and one on the shared clock of a
pause, a speed and a jump made by another process."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock, SimulatedClock, WallClock
from bonusd.infra.sharedclock import SharedClock
from bonusd.push.clockstate import ClockWatch
from bonusd.push.stream import PushStats, Stream, Subscriber
from bonusd.settings import Settings
from tests.daemon_helpers import SAST, running
from tests.push.helpers import connect, draw_day, golden_horse, recv, token

START = dt.datetime(2026, 11, 7, 18, 55, tzinfo=SAST)
ZONE = ZoneInfo("Africa/Johannesburg")


async def test_a_test_clock_is_told_at_each_set_and_a_set_back_resyncs() -> None:
    clock = ManualClock(START)
    watch = ClockWatch(clock, ZONE)
    first = watch.message()
    assert first["instant"] == "2026-11-07T18:55:00.000+02:00"
    assert (first["speed"], first["paused"]) == (1.0, True)  # it moves only when told
    assert abs(first["wall"] - time.time() * 1000) < 1000
    assert watch.poll() is None  # the first state: nothing to announce
    clock.advance(0.5)  # any move of a clock standing still is a change
    assert watch.poll() is False and watch.message()["epoch"] != first["epoch"]
    assert watch.poll() is None
    clock.set(START)  # back: the screens get a fresh snapshot
    assert watch.poll() is True


async def test_wall_and_simulated_clocks_keep_their_epoch_until_they_stray() -> None:
    for clock, speed in ((WallClock(), 1.0), (SimulatedClock(START, 60), 60.0)):
        watch = ClockWatch(clock, ZONE)
        first = watch.read()
        assert (first.speed, first.paused) == (speed, False)
        watch.poll()
        await asyncio.sleep(0.05)
        assert watch.poll() is None and watch.read().epoch == first.epoch
    # a clock whose instant strays from its anchor's prediction is taken as moved
    wall = [time.time()]
    watch = ClockWatch(WallClock(), ZONE, wall=lambda: wall[0])
    watch.poll()
    wall[0] -= 5  # the clock is 5 s ahead of what its anchor predicts
    assert watch.poll() is False


async def test_a_shared_clock_is_told_by_its_version_and_heard_at_once(
    redis_url: str, site: str
) -> None:
    r = aioredis.Redis.from_url(redis_url)
    prefix = SharedClock.site_prefix("bonusd", site)
    clock = await SharedClock.connect(r, prefix, start=START, speed=60, changed_by="t")
    watch = ClockWatch(clock, ZONE)
    moved: list[float] = []
    follow = asyncio.ensure_future(watch.follow(lambda: moved.append(time.monotonic())))
    await asyncio.sleep(0)
    state = clock.state
    assert watch.read().epoch == f"{state.epoch}.{state.version}"
    asked = time.monotonic()
    paused = await clock.pause()
    await asyncio.sleep(0.01)
    assert moved and moved[0] - asked < 0.05
    message = watch.message()
    assert message["epoch"] == f"{paused.epoch}.{paused.version}" and message["paused"] is True
    assert message["speed"] == 60.0
    follow.cancel()
    await r.aclose()


def test_a_stream_writes_the_clock_into_every_message() -> None:
    ticks = iter(range(100))
    stream = Stream("crew:s", "", ring=4, clock=lambda: {"epoch": "e", "n": next(ticks)})
    stream.clock_moved("t0", went_back=False)
    assert stream.seq == 0  # nothing sent before the first view
    stream.advance({"alerts": [], "recent": []}, "t1")
    sub = Subscriber(stream, 8, PushStats())
    stream.subscribers.add(sub)
    # a snapshot's clock is written at each send, the view once
    one, two = (json.loads(stream.snapshot()[1]) for _ in range(2))
    assert one["state"] == two["state"] == {"alerts": [], "recent": []}
    assert one["clock"]["n"] < two["clock"]["n"]
    stream.clock_moved("t2", went_back=False)
    seq, text = sub.queue.get_nowait()  # type: ignore[misc]
    delta = json.loads(text)
    assert (seq, delta["set"], delta["events"], delta["clock"]["epoch"]) == (2, {}, [], "e")
    stream.ping("t3")
    assert "clock" in json.loads(sub.queue.get_nowait()[1])  # type: ignore[index]
    stream.clock_moved("t4", went_back=True)  # the delta, then a fresh snapshot
    assert sub.queue.get_nowait()[0] == 3  # type: ignore[index]
    assert sub.queue.get_nowait() is None


async def test_a_daemon_tells_a_screen_of_an_advance_at_once(
    settings: Settings, tmp_path: Path, redis_url: str, site: str
) -> None:
    async with draw_day(golden_horse(settings, tmp_path, site), redis_url, site) as d:
        clock = d.service.clock
        assert isinstance(clock, ManualClock)
        ws = await connect(d, "/ws/signage", {"token": await token(d, Role.SIGNAGE, "main")})
        snap = await recv(ws)
        assert snap["clock"]["instant"] == "2026-11-07T18:55:00.000+02:00"
        assert snap["clock"]["paused"] is True
        asked = time.monotonic()
        clock.advance(30)
        while (delta := await recv(ws))["type"] != "delta":
            pass
        took = time.monotonic() - asked
        assert delta["clock"]["instant"] == "2026-11-07T18:55:30.000+02:00"
        assert delta["clock"]["epoch"] != snap["clock"]["epoch"]
        assert (delta["set"], delta["events"]) == ({}, [])
        assert took < 0.5, f"the advance reached the screen after {took:.3f} s"
        await ws.close()


async def test_a_daemon_on_the_shared_clock_tells_a_screen_of_each_change(
    settings: Settings, tmp_path: Path, redis_url: str, site: str
) -> None:
    r = aioredis.Redis.from_url(redis_url)
    prefix = SharedClock.site_prefix("bonusd", site)
    other = await SharedClock.connect(r, prefix, start=START, speed=60, changed_by="t")
    shared = golden_horse(settings, tmp_path, site).model_copy(update={"clock": "shared"})
    async with running(shared, None) as d:
        ws = await connect(d, "/ws/crew", {"token": await token(d, Role.CREW)})
        snap = await recv(ws)
        assert (snap["clock"]["speed"], snap["clock"]["paused"]) == (60.0, False)
        for change, want in (
            (other.pause(), (60.0, True)),
            (other.set_speed(1), (1.0, True)),
            (other.jump(dt.timedelta(minutes=2)), (1.0, True)),
            (other.resume(), (1.0, False)),
        ):
            state = await change
            while (message := await recv(ws))["clock"]["epoch"] != (
                f"{state.epoch}.{state.version}"
            ):
                pass
            assert message["type"] == "delta"
            assert (message["clock"]["speed"], message["clock"]["paused"]) == want
            shown = dt.datetime.fromisoformat(message["clock"]["instant"])
            assert abs(shown.timestamp() * 1000 - state.sim_ms(message["clock"]["wall"] / 1000)) < 2
        await ws.close()
    await r.aclose()
