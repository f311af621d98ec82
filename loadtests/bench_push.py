"""Push benchmark: 2,000 signage websockets on one daemon, from a winner committed to the
last screen showing it, beside a bare `websockets` broadcast of the same bytes to the
same number of clients, measured in the same run.

    python loadtests/bench_push.py [--clients 2000] [--procs 4] [--announcements 30]

Set-up (not timed): a bench-only site in Redis running the Golden Horse promotion, 2,000
members, the halfway draw's entry pool frozen over them; `bonusd run` as its own process
(clock at 12:00 on the draw day); a bare `websockets` server as another process; client
processes (`--procs`), each holding its share of `--clients` connections to the daemon's
`/ws/signage` (area main) and as many to the bare server; round 1 drawn once (warm-up).

Timed, per announcement: the bench's own draw runner (another daemon, as far as bonusd is
concerned: it shares only Redis) records a no-show, which announces the redraw's winner
in the same commit. t0 is when that commit has returned; each client notes when the
delta carrying the new winner arrives (CLOCK_MONOTONIC, shared by every process on
Linux); the latency is the last client's arrival minus t0. Then the same message text,
as the daemon sent it, goes to the bare server, which notes t0 just before
`websockets.broadcast` and the same clients note its arrival. p50 and p99 of each, and
their ratio. Every client must receive every announcement.

Redis is BONUSD_REDIS_URL (default redis://127.0.0.1:6379/0), MQTT BONUSD_MQTT_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import multiprocessing
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import redis.asyncio as aioredis
import websockets
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from push_clients import Share, bare_process, client_process, monotonic, winners

from bonusd.access.auth import Role, TokenStore
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.book import SCHEDULER
from bonusd.draws.runner import DrawRunner
from bonusd.draws.seedkey import load_seal
from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.store import PromotionStore
from bonusd.registry.records import Member, Tier
from bonusd.settings import Settings
from simulators.local.services import free_port

ROOT = Path(__file__).resolve().parent.parent
GH = "golden-horse-mega-points-chase"
DAY = dt.date(2026, 11, 7)
SAST = dt.timezone(dt.timedelta(hours=2))
console = Console()


def raise_fd_limit(need: int) -> tuple[int, int]:
    """Lift the soft open-files limit to the hard one (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        sys.exit(f"need {need} open files, the limit is {soft} (hard {hard}): raise `ulimit -n`")
    return soft, hard


# -- the run ------------------------------------------------------------------------------
async def setup_site(r: aioredis.Redis, keys: Keys, members: int) -> list[str]:
    cards = [f"6001{n:06d}" for n in range(members)]
    store = FloorStore(
        r, keys, dedup_ttl_s=3600, deadletter_maxlen=100, deadletter_payload_bytes=64
    )
    await store.import_members(
        [Member(card=c, name=f"Name{n} Surname{n}", tier=Tier.Q) for n, c in enumerate(cards)]
    )
    counts = {Tombola.POOLED: {c: 1 + n % 5 for n, c in enumerate(cards)}}
    closed = dt.datetime.combine(DAY, dt.time(19, 0), SAST)
    pool = EntryPool.freeze(promotion_id=GH, draw_id="halfway", closed_at=closed, counts=counts)
    await r.set(f"{keys.base}pool:{GH}:halfway", pool.canonical())
    return cards


def start_daemon(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bonusd", "run"], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def wait_healthy(port: int, daemon: subprocess.Popen[bytes], log: Path) -> None:
    deadline = monotonic() + 60
    while monotonic() < deadline:
        if daemon.poll() is not None:
            sys.exit(f"the daemon exited: see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    sys.exit(f"the daemon did not answer: see {log}")


class Results:
    """What the client processes report: (source, claim) -> [(last arrival, clients)]."""

    def __init__(self, out: Any, procs: int) -> None:
        self.out, self.procs = out, procs
        self.got: dict[tuple[str, int], list[tuple[float, int]]] = {}

    async def wait(self, source: str, claim: int) -> tuple[float, int]:
        """The last arrival of `claim` from `source` over every client process, and how
        many clients got it."""
        deadline = monotonic() + 60
        while len(self.got.get((source, claim), ())) < self.procs:
            try:
                s, c, last, n = self.out.get_nowait()
            except queue.Empty:
                if monotonic() > deadline:
                    sys.exit(f"{source} announcement {claim}: not every client got it")
                await asyncio.sleep(0.002)
                continue
            self.got.setdefault((s, c), []).append((last, n))
        rows = self.got[(source, claim)]
        return max(t for t, _ in rows), sum(n for _, n in rows)


class PushBench:
    """One run of the benchmark: its site and promotion, the daemon, the bare server, the
    client processes, and what they report."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        settings = Settings()
        self.site = f"bench-push-{uuid.uuid4().hex[:8]}"
        self.keys = Keys("bonusd", self.site)
        self.r = aioredis.Redis.from_url(settings.redis_url, decode_responses=True)
        tmp = Path(tempfile.mkdtemp(prefix="bench-push-"))
        self.folder = tmp / "promotions"
        self.folder.mkdir()
        text = (ROOT / "promotions" / f"{GH}.toml").read_text()
        (self.folder / f"{GH}.toml").write_text(
            text.replace('site = "golden-horse"', f'site = "{self.site}"')
        )
        self.port, self.bare_port = free_port(), free_port()
        self.ctx = multiprocessing.get_context("spawn")
        self.out, self.ready = self.ctx.Queue(), self.ctx.Queue()
        self.started, self.stop = self.ctx.Queue(), self.ctx.Event()
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.daemon: subprocess.Popen[bytes] | None = None
        self.log = tmp / "daemon.log"
        self.compression = "deflate" if args.deflate else None
        self.results = Results(self.out, args.procs)  # one report per client process
        self.lat: dict[str, list[float]] = {"daemon": [], "bare": []}

    def daemon_env(self) -> dict[str, str]:
        """The environment of `bonusd run` on the bench's site (clock at 12:00 on the day)."""
        return {
            **os.environ,
            "BONUSD_SITE": self.site,
            "BONUSD_HTTP_PORT": str(self.port),
            "BONUSD_PROMOTIONS": str(self.folder),
            "BONUSD_MQTT_CLIENT_ID": f"bonusd-{self.site}",
            "BONUSD_CLOCK_START": dt.datetime.combine(DAY, dt.time(12, 0), SAST).isoformat(),
            "BONUSD_LOG_LEVEL": "WARNING",
            "BONUSD_PUSH_DEFLATE": "1" if self.args.deflate else "0",
            "BONUSD_REDIS_CHECK": "off",  # a throwaway Redis, no persistence (docs/deploy.md)
        }

    async def start_servers(self) -> str:
        """Set up the site, start the daemon and the bare server; returns the signage
        websocket URL (with its token) once the daemon answers."""
        await setup_site(self.r, self.keys, self.args.members)
        token = await TokenStore(self.r, self.keys).issue(
            role=Role.SIGNAGE,
            name="bench screens",
            area="main",
            now=dt.datetime.now(dt.UTC),
            valid_for=dt.timedelta(days=1),
        )
        self.daemon = start_daemon(self.daemon_env(), self.log)
        bare = self.ctx.Process(
            target=bare_process, args=(self.bare_port, self.started, self.compression), daemon=True
        )
        bare.start()
        self.procs.append(bare)
        self.started.get(timeout=30)
        wait_healthy(self.port, self.daemon, self.log)
        return f"ws://127.0.0.1:{self.port}/ws/signage?token={token.token}"

    def connect_clients(self, daemon_url: str) -> int:
        """Start the client processes, each with its share of the connections to both
        servers; returns how many once every one holds its connections open."""
        args = self.args
        bare_url = f"ws://127.0.0.1:{self.bare_port}/"
        shares = [
            args.clients // args.procs + (i < args.clients % args.procs) for i in range(args.procs)
        ]
        t_connect = monotonic()
        for share in shares:
            them = Share(daemon_url, bare_url, share, self.compression)
            p = self.ctx.Process(
                target=client_process, args=(them, self.out, self.ready, self.stop), daemon=True
            )
            p.start()
            self.procs.append(p)
        for _ in shares:
            self.ready.get(timeout=300)
        console.print(
            f"{args.clients} daemon + {args.clients} bare connections in {len(shares)} "
            f"client process(es), open after {monotonic() - t_connect:.1f} s"
        )
        return len(shares)

    async def measure(self, daemon_url: str, procs: int) -> None:
        """Draw the warm-up round, then time every announcement through the daemon and
        through the bare server; report."""
        capture = await websockets.connect(daemon_url, compression=None, max_size=None)
        control = await websockets.connect(f"ws://127.0.0.1:{self.bare_port}/control")
        texts: dict[int, str] = {}
        capturing = asyncio.create_task(capture_texts(capture, texts))
        clock = ManualClock(dt.datetime.combine(DAY, dt.time(19, 0), SAST))
        promotion = load_promotion(self.folder / f"{GH}.toml")
        desk = DrawRunner(
            redis=self.r,
            keys=self.keys,
            audit=AuditStore(self.r, self.keys),
            promotions=PromotionStore(self.r, self.keys, [promotion]),
            clock=clock,
            seal=load_seal(Settings().seed_key_file),  # the daemon's key (its default file)
        )
        await desk.run_round(GH, "halfway", 1)  # warm-up: five winners at once
        for claim in range(1, 6):
            await self.results.wait("daemon", claim)
        sizes = []
        for _ in range(self.args.announcements):
            claim = await self.announce(desk, clock)
            while claim not in texts:
                await asyncio.sleep(0.001)
            sizes.append(len(texts[claim].encode()))
            await self.broadcast(control, texts[claim], claim)
        capturing.cancel()
        await capture.close()
        await control.close()
        report(self.args, self.lat, sizes, procs)
        deflate_cost(texts[max(texts)], self.args.clients)

    async def announce(self, desk: DrawRunner, clock: ManualClock) -> int:
        """Record a no-show, which announces the redraw's winner: the latency to the last
        client goes to `self.lat["daemon"]`; returns the new claim."""
        book = await desk.book(GH, "halfway")
        oldest = min(c for c, claim in book.claims.items() if str(claim.state) == "announced")
        clock.advance(91)
        await desk.act(GH, "halfway", oldest, "no_show", SCHEDULER)
        t0 = monotonic()
        claim = max((await desk.book(GH, "halfway")).claims)
        last, n = await self.results.wait("daemon", claim)
        clients = self.args.clients
        assert n == clients, f"daemon: {n} of {clients} clients got claim {claim}"
        self.lat["daemon"].append(last - t0)
        return claim

    async def broadcast(self, control: websockets.ClientConnection, text: str, claim: int) -> None:
        """The same message through the bare server: its latency goes to `self.lat["bare"]`."""
        await control.send(text)
        t0_bare = float(await control.recv())
        last, n = await self.results.wait("bare", claim)
        clients = self.args.clients
        assert n == clients, f"bare: {n} of {clients} clients got claim {claim}"
        self.lat["bare"].append(last - t0_bare)

    async def close(self) -> None:
        """Stop every process and delete the site's keys."""
        self.stop.set()
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        if self.daemon is not None:
            self.daemon.terminate()
            self.daemon.wait(20)
        found = [k async for k in self.r.scan_iter(match=f"{self.keys.base}*", count=1000)]
        if found:
            await self.r.delete(*found)
        await self.r.aclose()


async def capture_texts(capture: websockets.ClientConnection, texts: dict[int, str]) -> None:
    """Keep the text of every signage message announcing a winner, by claim."""
    async for message in capture:
        assert isinstance(message, str)
        for claim in winners(message):
            texts[claim] = message


async def run(args: argparse.Namespace) -> None:
    soft, hard = raise_fd_limit(4 * args.clients + 200)
    bench = PushBench(args)
    try:
        console.print(f"ulimit -n: soft {soft}, hard {hard}; {os.cpu_count()} CPUs")
        daemon_url = await bench.start_servers()
        procs = bench.connect_clients(daemon_url)
        await asyncio.sleep(args.settle)  # screens connect long before a draw
        await bench.measure(daemon_url, procs)
    finally:
        await bench.close()


def report(
    args: argparse.Namespace, lat: dict[str, list[float]], sizes: list[int], procs: int
) -> None:
    def pct(xs: list[float], q: float) -> float:
        return float(np.percentile(np.array(xs) * 1000, q))

    table = Table(
        title=f"winner committed → last of {args.clients} clients ({procs} client processes)"
    )
    table.add_column("figure")
    table.add_column("bonusd (ms)", justify="right")
    table.add_column("bare broadcast (ms)", justify="right")
    table.add_column("ratio", justify="right")
    for name, q in (("p50", 50), ("p99", 99), ("max", 100)):
        d, b = pct(lat["daemon"], q), pct(lat["bare"], q)
        table.add_row(name, f"{d:.1f}", f"{b:.1f}", f"{d / b:.2f}")
    console.print(table)
    if args.verbose:
        for source, xs in lat.items():
            console.print(source, " ".join(f"{x * 1000:.0f}" for x in xs))
    console.print(
        f"{len(lat['daemon'])} announcements; message {statistics.median(sizes):,.0f} bytes "
        f"(median); goal: p99 < 500 ms and within 3x of the bare broadcast"
    )


def deflate_cost(text: str, clients: int) -> None:
    """What per-message compression would cost the daemon for one message: each client has
    its own deflate context (the settings uvicorn would negotiate), so it is compressed
    once per client."""
    data = text.encode()
    t0 = time.perf_counter()
    for _ in range(clients):
        z = zlib.compressobj(wbits=-12, memLevel=5)
        size = len(z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH))
    took = time.perf_counter() - t0
    console.print(
        f"per-message deflate, if it were on: {len(data):,} → {size:,} bytes per message, "
        f"{took * 1000:.0f} ms of daemon CPU to compress it for {clients} clients"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--procs", type=int, default=4, help="client processes")
    parser.add_argument("--announcements", type=int, default=30)
    parser.add_argument("--members", type=int, default=2000)
    parser.add_argument(
        "--settle", type=float, default=10, help="seconds between connecting and measuring"
    )
    parser.add_argument("--verbose", action="store_true", help="every latency, in order")
    parser.add_argument(
        "--deflate", action="store_true", help="per-message compression on, on both servers"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
