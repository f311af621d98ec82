"""One client that never reads must not delay the others: it is dropped to a snapshot,
then closed, while a healthy client on the same stream gets every delta in order."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import socket
from pathlib import Path

import pytest
import websockets

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.promotions import Side
from bonusd.push.stream import TOO_SLOW
from bonusd.settings import Settings
from tests.daemon_helpers import running
from tests.push.helpers import (
    GH,
    HALFWAY_AT,
    MEMBERS,
    NAMES,
    Message,
    connect,
    frozen_pool,
    golden_horse,
    recv,
    token,
    ws_url,
)


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    return golden_horse(settings, tmp_path, site)


async def test_a_stuck_client_is_dropped_then_closed_and_delays_nobody(
    gh_settings: Settings, redis_url: str, site: str, caplog: pytest.LogCaptureFixture
) -> None:
    await frozen_pool(redis_url, site)
    settings = gh_settings.model_copy(update={"push_queue_size": 4})
    clock = ManualClock(HALFWAY_AT - dt.timedelta(minutes=5))
    async with running(settings, clock) as d:
        svc = d.service
        await d.http.post("/members/import", content=MEMBERS, headers={"content-type": "text/csv"})
        await svc.scheduler.caught_up.wait()
        # ten members on each live board, so each publication is a sizeable delta (the
        # kernel buffers up to megabytes for a peer that does not read before it blocks)
        for side, cards in (("slots", list(NAMES)[:10]), ("tables", list(NAMES)[10:20])):
            board = svc.promotion_store.keys.board(GH, "halfway", side)
            await svc.redis.zadd(board, {card: 50_000 + n for n, card in enumerate(cards)})
        hello = {"token": await token(d, Role.SIGNAGE, "main")}

        # the stuck client: a tiny receive buffer, and it never reads
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        raw.connect(("127.0.0.1", settings.http_port))
        raw.setblocking(False)
        stuck = await websockets.connect(ws_url(d, "/ws/signage"), sock=raw, max_queue=1)
        await stuck.send(json.dumps(hello))
        healthy = await connect(d, "/ws/signage", hello)
        got: list[Message] = [await recv(healthy)]
        assert got[0]["type"] == "snapshot"

        async def read() -> None:
            while True:
                message = await recv(healthy)
                if message["type"] != "ping":
                    got.append(message)

        reader = asyncio.create_task(read())
        try:
            publications = 0
            while svc.push.stats.kicked == 0:
                assert publications < 5000, "the stuck client was never closed"
                publications += 1
                at = HALFWAY_AT + dt.timedelta(seconds=publications)
                for side in Side:
                    await svc.promotion_store.publish_board(GH, "halfway", side, at)
                await svc.push.announce("boards")
                # the healthy client gets each publication before the next is made
                async with asyncio.timeout(15):
                    while not any(
                        e.get("published_at") == at.isoformat()
                        for m in got[-1:]
                        for e in m.get("events", [])
                    ):
                        await asyncio.sleep(0.002)
        finally:
            reader.cancel()
        assert svc.push.stats.resyncs >= 1  # dropped to a snapshot before it was closed
        assert svc.push.subscribers == 1  # only the healthy client is left
        deltas = got[1:]
        assert [m["type"] for m in deltas] == ["delta"] * len(deltas)
        assert [m["seq"] for m in deltas] == list(
            range(got[0]["seq"] + 1, got[0]["seq"] + 1 + len(deltas))
        )
        assert len(deltas) >= publications  # nothing skipped for the healthy one

        # the stuck client, reading at last, finds its connection closed by the daemon
        try:
            async with asyncio.timeout(15):
                while True:
                    await stuck.recv()
        except websockets.ConnectionClosed:
            pass
        assert stuck.close_code in (TOO_SLOW, 1006, None)
        await healthy.close()
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


async def test_stopping_the_daemon_closes_its_streams(
    gh_settings: Settings, redis_url: str, site: str
) -> None:
    await frozen_pool(redis_url, site)
    clock = ManualClock(HALFWAY_AT - dt.timedelta(minutes=5))
    async with running(gh_settings, clock) as d:
        signage = await connect(d, "/ws/signage", {"token": await token(d, Role.SIGNAGE, "main")})
        crew = await connect(d, "/ws/crew", {"token": await token(d, Role.CREW)})
        assert (await recv(signage))["type"] == (await recv(crew))["type"] == "snapshot"
    # the daemon stopped (what SIGTERM does): every stream was closed, going away
    for ws in (signage, crew):
        try:
            async with asyncio.timeout(15):
                while True:
                    await ws.recv()
        except websockets.ConnectionClosed:
            pass
        assert ws.close_code in (1001, 1012)
