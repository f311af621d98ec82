"""The publisher paced by the shared clock in Redis (docs/clock.md): it creates the clock
when missing, follows one that exists, holds while it is paused, catches up when it jumps,
and never publishes an event before the clock has reached it. Real Redis, real Mosquitto;
each test has its own site, so its own clock key."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import paho.mqtt.client as mqtt
import pytest
import redis
import redis.asyncio as aioredis
from paho.mqtt.enums import CallbackAPIVersion

from bonusd.errors import ClockError
from bonusd.infra.sharedclock import SharedClock
from simulators import build_floor, generate_events, load_floor, publish_events
from simulators.local.services import LocalMosquitto
from simulators.pacing import SharedPacer, WallPacer
from tests.daemon_helpers import PROJECT

SAST = dt.timezone(dt.timedelta(hours=2))
START = dt.datetime(2026, 10, 3, 16, 55, tzinfo=SAST)


def _ms(instant: dt.datetime) -> int:
    return int(instant.timestamp() * 1000)


def _bonusd_clock(redis_url: str, site: str, action: str, **kw: Any) -> None:
    """Act on the site's clock as a daemon or `bonusd clock` would."""

    async def run() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            prefix = SharedClock.site_prefix("bonusd", site)
            clock = await SharedClock.connect(client, prefix, changed_by="test", **kw)
            if action == "pause":
                await clock.pause()
            elif action == "jump":
                await clock.jump(dt.timedelta(seconds=20))
            elif action == "slow":
                await clock.set_speed(1)
        finally:
            await client.aclose()

    asyncio.run(run())


def test_the_simulator_creates_the_clock_when_it_is_missing(site: str, redis_url: str) -> None:
    pacer = SharedPacer(redis_url=redis_url, site=site, start=START, speed=600)
    try:
        raw = redis.Redis.from_url(redis_url, decode_responses=True).hgetall(
            f"bonusd:{{{site}}}:clock"
        )
        assert raw["changed_by"] == "simulator"
        assert float(raw["speed"]) == 600
        assert int(raw["origin_sim_ms"]) == _ms(START)
        target = _ms(START) + 30_000  # 30 simulated seconds: 50 ms at x600
        pacer.wait_until(target)
        assert pacer.now_ms() >= target
        assert pacer.now_ms() < target + 600 * 5_000  # well within 5 wall seconds
    finally:
        pacer.close()


def test_the_simulator_follows_a_clock_that_exists(site: str, redis_url: str) -> None:
    _bonusd_clock(redis_url, site, "open", start=START, speed=1000)
    later = START + dt.timedelta(days=3)
    pacer = SharedPacer(redis_url=redis_url, site=site, start=later, speed=5)
    try:
        assert pacer.state.speed == 1000
        assert pacer.state.changed_by == "test"
        assert pacer.now_ms() < _ms(later)
    finally:
        pacer.close()


def test_a_paused_clock_holds_the_publisher_and_a_jump_releases_it(
    site: str, redis_url: str
) -> None:
    pacer = SharedPacer(redis_url=redis_url, site=site, start=START, speed=1000)
    released = threading.Event()
    try:
        _bonusd_clock(redis_url, site, "pause")
        pacer.refresh()
        assert pacer.state.paused
        target = int(pacer.now_ms()) + 10_000  # 10 ms of wall time, were it running

        def wait() -> None:
            pacer.wait_until(target)
            released.set()

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        assert not released.wait(1.5)  # paused: simulated time stands still
        _bonusd_clock(redis_url, site, "jump")  # 20 simulated seconds forward
        assert released.wait(5)
        waiter.join(5)
    finally:
        pacer.close()


def test_a_publisher_that_is_behind_sees_the_clock_slow_down(site: str, redis_url: str) -> None:
    # a publisher catching up asks only `now_ms` (it never waits): it must still see the
    # clock slowed from x1000 to x1, else it runs on ahead of the daemons' clock
    pacer = SharedPacer(redis_url=redis_url, site=site, start=START, speed=1000)
    try:
        _bonusd_clock(redis_url, site, "slow")
        time.sleep(0.05)  # the change has been published
        before = pacer.now_ms()
        time.sleep(0.3)  # x1000: 300 simulated seconds; x1: 0.3
        gained = pacer.now_ms() - before
        assert pacer.state.speed == 1
        assert gained < 10_000, f"{gained:.0f} simulated ms in 0.3 s: still at the old speed"
    finally:
        pacer.close()


def test_events_go_out_when_the_shared_clock_reaches_them(
    site: str, redis_url: str, broker: LocalMosquitto
) -> None:
    floor = build_floor(load_floor("ci").config, seed=2, as_of=START.date())
    span = dt.timedelta(minutes=3)
    events = list(generate_events(floor, seed=2, start=START, duration=span))[:400]
    prefix = f"test-{uuid.uuid4().hex}"
    arrived: dict[tuple[str, str, int], float] = {}  # (topic, epoch, seq): an event's identity
    done = threading.Event()
    subscribed = threading.Event()

    def on_message(_c: Any, _u: Any, msg: Any) -> None:
        body = json.loads(msg.payload)
        arrived[msg.topic, body["epoch"], body["seq"]] = time.time()
        if len(arrived) >= len(events):
            done.set()

    sub = mqtt.Client(CallbackAPIVersion.VERSION2)
    sub.on_message = on_message
    sub.on_subscribe = lambda *_a: subscribed.set()
    sub.connect("127.0.0.1", broker.port)
    sub.subscribe(f"{prefix}/#", qos=1)
    sub.loop_start()
    pacer = SharedPacer(redis_url=redis_url, site=site, start=START, speed=600)
    try:
        assert subscribed.wait(5)
        counts = publish_events(
            events, mqtt_url=broker.url, prefix=prefix, site=site, start=START, pacer=pacer
        )
        assert counts.total() == len(events)
        assert done.wait(10)
    finally:
        sub.disconnect()
        sub.loop_stop()
        pacer.close()
    state = pacer.state
    for e in events:  # on the shared clock, nothing arrived before its time
        topic = f"{prefix}/{site}/{e.kind}/{e.device}/events"
        identity = (topic, str(e.payload["epoch"]), int(e.payload["seq"]))
        assert state.sim_ms(arrived[identity]) >= e.t_ms


def test_the_command_line_runs_on_the_shared_clock(
    site: str, redis_url: str, broker: LocalMosquitto
) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "simulators", "run", "--floor", "ci", "--clock", "shared",
            "--redis-url", redis_url, "--site", site, "--prefix", f"test-{uuid.uuid4().hex}",
            "--mqtt-url", broker.url, "--start", START.isoformat(), "--duration", "2m",
            "--speed", "6000", "--granularity", "play", "--no-progress",
        ],
        cwd=PROJECT,
        capture_output=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    raw = redis.Redis.from_url(redis_url, decode_responses=True).hgetall(f"bonusd:{{{site}}}:clock")
    assert raw["changed_by"] == "simulator"
    assert "published" in done.stderr.decode()


def test_the_shared_clock_refuses_speeds_it_cannot_run(site: str, redis_url: str) -> None:
    with pytest.raises(ClockError, match="speed"):
        SharedPacer(redis_url=redis_url, site=site, start=START, speed=0)


def test_the_wall_pacer_runs_at_its_speed() -> None:
    pacer = WallPacer(6000, _ms(START))
    began = time.monotonic()
    pacer.wait_until(_ms(START) + 60_000)  # a simulated minute: 10 ms
    assert time.monotonic() - began >= 0.009
    assert pacer.now_ms() >= _ms(START) + 60_000
    flat = WallPacer(0)
    flat.wait_until(_ms(START) + 10**9)  # never waits
    assert flat.now_ms() == float("inf")
