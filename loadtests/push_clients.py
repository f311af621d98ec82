"""The client side of the push benchmark (`bench_push.py`): the processes holding the
signage websockets, each noting when every winner cue arrives, and the bare `websockets`
broadcaster they are compared with. Own module so that the spawned processes import only
this, not the benchmark's set-up."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from multiprocessing.synchronize import Event as MpEvent
from typing import Any

import websockets
from websockets.asyncio.server import ServerConnection, broadcast, serve


def monotonic() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def winners(text: str) -> list[int]:
    """Claim numbers of the winner cues in a message (only such messages are parsed)."""
    if '"kind":"winner"' not in text:
        return []
    events = json.loads(text).get("events", [])
    return [e["claim"] for e in events if e["kind"] == "winner"]


# -- client processes ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Share:
    """One client process's connections: `count` to the daemon and `count` to the bare."""

    daemon_url: str
    bare_url: str
    count: int
    compression: str | None


async def _clients(share: Share, out: Any, ready: Any, stop: MpEvent) -> None:
    daemon_url, bare_url, count = share.daemon_url, share.bare_url, share.count
    seen: dict[tuple[str, int], list[float]] = {}
    opening = asyncio.Semaphore(64)  # connections being opened at once
    connected = 0

    async def hold(url: str, source: str) -> None:
        nonlocal connected
        async with opening:
            ws = await websockets.connect(
                url,
                compression=share.compression,
                max_size=None,
                ping_interval=None,
                open_timeout=120,
            )
        connected += 1
        async with ws:
            async for message in ws:
                assert isinstance(message, str)
                for claim in winners(message):
                    at = monotonic()
                    times = seen.setdefault((source, claim), [])
                    times.append(at)
                    if len(times) == count:
                        out.put((source, claim, max(times), len(times)))

    async with asyncio.TaskGroup() as tg:
        tasks = [
            tg.create_task(hold(u, s))
            for _ in range(count)
            for u, s in ((daemon_url, "daemon"), (bare_url, "bare"))
        ]
        while connected < 2 * count:
            await asyncio.sleep(0.01)
        ready.put(os.getpid())
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for t in tasks:
            t.cancel()


def client_process(share: Share, out: Any, ready: Any, stop: MpEvent) -> None:
    asyncio.run(_clients(share, out, ready, stop))


# -- the bare broadcaster -----------------------------------------------------------------
def bare_process(port: int, started: Any, compression: str | None) -> None:
    async def main() -> None:
        clients: set[ServerConnection] = set()

        async def handler(ws: ServerConnection) -> None:
            if ws.request is not None and ws.request.path == "/control":
                async for text in ws:
                    t0 = monotonic()
                    broadcast(clients, text)
                    await ws.send(repr(t0))
                return
            clients.add(ws)
            try:
                await ws.wait_closed()
            finally:
                clients.discard(ws)

        async with serve(handler, "127.0.0.1", port, compression=compression, ping_interval=None):
            started.put(port)
            await asyncio.Future()

    asyncio.run(main())
