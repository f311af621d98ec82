"""Scaling benchmark: 1, 2 and 3 daemons of one site in one MQTT v5 shared-subscription
group against one Redis, beside a bare consumer group measured in the same run.

    python loadtests/bench_scale.py [--events 20000] [--daemons 1,2,3] [--rate 400]
                                    [--seconds 10] [--redis-cluster]

For each group size k, first the bare baseline, then bonusd, each in k processes:
(a) drain throughput: k persistent sessions join the group `$share/<group>/...`, go
    offline, and N QoS 1 `game` events are queued (`mosquitto_pub -l`, as in
    bench_ingest.py); the broker deals them out round-robin, N/k to each session. Then the
    k consumers connect at once and drain; events/s = N / (last commit - first message).
    bare: an aiomqtt consumer that does one Redis INCR per message, awaited, before the
    next (its ack goes when the message arrives). bonusd: the real `Service` (no HTTP),
    applying each event exactly once and acknowledging after the commit; Redis must show
    exactly N applied.
(b) latency: the k consumers connected, a paced publisher offers `--rate` events/s for
    `--seconds`; each event carries its publish instant in `ts`; the commit instant (bare:
    after its INCR) minus it is the publish-to-committed latency (p50, p99).
(c) cost: the CPU (user + sys) of the consumer processes and of Redis, and the growth of
    Redis's memory, per event drained in (a).
The broker is a throwaway Mosquitto with bonusd's configuration. Redis is a throwaway
one (AOF, fsync every second, as deployed), so its CPU and memory per event drained are
the run's own; `--redis-url` uses an existing Redis instead (fresh site keys, deleted
afterwards), `--redis-cluster` a throwaway local 3-master Redis Cluster
(simulators.local.cluster).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import multiprocessing
import multiprocessing.synchronize
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any, cast

import msgspec
import redis
from bench_ingest import _paced_publisher, _queue_events, _session_client, _settings
from rich.console import Console
from rich.table import Table

from bonusd.floor.store import BatchResult
from bonusd.infra.redisclient import redis_client
from bonusd.ingest.consumer import Received
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.cluster import LocalRedisCluster
from simulators.local.services import LocalMosquitto, LocalRedis

console = Console(width=140)
_ctx = multiprocessing.get_context("fork")
_ts = msgspec.json.Decoder(dict[str, Any])


@dataclass(frozen=True)
class Run:
    """What one consumer process reports: wall instants and per-event latencies (s)."""

    first: float
    last: float
    count: int
    latencies: list[float]
    cpu: float  # CPU seconds (user + sys) the process used from the start to the end


@dataclass(frozen=True)
class Figures:
    rate: float  # events/s, drain
    p50_ms: float
    p99_ms: float
    split: list[int]  # events each consumer drained
    redis_us: float  # Redis CPU (user + sys, all nodes) per event drained, microseconds
    redis_bytes: float  # Redis memory grown per event drained (dedup ids, floor, totals)
    consumer_us: float  # CPU of the consumer processes per event drained, microseconds


def _latency_of(payload: bytes, now: float) -> float:
    """Commit instant `now` minus the publish instant the event carries in `ts`."""
    return now - dt.datetime.fromisoformat(str(_ts.decode(payload)["ts"])).timestamp()


# -- one consumer process -----------------------------------------------------------------


@dataclass(frozen=True)
class Consumer:
    """One member of the group: its MQTT session and the settings it runs with."""

    client_id: str
    settings: Settings

    @property
    def site(self) -> str:
        return self.settings.site

    @property
    def port(self) -> int:
        return int(self.settings.mqtt_url.rsplit(":", 1)[1])

    @property
    def group(self) -> str:
        return self.settings.mqtt_shared_group


@dataclass(frozen=True)
class Shared:
    """What the group's processes share (inherited through fork, never pickled)."""

    total: Any  # multiprocessing.Value: events consumed by the whole group
    n: int  # the group stops at n
    start: multiprocessing.synchronize.Barrier  # the consumers (and the parent) start together
    out: Queue[Run]
    timed: bool  # keep each event's latency


async def _bare(me: Consumer, sh: Shared) -> Run:
    """A bare consumer: one awaited Redis INCR per message of the group's share."""
    r = redis_client(me.settings)
    key = f"{me.settings.key_prefix}:{{{me.site}}}:bare"
    first, last, count, lat = 0.0, 0.0, 0, []

    async def consume(client: Any) -> None:
        nonlocal first, last, count
        async for msg in client.messages:
            if count == 0:
                first = time.time()
            await r.incr(key)
            last = time.time()
            count += 1
            if sh.timed:
                lat.append(_latency_of(bytes(msg.payload), last))
            with sh.total.get_lock():
                sh.total.value += 1

    await asyncio.to_thread(sh.start.wait)  # connect together: the drain starts on connect
    cpu = time.process_time()
    async with _session_client(me.port, me.client_id) as client:
        await client.subscribe(f"$share/{me.group}/bonusd/{me.site}/+/+/events", qos=1)
        task = asyncio.create_task(consume(client))
        async with asyncio.timeout(300):
            while sh.total.value < sh.n and not task.done():
                await asyncio.sleep(0.02)
        task.cancel()
    cpu = time.process_time() - cpu
    await r.aclose()
    return Run(first, last, count, lat, cpu)


async def _daemon(me: Consumer, sh: Shared) -> Run:
    """bonusd's real ingest in this process; stops once the group has committed `n`."""
    first: list[float] = []
    last: list[float] = [0.0]
    lat: list[float] = []

    def hook(batch: list[Received], _result: BatchResult, _at: float) -> None:
        now = time.time()
        if not first:
            first.append(now - (time.monotonic() - batch[0].arrived_mono))
        last[0] = now
        if sh.timed:
            lat.extend(_latency_of(m.payload, now) for m in batch)
        with sh.total.get_lock():
            sh.total.value += len(batch)

    async def until_done() -> None:
        while sh.total.value < sh.n:
            await asyncio.sleep(0.02)
        service.stop()

    async with Service(me.settings, serve_http=False, on_commit=hook) as service:
        await asyncio.to_thread(sh.start.wait)
        cpu = time.process_time()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(service.run(install_signal_handlers=False))
            tg.create_task(until_done())
        cpu = time.process_time() - cpu
    return Run(first[0] if first else 0.0, last[0], service.ingest.committed, lat, cpu)


def _child(mode: str, me: Consumer, sh: Shared) -> None:
    sh.out.put(asyncio.run(_bare(me, sh) if mode == "bare" else _daemon(me, sh)))


# -- one measurement ----------------------------------------------------------------------


def _group(
    mode: str, consumers: list[Consumer], n: int, *, timed: bool, publish: Any = None
) -> list[Run]:
    """The consumers in their own processes, started together; their reports once the
    group has consumed `n` events (`publish`, if given, runs once they are subscribed)."""
    sh = Shared(_ctx.Value("q", 0), n, _ctx.Barrier(len(consumers) + 1), _ctx.Queue(), timed)
    procs = [_ctx.Process(target=_child, args=(mode, c, sh)) for c in consumers]
    for p in procs:
        p.start()
    sh.start.wait(timeout=60)
    if publish is not None:
        time.sleep(2.0)  # every consumer connected and subscribed
        publish()
    runs = [sh.out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return runs


async def _register(me: Consumer) -> None:
    async with _session_client(me.port, me.client_id) as client:
        await client.subscribe(f"$share/{me.group}/bonusd/{me.site}/+/+/events", qos=1)


@dataclass
class Bench:
    """One run's options, broker, folder and the sites it wrote (to delete at the end)."""

    args: argparse.Namespace
    broker: LocalMosquitto
    tmp: Path
    sites: list[str]
    nodes: list[str]  # redis:// URL of every Redis node (one, or each cluster master)

    def redis_usage(self) -> tuple[float, int]:
        """CPU seconds (user + sys) the Redis nodes have used since they started, and the
        memory they use now (bytes)."""
        cpu, memory = 0.0, 0
        for url in self.nodes:
            with redis.Redis.from_url(url) as r:
                info = cast(dict[str, Any], r.info())
                cpu += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
                memory += int(info["used_memory"])
        return cpu, memory

    def consumers(self, mode: str, k: int) -> list[Consumer]:
        """k consumers of a fresh site, in one shared-subscription group."""
        site = f"scale{uuid.uuid4().hex[:8]}"
        self.sites.append(site)
        out = []
        for i in range(k):
            cid = f"{mode}-{site}-{i}"
            folder = self.tmp / cid
            folder.mkdir()
            base = _settings(self.broker.port, site, self.args.redis_url, None, folder)
            settings = base.model_copy(
                update={
                    "mqtt_client_id": cid,
                    "mqtt_shared_group": f"g{site}",
                    "redis_cluster": self.args.redis_cluster,
                }
            )
            out.append(Consumer(cid, settings))
        return out

    def measure(self, mode: str, k: int) -> Figures:
        n = self.args.events
        # (a) drain: sessions registered, events queued, then the k consumers at once
        group = self.consumers(mode, k)
        for c in group:
            asyncio.run(_register(c))
        _queue_events(self.broker.port, group[0].site, n, self.tmp)
        cpu, memory = self.redis_usage()
        runs = _group(mode, group, n, timed=False)
        cpu_after, memory_after = self.redis_usage()
        redis_us, redis_bytes = (cpu_after - cpu) / n * 1e6, (memory_after - memory) / n
        rate = n / (max(r.last for r in runs) - min(r.first for r in runs if r.count))
        split = [r.count for r in runs]
        consumer_us = sum(r.cpu for r in runs) / n * 1e6
        if sum(split) < n:
            raise SystemExit(f"{mode} x{k}: only {sum(split)} of {n} events consumed")
        if mode == "bonusd" and (applied := self.applied(group[0].site)) != n:
            raise SystemExit(f"exactly-once violated with {k} daemons: {applied} != {n}")
        # (b) latency: the k consumers connected, a paced publisher
        group = self.consumers(mode, k)
        m = int(self.args.rate * self.args.seconds)

        def publish() -> None:
            _paced_publisher(self.broker.port, group[0].site, self.args.rate, self.args.seconds)

        runs = _group(mode, group, m, timed=True, publish=publish)
        q = statistics.quantiles([x for r in runs for x in r.latencies], n=100)
        return Figures(rate, q[49] * 1000, q[98] * 1000, split, redis_us, redis_bytes, consumer_us)

    def _client(self) -> Any:
        return redis_client(
            Settings(redis_url=self.args.redis_url, redis_cluster=self.args.redis_cluster)
        )

    def applied(self, site: str) -> int:
        async def read() -> int:
            r = self._client()
            try:
                return int(await r.hget(f"bonusd:{{{site}}}:stats", "applied") or 0)
            finally:
                await r.aclose()

        return asyncio.run(read())

    def cleanup(self) -> int:
        async def clean() -> int:
            r, gone = self._client(), 0
            try:
                for site in self.sites:
                    match = f"bonusd:{{{site}}}:*"
                    batch = [k async for k in r.scan_iter(match=match, count=5000)]
                    for i in range(0, len(batch), 5000):
                        gone += await r.delete(*batch[i : i + 5000])
            finally:
                await r.aclose()
            return gone

        return asyncio.run(clean())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--daemons", default="1,2,3", help="group sizes, comma-separated")
    parser.add_argument("--rate", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=10.0)
    redis_mode = parser.add_mutually_exclusive_group()
    redis_mode.add_argument(
        "--redis-url", help="an existing Redis (default: a throwaway one, AOF everysec)"
    )
    redis_mode.add_argument(
        "--redis-cluster", action="store_true", help="a throwaway local 3-master Redis Cluster"
    )
    args = parser.parse_args()
    sizes = [int(x) for x in args.daemons.split(",")]
    results: dict[tuple[str, int], Figures] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        broker = stack.enter_context(LocalMosquitto(tmp / "broker"))
        if args.redis_cluster:
            cluster = stack.enter_context(LocalRedisCluster(tmp / "cluster"))
            args.redis_url = cluster.url
            nodes = [f"redis://127.0.0.1:{p}/0" for p in cluster.ports]
        else:
            if args.redis_url is None:
                args.redis_url = stack.enter_context(LocalRedis(tmp / "redis")).url
            nodes = [args.redis_url]
        bench = Bench(args, broker, tmp, [], nodes)
        try:
            for k in sizes:
                for mode in ("bare", "bonusd"):
                    f = bench.measure(mode, k)
                    results[mode, k] = f
                    console.print(
                        f"{mode:6s} x{k}: {f.rate:8,.0f} events/s (split {f.split}), "
                        f"p50 {f.p50_ms:.1f} ms, p99 {f.p99_ms:.1f} ms, "
                        f"per event: {f.consumer_us:.0f} µs CPU in the consumers, "
                        f"{f.redis_us:.1f} µs CPU and {f.redis_bytes:,.0f} bytes in Redis"
                    )
        finally:
            if not args.redis_cluster:
                bench.cleanup()
    redis_kind = "a local 3-master Redis Cluster" if args.redis_cluster else "one Redis"
    table = Table(
        title=f"scaling: {args.events:,} events drained; {args.rate:,}/s offered for "
        f"{args.seconds:g} s; {redis_kind}; {multiprocessing.cpu_count()} CPU(s)"
    )
    for col in ("group", "bare ev/s", "bonusd ev/s", "bonusd/bare", f"bonusd vs x{sizes[0]}"):
        table.add_column(col, justify="right")
    for col in ("bare p50 / p99 ms", "bonusd p50 / p99 ms"):
        table.add_column(col, justify="right")
    for col in ("consumer CPU µs/ev bare / bonusd", "Redis CPU µs/ev bare / bonusd"):
        table.add_column(col, justify="right")
    table.add_column("Redis bytes/ev bonusd", justify="right")
    one = results["bonusd", sizes[0]].rate
    for k in sizes:
        bare, ours = results["bare", k], results["bonusd", k]
        table.add_row(
            f"x{k}",
            f"{bare.rate:,.0f}",
            f"{ours.rate:,.0f}",
            f"{ours.rate / bare.rate:.2f}",
            f"{ours.rate / one:.2f}",
            f"{bare.p50_ms:.1f} / {bare.p99_ms:.1f}",
            f"{ours.p50_ms:.1f} / {ours.p99_ms:.1f}",
            f"{bare.consumer_us:.0f} / {ours.consumer_us:.0f}",
            f"{bare.redis_us:.1f} / {ours.redis_us:.1f}",
            f"{ours.redis_bytes:,.0f}",
        )
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
