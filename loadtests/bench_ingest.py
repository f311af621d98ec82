"""Ingest benchmark: bonusd against a bare aiomqtt consumer, on the same broker, same run.

    python loadtests/bench_ingest.py [--events 50000] [--rounds 3] [--rate 3300] [--seconds 10]
                                     [--devices 10] [--contracts v1,v2]
                                     [--promotion promotions/golden-horse-mega-points-chase.toml]

(a) drain throughput: N QoS 1 messages wait in the broker for an offline persistent
    session (published beforehand with `mosquitto_pub -l`, so the publisher is not what
    is measured); then (i) a bare aiomqtt consumer that only counts, and (ii) bonusd
    applying every event to Redis exactly once, each connect and drain, once per
    telemetry contract: v1 (each event an `id`) and v2 (each device's `epoch` and `seq`).
    Events/s of each, and their ratio to the bare consumer, medians over the rounds.
(b) latency: a paced publisher offers `--rate` events/s for `--seconds`; each event's
    publish instant travels in its `ts`; bonusd's commit instant minus it is the
    publish-to-committed latency (p50, p99), per contract.
Beside each bonusd drain: the daemon's CPU time per event (less sensitive than events/s to
a busy machine) and Redis's script time per event (INFO commandstats: every client's, so
exact only on a Redis of its own, `--redis-url`).
The events come from `--devices` EGMs (10: few devices per batch; 1000: each event of a
batch from another device, the de-duplication's worst case in v2).
The broker is a throwaway Mosquitto with bonusd's configuration; Redis is
BONUSD_REDIS_URL (default redis://127.0.0.1:6379/0), using fresh bench-only site keys.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import multiprocessing
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import msgspec
import paho.mqtt.client as mqtt
import redis
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from rich.console import Console
from rich.table import Table

from bonusd.floor.store import BatchResult
from bonusd.ingest.consumer import Received
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto

RECEIVE_MAXIMUM = 1000
console = Console()


def _session_client(port: int, client_id: str) -> aiomqtt.Client:
    """A persistent MQTT v5 session with the receive maximum bonusd uses."""
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 3600
    props.ReceiveMaximum = RECEIVE_MAXIMUM
    return aiomqtt.Client(
        "127.0.0.1",
        port,
        identifier=client_id,
        protocol=aiomqtt.ProtocolVersion.V5,
        clean_start=False,
        properties=props,
    )


async def _register(port: int, client_id: str, site: str) -> None:
    """Create the persistent session so the broker queues for it while it is away."""
    async with _session_client(port, client_id) as client:
        await client.subscribe(f"bonusd/{site}/+/+/events", qos=1)


def _identity(contract: str, site: str, i: int, devices: int) -> str:
    """Event i's identity: an id (v1), or its device's epoch and number (v2)."""
    if contract == "v2":
        return f'"epoch":"{site}","seq":{i // devices + 1}'
    return f'"id":"{site}-{i}"'


def _queue_events(
    port: int, site: str, n: int, workdir: Path, *, devices: int, contract: str
) -> None:
    """Publish n game events with mosquitto_pub -l, one process per device topic (at most
    ten at a time)."""
    ts = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    procs = []
    for d in range(devices):
        path = workdir / f"{site}-{d}.jsonl"
        with path.open("w") as f:
            for i in range(d, n, devices):
                f.write(
                    f'{{{_identity(contract, site, i, devices)},"type":"game","ts":"{ts}",'
                    f'"card":"{9000 + d}","wager_cents":{100 + i % 7},"win_cents":0,'
                    '"points":1}\n'
                )
        with path.open("rb") as stdin:
            procs.append(
                subprocess.Popen(
                    [
                        "mosquitto_pub",
                        "-p",
                        str(port),
                        "-q",
                        "1",
                        "-l",
                        "-t",
                        f"bonusd/{site}/egm/EGM-{d}/events",
                    ],
                    stdin=stdin,
                )
            )
        if len(procs) >= 10:
            _waited(procs.pop(0))
    for proc in procs:
        _waited(proc)


def _waited(proc: subprocess.Popen[bytes]) -> None:
    if proc.wait() != 0:
        raise SystemExit("mosquitto_pub failed; is mosquitto-clients installed?")


async def _bare(port: int, client_id: str, n: int) -> float:
    count = 0
    async with _session_client(port, client_id) as client:
        start = 0.0
        async for _ in client.messages:
            if count == 0:
                start = time.perf_counter()
            count += 1
            if count == n:
                return n / (time.perf_counter() - start)
    raise RuntimeError("unreachable")


def _settings(
    port: int, site: str, redis_url: str, promotion: Path | None, workdir: Path
) -> Settings:
    """bonusd's settings for one run; with `promotion`, that file runs for the site."""
    folder = workdir / f"promotions-{site}"
    folder.mkdir()
    if promotion is not None:
        text = re.sub(r'(?m)^site = "[^"]*"', f'site = "{site}"', promotion.read_text())
        (folder / promotion.name).write_text(text)
    return Settings(
        site=site,
        redis_url=redis_url,
        mqtt_url=f"mqtt://127.0.0.1:{port}",
        mqtt_client_id=f"bonusd-{site}",
        mqtt_receive_maximum=RECEIVE_MAXIMUM,
        promotions=folder,
    )


def _script_us(redis_url: str) -> float:
    """Redis's time in script calls so far (µs, INFO commandstats): all its clients'."""
    stats = redis.Redis.from_url(redis_url).info("commandstats")
    return sum(float(stats.get(f"cmdstat_{c}", {}).get("usec", 0)) for c in ("evalsha", "eval"))


@dataclass(frozen=True)
class Drained:
    rate: float  # events/s, first arrival to last commit
    applied: int
    cpu_us: float  # the daemon's CPU time per event, first arrival to last commit
    redis_us: float  # Redis's script time per event over the whole run


async def _bonusd(settings: Settings, n: int) -> Drained:
    done = asyncio.Event()
    first: list[float] = []
    redis_before = _script_us(settings.redis_url)

    def hook(batch: list[Received], _result: BatchResult, _at: float) -> None:
        if not first:
            first.extend((batch[0].arrived_mono, time.process_time()))
        if service.ingest.committed >= n:
            done.set()

    async with Service(settings, serve_http=False, on_commit=hook) as service:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(service.run(install_signal_handlers=False))
            await done.wait()
            elapsed = time.monotonic() - first[0]
            cpu = time.process_time() - first[1]
            service.stop()
        applied = (await service.store.stats()).get("applied", 0)
    redis_us = (_script_us(settings.redis_url) - redis_before) / n
    return Drained(n / elapsed, applied, cpu * 1e6 / n, redis_us)


LATENCY_DEVICES = 500


def _paced_publisher(port: int, site: str, rate: int, seconds: float, contract: str) -> None:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"pace-{site}")
    client.max_inflight_messages_set(2000)
    client.connect("127.0.0.1", port)
    client.loop_start()
    total = int(rate * seconds)
    start = time.time()
    for i in range(total):
        target = start + i / rate
        delay = target - time.time()
        if delay > 0.001:
            time.sleep(delay)
        now = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
        device = i % LATENCY_DEVICES
        body = (
            f'{{{_identity(contract, site, i, LATENCY_DEVICES)},"type":"game","ts":"{now}",'
            f'"card":"{9000 + device}","wager_cents":100,"win_cents":0,"points":1}}'
        )
        client.publish(f"bonusd/{site}/egm/EGM-{device}/events", body, qos=1)
    time.sleep(1)
    client.loop_stop()
    client.disconnect()


async def _latency(
    settings: Settings, port: int, rate: int, seconds: float, contract: str
) -> list[float]:
    n = int(rate * seconds)
    # flat lists of bytes and floats: objects the garbage collector never has to walk, so
    # the measurement does not add collector pauses of its own to what it measures
    payloads: list[bytes] = []
    committed_at: list[float] = []
    done = asyncio.Event()

    def hook(batch: list[Received], _result: BatchResult, _at: float) -> None:
        now = time.time()
        for msg in batch:
            payloads.append(msg.payload)
            committed_at.append(now)
        if service.ingest.committed >= n:
            done.set()

    async with Service(settings, serve_http=False, on_commit=hook) as service:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(service.run(install_signal_handlers=False))
            while not service.health.mqtt_connected:
                await asyncio.sleep(0.01)
            # a promotion's missed actions (boards, bins) run at start: measure after them
            await service.scheduler.caught_up.wait()
            proc = multiprocessing.Process(
                target=_paced_publisher, args=(port, settings.site, rate, seconds, contract)
            )
            proc.start()
            await asyncio.wait_for(done.wait(), timeout=seconds * 4 + 30)
            service.stop()
        proc.join()
    decoder = msgspec.json.Decoder(dict[str, object])
    return [
        committed - dt.datetime.fromisoformat(str(decoder.decode(body)["ts"])).timestamp()
        for body, committed in zip(payloads, committed_at, strict=True)
    ]


def _cleanup(redis_url: str, sites: list[str]) -> None:
    r = redis.Redis.from_url(redis_url)
    for site in sites:
        keys = list(r.scan_iter(match=f"bonusd:{{{site}}}:*", count=5000))
        for i in range(0, len(keys), 5000):
            r.delete(*keys[i : i + 5000])


def _drain(broker: LocalMosquitto, args: argparse.Namespace, mode: str, tmp: Path) -> float:
    """One drain of `args.events` queued events: by the bare consumer, or by bonusd with
    the events in contract `mode` (v1, v2). Returns events/s; bonusd's CPU and Redis
    time per event go to `args.costs`."""
    site = f"bench{uuid.uuid4().hex[:8]}"
    args.sites.append(site)
    client_id = f"{mode}-{site}" if mode == "bare" else f"bonusd-{site}"
    asyncio.run(_register(broker.port, client_id, site))
    contract = "v1" if mode == "bare" else mode
    _queue_events(broker.port, site, args.events, tmp, devices=args.devices, contract=contract)
    if mode == "bare":
        return asyncio.run(_bare(broker.port, client_id, args.events))
    settings = _settings(broker.port, site, args.redis_url, args.promotion, tmp)
    drained = asyncio.run(_bonusd(settings, args.events))
    if drained.applied != args.events:
        raise SystemExit(f"{mode}: exactly-once violated: {drained.applied} != {args.events}")
    args.costs.setdefault(mode, []).append((drained.cpu_us, drained.redis_us))
    return drained.rate


def _report(
    args: argparse.Namespace, rates: dict[str, list[float]], lat: dict[str, list[float]]
) -> None:
    bare = statistics.median(rates["bare"])
    running = f", running {args.promotion.name}" if args.promotion else ""
    table = Table(
        title=f"ingest benchmark: {args.events:,} events from {args.devices:,} devices "
        f"x {args.rounds} rounds{running}"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("bare aiomqtt consumer, counting (median events/s)", f"{bare:,.0f}")
    for contract in args.contracts:
        ours = statistics.median(rates[contract])
        table.add_row(
            f"bonusd {contract}, applied to Redis exactly once (median events/s)", f"{ours:,.0f}"
        )
        table.add_row(f"ratio bonusd {contract} / bare", f"{ours / bare:.2f}")
        cpu = statistics.median(c for c, _ in args.costs[contract])
        table.add_row(f"bonusd {contract}: daemon CPU per event (median µs)", f"{cpu:.1f}")
        spent = statistics.median(r for _, r in args.costs[contract])
        table.add_row(f"bonusd {contract}: Redis script time per event (median µs)", f"{spent:.1f}")
    for contract, samples in lat.items():
        q = statistics.quantiles(samples, n=100)
        offered = f"{args.rate:,}/s offered"
        table.add_row(f"{contract} latency p50 at {offered} (ms)", f"{q[49] * 1000:.1f}")
        table.add_row(f"{contract} latency p99 at {offered} (ms)", f"{q[98] * 1000:.1f}")
        table.add_row(f"{contract} latency samples", f"{len(samples):,}")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=3300)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--devices", type=int, default=10)
    parser.add_argument("--contracts", default="v1,v2", help="v1, v2 or v1,v2")
    parser.add_argument("--redis-url", default=Settings().redis_url)
    parser.add_argument(
        "--promotion",
        type=Path,
        help="a promotion file to run during bonusd's rounds (moved to the bench site); "
        "the events are stamped now, so they count for the draws whose windows are open",
    )
    args = parser.parse_args()
    args.contracts = [c for c in args.contracts.split(",") if c]
    if not args.contracts or set(args.contracts) - {"v1", "v2"}:
        raise SystemExit("--contracts: v1, v2 or v1,v2")
    args.sites, args.costs = [], {}
    rates: dict[str, list[float]] = {mode: [] for mode in ("bare", *args.contracts)}
    lat: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, LocalMosquitto(Path(tmp) / "broker") as broker:
        try:
            for r in range(args.rounds):
                # the contracts take turns going first, so neither always runs warmer
                contracts = args.contracts if r % 2 == 0 else args.contracts[::-1]
                for mode in ("bare", *contracts):
                    rate = _drain(broker, args, mode, Path(tmp))
                    rates[mode].append(rate)
                    console.print(f"round {r + 1} {mode:6s} {rate:9,.0f} events/s")
            for contract in args.contracts:
                site = f"bench{uuid.uuid4().hex[:8]}"
                args.sites.append(site)
                settings = _settings(broker.port, site, args.redis_url, args.promotion, Path(tmp))
                lat[contract] = asyncio.run(
                    _latency(settings, broker.port, args.rate, args.seconds, contract)
                )
        finally:
            _cleanup(args.redis_url, args.sites)
    _report(args, rates, lat)


if __name__ == "__main__":
    sys.exit(main())
