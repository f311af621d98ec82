"""The floor-row change log (`lua/rowlog.lua`) at a floor's peak: how many logged calls per
second the ingest makes, and how large the log is, so that its horizon can be sized.

    .venv/bin/python loadtests/bench_rowlog.py [--devices 10000] [--rate 1363] [--seconds 30]

The daemon runs in this process on a throwaway site (Redis at BONUSD_REDIS_URL, a
Mosquitto of its own); a paced publisher (its own process) cards a player in at each of
`--devices` EGMs, then sends `game` events from them in turn at `--rate` events/s for
`--seconds` (1,363/s: a 10,000-EGM floor's Saturday peak, docs/scaling.md). Every event
changes its card's `floor-row` line, so each ingest batch is one logged call.

Printed: events committed, logged calls (`floor-row-seq`) and calls/s, events per call,
`floor-row` lines, the log's cards (ZCARD) and bytes (MEMORY USAGE, all samples) beside
`floor-row`'s own, and how many seconds of this peak a horizon of N calls covers, for the
horizon the scripts use (`FLOOR_LOG_KEEP`) and the former 100,000; then the site's keys by
family (`bonusd.infra.keys.family`): how many, their bytes (MEMORY USAGE of every key) and
bytes per key. Last, what a RAPS floor mirror that fell behind the log pays: one full read
of the floor (`FloorMirror.sync` with nothing held, the median of 5), beside a bare
`HGETALL` of `floor-row` (the same bytes, unchecked). Every key is deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import multiprocessing
import re
import statistics
import tempfile
import time
import uuid
from importlib import resources
from pathlib import Path

import paho.mqtt.client as mqtt
import redis
import redis.asyncio as aioredis
from paho.mqtt.enums import CallbackAPIVersion

from bonusd.infra.keys import Keys, family
from bonusd.raps.mirror import FloorMirror
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto

FORMER_KEEP = 100_000


def _publisher(port: int, site: str, devices: int, rate: int, seconds: float) -> None:
    """Card in at every EGM, then `rate` game events/s from them in turn."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"pace-{site}")
    client.max_inflight_messages_set(2000)
    client.connect("127.0.0.1", port)
    client.loop_start()
    total = devices + int(rate * seconds)
    start = time.time()
    for i in range(total):
        delay = start + i / rate - time.time()
        if delay > 0.001:
            time.sleep(delay)
        now = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
        device = i % devices
        kind = "card_in" if i < devices else "game"
        game = ',"wager_cents":100,"win_cents":0,"points":1' if kind == "game" else ""
        body = f'{{"id":"{site}-{i}","type":"{kind}","ts":"{now}","card":"C{device:05d}"{game}}}'
        client.publish(f"bonusd/{site}/egm/EGM-{device:05d}/events", body, qos=1)
    time.sleep(1)
    client.loop_stop()
    client.disconnect()


def _keep() -> int:
    text = resources.files("bonusd").joinpath("lua", "rowlog.lua").read_text("utf-8")
    found = re.search(r"local FLOOR_LOG_KEEP = (\d+)", text)
    if found is None:
        raise SystemExit("lua/rowlog.lua: no FLOOR_LOG_KEEP")
    return int(found.group(1))


def _census(r: redis.Redis, base: str) -> dict[str, tuple[int, int]]:
    """family -> (keys, bytes) of every key under `base`."""
    names = list(r.scan_iter(match=f"{base}*", count=5000))
    sizes = []
    for start in range(0, len(names), 1000):
        pipe = r.pipeline(transaction=False)
        for name in names[start : start + 1000]:
            pipe.memory_usage(name, samples=0)
        sizes.extend(pipe.execute())
    out: dict[str, tuple[int, int]] = {}
    for name, size in zip(names, sizes, strict=True):
        keys, total = out.get(family(name[len(base) :]), (0, 0))
        out[family(name[len(base) :])] = (keys + 1, total + int(size or 0))
    return out


async def _full_reads(url: str, keys: Keys) -> tuple[float, float]:
    """Median ms of a mirror's full read of floor-row, and of a bare HGETALL of it."""
    r = aioredis.Redis.from_url(url, decode_responses=True)
    full, bare = [], []
    try:
        for _ in range(5):
            mirror = FloorMirror(r, keys)
            start = time.perf_counter()
            await mirror.sync()
            full.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await r.hgetall(keys.floor_row)
            bare.append((time.perf_counter() - start) * 1000)
    finally:
        await r.aclose()
    return statistics.median(full), statistics.median(bare)


async def _run(
    args: argparse.Namespace, port: int, folder: Path
) -> tuple[dict[str, float], dict[str, tuple[int, int]]]:
    site = f"b{uuid.uuid4().hex[:10]}"
    settings = Settings(
        site=site,
        redis_url=args.redis_url,
        mqtt_url=f"mqtt://127.0.0.1:{port}",
        mqtt_client_id=f"bonusd-{site}",
        promotions=folder,
        raps_floor_sync_s=0,  # the log only: no RAPS session, no mirror
        seed_key_file=folder.parent / "seed-key",  # throwaway keys, not the working folder's
        receipt_key_file=folder.parent / "receipt-key",
        retention_audit_archive=folder.parent / "audit-archive",
        digest_dir=folder.parent / "audit-digests",
    )
    total = args.devices + int(args.rate * args.seconds)
    keys = Keys(settings.key_prefix, site)
    r = redis.Redis.from_url(args.redis_url, decode_responses=True)
    try:
        async with Service(settings, serve_http=False) as service:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(service.run(install_signal_handlers=False))
                while not service.health.mqtt_connected:
                    await asyncio.sleep(0.01)
                proc = multiprocessing.Process(
                    target=_publisher, args=(port, site, args.devices, args.rate, args.seconds)
                )
                proc.start()
                deadline = time.monotonic() + args.seconds * 4 + 60
                while service.ingest.committed < total and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                service.stop()
            proc.join()
            committed = service.ingest.committed
        calls = int(r.get(f"{keys.base}floor-row-seq") or 0)
        log = f"{keys.base}floor-row-log"
        census = _census(r, keys.base)
        full_ms, bare_ms = await _full_reads(args.redis_url, keys)
        return {
            "committed": committed,
            "calls": calls,
            "rows": r.hlen(keys.floor_row),
            "log_cards": r.zcard(log),
            "log_bytes": int(r.memory_usage(log, samples=0) or 0),
            "row_bytes": int(r.memory_usage(keys.floor_row, samples=0) or 0),
            "full_ms": full_ms,
            "bare_ms": bare_ms,
        }, census
    finally:
        for key in list(r.scan_iter(match=f"bonusd:{{{site}}}:*", count=5000)):
            r.delete(key)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=1363, help="events/s after the card-ins")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--redis-url", default=Settings().redis_url)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalMosquitto(Path(tmp)) as broker:
        (Path(tmp) / "promotions").mkdir()
        got, census = asyncio.run(_run(args, broker.port, Path(tmp) / "promotions"))
    run_s = (args.devices + args.rate * args.seconds) / args.rate
    per_s = got["calls"] / run_s
    print(f"events committed      {got['committed']:,.0f} in {run_s:.0f} s at {args.rate}/s")
    print(f"logged calls          {got['calls']:,.0f}  ({per_s:,.0f}/s, ", end="")
    print(f"{got['committed'] / max(got['calls'], 1):.1f} events per call)")
    print(f"floor-row             {got['rows']:,.0f} lines, {got['row_bytes']:,.0f} bytes")
    print(f"floor-row-log         {got['log_cards']:,.0f} cards, {got['log_bytes']:,.0f} bytes")
    for name, keep in (("FLOOR_LOG_KEEP", _keep()), ("former", FORMER_KEEP)):
        print(f"horizon {name:14s} {keep:,} calls = {keep / max(per_s, 1):,.0f} s of this peak")
    print(f"full read of floor-row {got['full_ms']:.1f} ms (bare HGETALL {got['bare_ms']:.1f} ms)")
    print(f"\n{'family':20s} {'keys':>8s} {'bytes':>12s} {'bytes/key':>10s}")
    for name, (count, total) in sorted(census.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:20s} {count:8,d} {total:12,d} {total // count:10,d}")


if __name__ == "__main__":
    main()
