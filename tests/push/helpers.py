"""Helpers of the push tests (tests/push/) and of the tests elsewhere that use a live
push: the Golden Horse halfway draw day (`golden_horse`, `draw_day`, its 40 members and
frozen pool), a token of a role, and a websocket client speaking docs/push.md
(`connect`, `recv`, `until`, `closed_with`, `events`, `apply`)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
import websockets
from websockets.asyncio.client import ClientConnection

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.settings import Settings
from tests.daemon_helpers import PROJECT, SAST, Daemon, running

GH = "golden-horse-mega-points-chase"
HALFWAY_AT = dt.datetime(2026, 11, 7, 19, 0, tzinfo=SAST)
NAMES = {f"600100{n:04d}": f"Member{n} Surname{n}" for n in range(40)}
MEMBERS = "card,name,tier\n" + "".join(f"{c},{n},Q\n" for c, n in NAMES.items())
Message = dict[str, Any]


def golden_horse(settings: Settings, tmp_path: Path, site: str) -> Settings:
    """The suite's settings running the Golden Horse promotion at this test's site."""
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return settings.model_copy(update={"promotions": folder})


async def frozen_pool(redis_url: str, site: str) -> None:
    """The halfway entry pool as the bin close freezes it: the 40 members above."""
    r = aioredis.Redis.from_url(redis_url)
    counts = {Tombola.POOLED: {card: 1 + n % 5 for n, card in enumerate(NAMES)}}
    pool = EntryPool.freeze(promotion_id=GH, draw_id="halfway", closed_at=HALFWAY_AT, counts=counts)
    await r.set(f"bonusd:{{{site}}}:pool:{GH}:halfway", pool.canonical())
    await r.aclose()


@contextlib.asynccontextmanager
async def draw_day(settings: Settings, redis_url: str, site: str) -> AsyncIterator[Daemon]:
    """The daemon at 18:55 on the halfway draw day (3x multiplier on, round 1 at 19:00),
    members imported, the scheduler caught up."""
    await frozen_pool(redis_url, site)
    clock = ManualClock(HALFWAY_AT - dt.timedelta(minutes=5))
    async with running(settings, clock) as d:
        r = await d.http.post(
            "/members/import", content=MEMBERS, headers={"content-type": "text/csv"}
        )
        assert r.status_code == 200
        async with asyncio.timeout(30):
            await d.service.scheduler.caught_up.wait()
        yield d


async def token(d: Daemon, role: Role, area: str = "") -> str:
    issued = await d.service.tokens.issue(
        role=role,
        name=f"test {role} {area}".strip(),
        area=area,
        now=d.service.clock.now(),
        valid_for=dt.timedelta(days=30),
    )
    return issued.token


def ws_url(d: Daemon, path: str, **query: str) -> str:
    base = str(d.http.base_url).replace("http://", "ws://").rstrip("/")
    q = "&".join(f"{k}={v}" for k, v in query.items())
    return f"{base}{path}" + (f"?{q}" if q else "")


async def connect(
    d: Daemon, path: str, hello: Message | str | bytes | None, **query: str
) -> ClientConnection:
    """A websocket to the daemon; `hello` is sent as the first frame (dict: as JSON)."""
    ws = await websockets.connect(ws_url(d, path, **query), max_size=None)
    if isinstance(hello, dict):
        await ws.send(json.dumps(hello))
    elif hello is not None:
        await ws.send(hello)
    return ws


async def recv(ws: ClientConnection) -> Message:
    async with asyncio.timeout(15):
        data = await ws.recv()
    message: Message = json.loads(data)
    return message


async def until(ws: ClientConnection, wanted: Callable[[Message], bool]) -> list[Message]:
    """Read messages (pings skipped) until one satisfies `wanted`; all of them, in order."""
    out = []
    while True:
        message = await recv(ws)
        if message["type"] == "ping":
            continue
        out.append(message)
        if wanted(message):
            return out


async def closed_with(ws: ClientConnection) -> tuple[int | None, str]:
    """Read until the server closes; its close code and reason."""
    try:
        async with asyncio.timeout(15):
            while True:
                await ws.recv()
    except websockets.ConnectionClosed:
        return ws.close_code, ws.close_reason or ""


def events(messages: list[Message], kind: str) -> list[Message]:
    return [e for m in messages if m["type"] == "delta" for e in m["events"] if e["kind"] == kind]


def apply(state: Message, messages: list[Message], seq: int = -1) -> int:
    """Apply a snapshot and deltas to `state` in order, checking that each delta follows
    the last message applied (`seq`); returns the last seq."""
    for m in messages:
        if m["type"] == "snapshot":
            state.clear()
            state.update(m["state"])
        else:
            assert m["seq"] == seq + 1, "a delta out of sequence"
            state.update(m["set"])
        seq = m["seq"]
    return seq


# -- snapshot, deltas, a real draw round, a crew action -------------------------------------------


async def ensure_closed(d: Daemon) -> None:
    """The halfway bin closed early (it is 18:55; it closes at 19:00): an admin asks with a
    reason and a desk member approves, as the desk would (four eyes, docs/draws.md)."""
    if (await d.service.draws.book(GH, "halfway")).frozen:
        return
    base = f"/promotions/{GH}/draws/halfway/changes"
    body = {"change": "early_close", "reason": "the test runs its rounds before their time"}
    asked = await _as(d, Role.ADMIN, "admin one", base, body)
    number = asked["changes"][-1]["request"]
    await _as(d, Role.DESK, "desk two", f"{base}/{number}/approve", None)


async def _as(d: Daemon, role: Role, name: str, path: str, body: object) -> Any:
    issued = await d.service.tokens.issue(
        role=role, name=name, area="", now=d.service.clock.now(), valid_for=dt.timedelta(days=1)
    )
    headers = {"Authorization": f"Bearer {issued.token}"}
    r = await d.http.post(path, json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


async def run_round(d: Daemon, number: int) -> set[str]:
    await ensure_closed(d)
    desk = await d.client(Role.DESK)
    try:
        r = await desk.post(f"/promotions/{GH}/draws/halfway/run", json={"round": number})
        assert r.status_code == 200, r.text
        return {c["card"] for c in r.json()["claims"] if c["round"] == number}
    finally:
        await desk.aclose()
