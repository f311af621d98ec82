"""Upgrades without a lost point (docs/deploy.md, "Upgrades"): the rolling upgrade of a
site's two daemons as the page says it — the standby first: drain it (the graceful stop
SIGTERM starts), upgrade it, start it; then the leader, which hands its lease over as it
stops — while the floor publishes at a steady rate, the scheduler's timed actions fall
due on the way, and a signage screen is connected through nginx (deploy/nginx/bonusd.conf:
this server's daemon, the other as the backup). The new release migrates the data's
layout (a rolling migration) while the old release still runs beside it.

Shown: every event published is applied exactly once; every timed action fires exactly
once (its marker, the token of whichever daemon led then, one "done" line); the screen
reconnects by itself (as displays/stream.js does) and its longest silence is printed; a
daemon of the old release started afterwards is refused. The figures are printed (`-s`)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
import websockets

from bonusd.access.auth import Role
from bonusd.infra import layout
from bonusd.infra.keys import Keys
from bonusd.infra.layout import LayoutError, LayoutPlan, Migration
from bonusd.infra.sharedclock import SharedClock
from bonusd.promotions import TimedAction, load_promotion, schedule
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import Daemon, running
from tests.deploy.helpers import make_certificates, nginx, tool
from tests.service.helpers import MIN, OPENS, PROMOTION, WINDOW, controller
from tests.telemetry_helpers import Publisher, game

SPEED = 150  # simulated seconds per wall second: an action every 2 s
# once both daemons run the new release, the rest of the timetable (most of it) runs ten
# times faster: an action every 0.2 s, each still fired once by whichever daemon leads
DONE_SPEED = 1500
RATE = 100  # events a second
OLD = layout.LAYOUT
NEW_LAYOUT = 2


class Floor(threading.Thread):
    """EGMs publishing games at a steady rate (QoS 1, each acknowledged by the broker)."""

    def __init__(self, broker: LocalMosquitto, site: str) -> None:
        super().__init__(daemon=True)
        self.publisher = Publisher(broker, site)
        self.stopping = threading.Event()
        self.sent = 0

    def run(self) -> None:
        start, due = OPENS - dt.timedelta(hours=1), time.monotonic()
        while not self.stopping.is_set():
            n = self.sent
            ts = start + dt.timedelta(milliseconds=10 * n)
            self.publisher.egm(f"EGM-{n % 20}", game(str(1000 + n % 20), ts, 100, 1))
            self.sent += 1
            due += 1 / RATE
            time.sleep(max(0.0, due - time.monotonic()))
        self.publisher.close()


class Screen:
    """A signage screen behind the proxy, reconnecting as displays/stream.js does: after
    0.5 s x 2^attempt (0.7-1.3 jitter, at most 10 s), resuming from its last message."""

    def __init__(self, uri: str, token: str, tls: ssl.SSLContext) -> None:
        self.uri, self.token, self.tls = uri, token, tls
        self.heard: list[float] = []
        self.connections = 0
        self.closes: list[int | None] = []
        self.gaps: list[float] = []  # from a close to the first message after it
        self._closed_at: float | None = None

    async def run(self) -> None:
        attempt, resume = 0, None
        while True:
            try:
                async with websockets.connect(self.uri, ssl=self.tls) as ws:
                    hello: dict[str, Any] = {"token": self.token}
                    if resume:
                        hello["resume"] = resume
                    await ws.send(json.dumps(hello))
                    self.connections += 1
                    async for raw in ws:
                        message = json.loads(raw)
                        self.heard.append(time.monotonic())
                        if self._closed_at is not None:
                            self.gaps.append(self.heard[-1] - self._closed_at)
                            self._closed_at = None
                        attempt = 0
                        if "epoch" in message:
                            resume = {"epoch": message["epoch"], "seq": message["seq"]}
                self.closes.append(ws.close_code)
            except (OSError, websockets.WebSocketException):
                self.closes.append(None)
            self._closed_at = self._closed_at or time.monotonic()
            delay = min(10.0, 0.5 * 2**attempt) * random.uniform(0.7, 1.3)
            attempt += 1
            await asyncio.sleep(delay)

    def reconnected(self) -> list[float]:
        return [round(gap, 2) for gap in self.gaps]

    def longest_silence(self) -> float:
        return max(b - a for a, b in zip(self.heard, self.heard[1:], strict=False))


class Node:
    """One daemon of the site: started, drained (a graceful stop), started again."""

    def __init__(self, conf: Settings) -> None:
        self.conf = conf
        self.stack = contextlib.AsyncExitStack()
        self.daemon: Daemon | None = None

    async def start(self) -> Daemon:
        self.stack = contextlib.AsyncExitStack()
        self.daemon = await self.stack.enter_async_context(running(self.conf))
        return self.daemon

    async def drain(self) -> float:
        began = time.monotonic()
        await self.stack.aclose()
        self.daemon = None
        return time.monotonic() - began

    def leads(self) -> bool:
        return self.daemon is not None and self.daemon.service.health.leader_token is not None


async def until(check: Callable[[], Any], what: str, timeout: float = 30.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while True:
                got = check()
                if asyncio.iscoroutine(got):
                    got = await got
                if got:
                    return
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(what) from None


def _promotions(tmp_path: Path, site: str) -> Path:
    """Four multiplier windows, 17:00-17:05 ... 17:30-17:35: an action every 5 minutes."""
    windows = "".join(WINDOW.format(n=n, a=10 * n, b=10 * n + 5) for n in range(4))
    folder = tmp_path / "promotions"
    folder.mkdir()
    (folder / "clock.toml").write_text(PROMOTION.format(site=site, windows=windows))
    return folder


def _migrated(keys: Keys) -> str:
    return f"{keys.base}upgrade-test-migrations"


def _new_release() -> LayoutPlan:
    """The upgrade's release: layout 2, reached by an additive (rolling) migration."""

    async def add_family(redis: aioredis.Redis, keys: Keys) -> None:
        await redis.incr(_migrated(keys))

    return LayoutPlan(NEW_LAYOUT, (Migration(2, "a family added", True, add_family),))


@dataclass
class Upgrade:
    """What the test watches: the site's Redis, its keys, its timetable's markers."""

    aredis: aioredis.Redis
    keys: Keys
    markers: list[str]
    monkeypatch: pytest.MonkeyPatch
    actions: list[TimedAction]
    drains: list[float] = field(default_factory=list)
    handover_s: float = 0.0


async def test_a_rolling_upgrade_under_load_loses_and_doubles_nothing(
    settings: Settings,
    broker: LocalMosquitto,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tool("nginx", "nginx")
    caplog.set_level(logging.INFO, logger="bonusd.service.scheduler")
    site = settings.site
    folder = _promotions(tmp_path, site)
    keys = Keys(settings.key_prefix, site)
    actions = list(schedule(load_promotion(folder / "clock.toml")))
    markers = [
        keys.fired(f"{a.at.isoformat()}:{a.action.value}:{':'.join(a.ids)}") for a in actions
    ]

    def server(name: str) -> Settings:
        return settings.model_copy(
            update={
                "mqtt_client_id": f"bonusd-{site}-{name}",
                "mqtt_shared_group": f"g{site}",
                "http_port": free_port(),
                "promotions": folder,
                "clock": "shared",
                "push_ping_s": 1,  # the screen hears something every second
                "retention_audit_archive": tmp_path / name / "audit-archive",
                "digest_dir": tmp_path / name / "audit-digests",
            }
        )

    a, b = Node(server("a")), Node(server("b"))
    aredis = aioredis.Redis.from_url(settings.redis_url, decode_responses=True)
    run = Upgrade(aredis, keys, markers, monkeypatch, actions)
    floor = Floor(broker, site)
    try:
        async with controller(aredis, site, start=OPENS - MIN) as clock:
            await a.start()
            await b.start()
            await until(lambda: a.leads() or b.leads(), "nobody leads")
            assert await aredis.get(keys.layout()) == str(OLD.version)
            screen = await _floor_and_screen(run, (a, b), floor, clock, tmp_path)
            await _old_daemon_refused(a.conf, monkeypatch)
            await asyncio.gather(a.drain(), b.drain())  # the timetable is done
        stats = await aredis.hgetall(keys.stats)
        fired_by = await aredis.hgetall(keys.leader_fired_by)
        active = await aredis.smembers(keys.active_multipliers)
        stored = (await aredis.get(keys.layout()), await aredis.get(_migrated(keys)))
        late = [
            (dt.datetime.fromisoformat(await aredis.get(m) or "") - a.at).total_seconds()
            for a, m in zip(actions, markers, strict=True)
        ]
    finally:
        await aredis.aclose()
    done = [
        r.getMessage().removesuffix(" done")
        for r in caplog.records
        if r.name == "bonusd.service.scheduler" and r.getMessage().endswith(" done")
    ]
    print(
        f"\nrolling upgrade: {floor.sent} events published, {stats.get('applied')} applied, "
        f"{stats.get('duplicates', 0)} duplicate deliveries refused; {len(actions)} actions "
        f"due, {len(fired_by)} fired, by tokens {sorted(set(fired_by.values()))}, the latest "
        f"{max(late):.0f} simulated s after its time; drains "
        f"{run.drains} s, the lease with the upgraded daemon {run.handover_s:.2f} s after the "
        f"leader's drain began; the screen connected {screen.connections} times, back "
        f"{screen.reconnected()} s after each close, longest silence "
        f"{screen.longest_silence():.2f} s (a ping a second)"
    )
    assert int(stats["applied"]) == floor.sent  # every event, once
    assert not [k for k in stats if k.startswith("deadletter:")]
    assert sorted(fired_by) == sorted(markers)  # every action, each marked once
    assert len(done) == len(set(done)) == len(actions)  # and run once
    assert len(set(fired_by.values())) >= 2  # the leader changed on the way
    assert active == set()  # every multiplier window that opened closed
    assert stored == (str(NEW_LAYOUT), "1")  # migrated once, beside the old release
    assert screen.connections >= 2 and screen.longest_silence() < 10


async def _floor_and_screen(
    run: Upgrade, nodes: tuple[Node, Node], floor: Floor, clock: SharedClock, tmp_path: Path
) -> Screen:
    """The floor plays, a screen watches through nginx, the clock runs, the daemons are
    upgraded one by one; until every action ran and every event is applied."""
    a, b = nodes
    certs = make_certificates(tmp_path / "tls")
    port, other = a.conf.http_port, b.conf.http_port
    with nginx(tmp_path / "nginx", daemon_port=port, backup_port=other, certs=certs) as proxy:
        assert a.daemon is not None
        issued = await a.daemon.service.tokens.issue(
            role=Role.SIGNAGE, name="Screen main-1", area="main",
            now=a.daemon.service.clock.now(), valid_for=dt.timedelta(days=1),
        )  # fmt: skip
        tls = ssl.create_default_context(cafile=str(certs.ca))
        uri = f"wss://127.0.0.1:{proxy.tls_port}/ws/signage?area=main"
        screen = Screen(uri, issued.token, tls)
        watching = asyncio.create_task(screen.run())
        await until(lambda: screen.heard, "the screen heard nothing")
        floor.start()
        await clock.set_speed(SPEED)
        await clock.resume()
        await until(lambda: run.aredis.exists(run.markers[0]), "no action fired")
        await _roll(run, a, b, clock)
        await clock.set_speed(DONE_SPEED)
        await until(lambda: run.aredis.exists(run.markers[-1]), "the timetable did not end", 60)
        floor.stopping.set()
        await asyncio.to_thread(floor.join)
        applied = lambda: _applied(run.aredis, run.keys, floor.sent)  # noqa: E731
        await until(applied, "not every event was applied", 60)
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    return screen


async def _roll(run: Upgrade, a: Node, b: Node, clock: SharedClock) -> None:
    """The procedure of docs/deploy.md, "Upgrades": the standby first, then the leader,
    drained just before an action falls due (the new leader runs it)."""
    leader, standby = (a, b) if a.leads() else (b, a)
    run.drains.append(round(await standby.drain(), 2))
    run.monkeypatch.setattr(layout, "LAYOUT", _new_release())  # this host is upgraded
    await standby.start()  # migrates the layout, beside the old leader still running
    assert await run.aredis.get(run.keys.layout()) == str(NEW_LAYOUT)
    fired = [bool(await run.aredis.exists(m)) for m in run.markers]
    due = run.actions[fired.index(False)].at
    await until(lambda: clock.now() >= due - dt.timedelta(seconds=SPEED // 5), "no time")
    lease = await run.aredis.get(run.keys.leader)
    taken_at: list[float] = []

    async def taken() -> bool:
        now = await run.aredis.get(run.keys.leader)
        if now is not None and now != lease:
            taken_at.append(time.monotonic())
        return bool(taken_at)

    watching = asyncio.create_task(until(taken, "the upgraded standby never took the lease"))
    began = time.monotonic()
    run.drains.append(round(await leader.drain(), 2))  # releases the lease as it stops
    await watching
    run.handover_s = taken_at[0] - began
    assert standby.leads()
    await leader.start()  # upgraded too: nothing left to migrate


async def _old_daemon_refused(conf: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon of the release before, started once the data is in the new layout."""
    monkeypatch.setattr(layout, "LAYOUT", OLD)
    old = Service(conf.model_copy(update={"http_port": free_port()}), serve_http=False)
    try:
        with pytest.raises(LayoutError, match="written by a newer bonusd"):
            await old.__aenter__()
    finally:
        await old.redis.aclose()


async def _applied(aredis: aioredis.Redis, keys: Keys, sent: int) -> bool:
    return int(await aredis.hget(keys.stats, "applied") or 0) >= sent
