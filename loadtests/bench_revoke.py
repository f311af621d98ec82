"""Benchmark: how soon a revoked or expired token's websockets close, on a running daemon
(`bonusd run` in a process of its own) on the site's shared simulated clock.

    .venv/bin/python loadtests/bench_revoke.py [--tokens 20] [--sockets 5] [--speed 60]

Set-up (not timed): a throwaway site on the Redis of BONUSD_REDIS_URL, its shared clock
at `--speed`, the daemon started with `python -m bonusd run` on that clock, `--tokens`
crew tokens each holding `--sockets` `/ws/crew` connections (snapshot received).

Timed:
- revocation: `TokenStore.revoke` from a Redis client of the bench's own (as `bonusd
  tokens revoke` does), one token at a time; t0 just before the call; the latency is
  the last of the token's sockets seeing its 4401 close, minus t0.
- expiry: `--tokens` more tokens, each valid for `--speed` simulated seconds (one wall
  second at that speed) and holding `--sockets` connections; the latency is each
  socket's 4401 close minus the wall moment the shared clock reaches the token's expiry
  (from the clock's state in Redis).

Printed: p50 and max of each, in milliseconds. The site's keys are deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import redis.asyncio as aioredis
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_push import start_daemon, wait_healthy

from bonusd.access.auth import Role, TokenStore
from bonusd.cli.clock import settings_clock
from bonusd.infra.keys import Keys
from bonusd.infra.sharedclock import SharedClock
from bonusd.settings import Settings
from simulators.local.services import free_port


async def hold(url: str, token: str, n: int) -> list[websockets.ClientConnection]:
    sockets = []
    for _ in range(n):
        ws = await websockets.connect(url)
        await ws.send(f'{{"token": "{token}"}}')
        await ws.recv()  # the snapshot
        sockets.append(ws)
    return sockets


async def closed_at(ws: websockets.ClientConnection) -> float:
    """The wall time (Unix seconds) the server's close arrived; it must be a 4401."""
    try:
        async with asyncio.timeout(30):
            while True:
                await ws.recv()
    except websockets.ConnectionClosed:
        if ws.close_code != 4401:
            sys.exit(f"closed with {ws.close_code} {ws.close_reason!r}, not 4401")
        return time.time()


def wall_of(clock: SharedClock, instant: dt.datetime) -> float:
    """The wall time (Unix seconds) at which the shared clock shows `instant`."""
    s = clock.state
    return s.origin_wall + (instant.timestamp() * 1000.0 - s.origin_sim_ms) / 1000.0 / s.speed


def line(what: str, ms: list[float]) -> str:
    return f"{what}: p50 {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms (n={len(ms)})"


async def run(args: argparse.Namespace) -> None:
    site = f"bench-revoke-{uuid.uuid4().hex[:8]}"
    port = free_port()
    start = dt.datetime(2026, 10, 3, 17, 0, tzinfo=dt.UTC)
    settings = Settings(site=site, clock="shared", clock_start=start, clock_speed=args.speed)
    r = aioredis.Redis.from_url(settings.redis_url, decode_responses=True)
    keys = Keys(settings.key_prefix, site)
    clock = await settings_clock(settings, r)  # creates the shared clock the daemon joins
    assert isinstance(clock, SharedClock)
    tokens = TokenStore(r, keys)
    tmp = Path(tempfile.mkdtemp(prefix="bench-revoke-"))
    (tmp / "promotions").mkdir()
    log = tmp / "daemon.log"
    env = {
        **os.environ,
        "BONUSD_SITE": site,
        "BONUSD_HTTP_PORT": str(port),
        "BONUSD_PROMOTIONS": str(tmp / "promotions"),
        "BONUSD_MQTT_CLIENT_ID": f"bonusd-{site}",
        "BONUSD_CLOCK": "shared",
        "BONUSD_CLOCK_START": start.isoformat(),
        "BONUSD_CLOCK_SPEED": str(args.speed),
        "BONUSD_LOG_LEVEL": "WARNING",
        "BONUSD_REDIS_CHECK": "off",  # the development Redis (docs/deploy.md, "Redis")
    }
    daemon = start_daemon(env, log)
    url = f"ws://127.0.0.1:{port}/ws/crew"
    try:
        wait_healthy(port, daemon, log)
        revoked: list[float] = []
        for _ in range(args.tokens):
            issued = await tokens.issue(
                role=Role.CREW, name="bench", now=clock.now(), valid_for=dt.timedelta(days=1)
            )
            sockets = await hold(url, issued.token, args.sockets)
            waits = [asyncio.ensure_future(closed_at(ws)) for ws in sockets]
            t0 = time.time()
            await tokens.revoke(issued.principal.token_id, clock.now())
            revoked.append((max(await asyncio.gather(*waits)) - t0) * 1000)
        expired: list[float] = []
        held = []
        for _ in range(args.tokens):
            issued = await tokens.issue(
                role=Role.CREW,
                name="bench",
                now=clock.now(),
                valid_for=dt.timedelta(seconds=args.speed),
            )
            held.append((issued, await hold(url, issued.token, args.sockets)))
            ends = wall_of(clock, issued.principal.expires)
            for t in await asyncio.gather(*(closed_at(ws) for ws in held[-1][1])):
                expired.append((t - ends) * 1000)
        print(f"site {site}, shared clock x{args.speed:g}, {args.sockets} socket(s) per token")
        print(line("revoked -> last socket closed", revoked))
        print(line("expiry on the daemon's clock -> socket closed", expired))
    finally:
        daemon.terminate()
        daemon.wait(30)
        found = [k async for k in r.scan_iter(match=f"{settings.key_prefix}:{{{site}}}*")]
        if found:
            await r.delete(*found)
        await r.aclose()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=20)
    p.add_argument("--sockets", type=int, default=5)
    p.add_argument("--speed", type=float, default=60.0)
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
