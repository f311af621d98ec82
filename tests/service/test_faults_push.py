"""A flood of websockets: many that connect and never send their token, and a churn of
clients that connect, authenticate (or send garbage) and leave, politely or by dropping
the TCP connection. Meanwhile /health answers, a new authorised client gets its snapshot
and a watching one every delta; the silent ones are closed once the handshake time is
over (4408); afterwards the hub holds no subscriber and the daemon no task it did not
hold before. (A stuck client: tests/push/test_push_slow.py; garbage frames one by one:
tests/push/test_push_access.py.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from bonusd.access.auth import Role
from bonusd.settings import Settings
from tests.daemon_helpers import Daemon
from tests.push.helpers import (
    GH,
    closed_with,
    connect,
    draw_day,
    ensure_closed,
    events,
    golden_horse,
    recv,
    token,
    until,
    ws_url,
)

CONCURRENCY = 50  # clients connecting at once during the churn


@contextlib.asynccontextmanager
async def _day(
    settings: Settings, tmp_path: Path, redis_url: str, site: str, handshake_s: float
) -> AsyncIterator[Daemon]:
    gh = golden_horse(settings, tmp_path, site)
    async with draw_day(
        gh.model_copy(update={"push_handshake_s": handshake_s}), redis_url, site
    ) as d:
        yield d


async def _settle(what: object, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not what():  # type: ignore[operator]
            await asyncio.sleep(0.05)


# what a daemon's tasks wait on for a moment between steps (a poll's sleep, a clock's
# sleeper, an event): how many there are depends on the moment the tasks are counted
_PASSING = {"Event.wait", "sleep", "ManualClock.sleep_until", "Queue.get"}


def _held() -> Counter[str]:
    """The daemon's lasting tasks, by what they run."""
    names = (task.get_coro().__qualname__ for task in asyncio.all_tasks())  # type: ignore[union-attr]
    return Counter(name for name in names if name not in _PASSING)


async def _churn(d: Daemon, n: int, hello: dict[str, str]) -> dict[str, int]:
    """`n` short-lived clients, `CONCURRENCY` at a time; what became of them."""
    seen = {"snapshot": 0, "garbage_closed": 0, "dropped": 0}
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with gate:
            if i % 3 == 0:  # garbage instead of a token
                ws = await connect(d, "/ws/signage", "\x00 not json", area="main")
                if (await closed_with(ws))[0] == 4400:
                    seen["garbage_closed"] += 1
                return
            ws = await connect(d, "/ws/signage", hello)
            if (await recv(ws))["type"] == "snapshot":
                seen["snapshot"] += 1
            if i % 3 == 1:
                await ws.close()
            else:  # gone without a close frame
                ws.transport.abort()
                seen["dropped"] += 1

    await asyncio.gather(*(one(i) for i in range(n)))
    return seen


async def _flood(d: Daemon, silent_n: int, churn_n: int) -> None:
    handshake_s = d.service.settings.push_handshake_s
    hub = d.service.push
    assert hub is not None
    # the day's timetable caught up first (its late actions run tasks of their own)
    await asyncio.wait_for(d.service.scheduler.caught_up.wait(), 30)
    await asyncio.sleep(0.2)
    baseline = _held()
    signage = {"token": await token(d, Role.SIGNAGE, "main")}
    watcher = await connect(d, "/ws/crew", {"token": await token(d, Role.CREW)})
    assert (await recv(watcher))["type"] == "snapshot"

    # 1. sockets that connect and never say who they are
    opening = asyncio.Semaphore(4 * CONCURRENCY)

    async def hold() -> ClientConnection:
        async with opening:  # all open together, within the client's own open timeout
            return await websockets.connect(ws_url(d, "/ws/crew"), open_timeout=60)

    silent = await asyncio.gather(*(hold() for _ in range(silent_n)))
    health = await d.get("/health")
    assert health["status"] == "ok"
    newcomer = await connect(d, "/ws/signage", signage)
    assert (await recv(newcomer))["type"] == "snapshot"
    await ensure_closed(d)  # 18:55: the bin closes at 19:00
    desk = await d.client(Role.DESK)
    r = await desk.post(f"/promotions/{GH}/draws/halfway/run", json={"round": 1})
    assert r.status_code == 200, r.text
    alerts = await until(watcher, lambda m: len(m.get("set", {}).get("alerts", [])) == 5)
    assert len(events(alerts, "alert")) == 5
    closes = await asyncio.gather(*(closed_with(ws) for ws in silent))
    assert set(closes) == {(4408, f"no token frame within {handshake_s:g} s")}

    # 2. a churn of clients, a third of them sending garbage
    seen = await _churn(d, churn_n, signage)
    thirds = len(range(0, churn_n, 3))
    assert seen["garbage_closed"] == thirds
    assert seen["snapshot"] == churn_n - thirds
    assert (await d.get("/health"))["status"] == "ok"
    claim = alerts[-1]["set"]["alerts"][0]["claim"]
    handheld = await d.client(Role.CREW)
    r = await handheld.post(f"/promotions/{GH}/draws/halfway/claims/{claim}/present")
    assert r.status_code == 200, r.text
    assert events(await until(watcher, lambda m: bool(events([m], "state"))), "state")
    assert (await recv(newcomer))["type"] in ("delta", "ping")  # still served

    # 3. all gone: nothing left behind
    for ws in (watcher, newcomer):
        await ws.close()
    await desk.aclose()
    await handheld.aclose()
    await _settle(lambda: hub.subscribers == 0)
    try:
        await _settle(lambda: not _held() - baseline)
    except TimeoutError:
        pytest.fail(f"tasks left behind: {sorted((_held() - baseline).elements())}")
    assert hub.stats.kicked == 0


async def test_a_flood_of_websockets_leaves_the_daemon_serving(
    settings: Settings, tmp_path: Path, redis_url: str, site: str
) -> None:
    async with _day(settings, tmp_path, redis_url, site, handshake_s=3.0) as d:
        await _flood(d, silent_n=200, churn_n=300)


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_a_flood_of_thousands_of_websockets_leaves_the_daemon_serving(
    settings: Settings, tmp_path: Path, redis_url: str, site: str
) -> None:
    async with _day(settings, tmp_path, redis_url, site, handshake_s=10.0) as d:  # the default
        await _flood(d, silent_n=1_000, churn_n=1_500)
