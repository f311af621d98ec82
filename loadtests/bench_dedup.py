"""De-duplication memory: telemetry contract v2 (a sequence per device) beside v1 (event
ids), in the same run, driving the daemon's own batch script against Redis.

    python loadtests/bench_dedup.py [--devices 10000] [--events 10000000] [--batch 1000]
                                    [--days 7] [--rounds 1] [--redis-url URL]

For each contract, `--events` game events from `--devices` EGMs (round-robin, as a busy
floor's batches mix devices; each device numbering its events 1, 2, 3, … in one epoch, or
with simulator-style ids `{run}-EGM-00042-{n}`), their `ts` spread over `--days` (inside
the 7-day window, so every v1 id is still remembered at the end) go through
`lua/apply.lua` (`FloorStore`'s script, with empty effects: only the de-duplication is
measured) in batches of `--batch`, pipelined. Then:

- the memory of the de-duplication keys (`MEMORY USAGE … SAMPLES 0`): v1 `seen:{hour}`,
  v2 `devseq`; Redis `used_memory` before and after each contract's run;
- the script's throughput (events/s) and Redis's own time in it per event (INFO
  commandstats), side figures;
- checks: every event applied once, a replay of the last batch all duplicates, and the
  v2 high-water mark of every device where it should be.

Redis is a throwaway redis-server without persistence (`--redis-url` to use another: its
bench keys are removed after each contract). Several rounds give medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import msgspec
import redis
from rich.console import Console
from rich.table import Table

from bonusd.floor.effects import Effects
from bonusd.floor.sequence import parse_state
from bonusd.floor.store import apply_script
from bonusd.infra.keys import Keys
from simulators.local.services import LocalRedis

HOUR_MS = 3_600_000
START_MS = 1_791_000_000_000  # 2026-10-03, any instant will do
PIPELINE = 8  # batches per round trip
console = Console()
encode = msgspec.json.Encoder().encode


class _BareRedis(LocalRedis):
    """redis-server with no persistence: the bench measures memory, not the disk."""

    def command(self) -> list[str]:
        return [
            "redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
            "--dir", str(self.workdir), "--appendonly", "no", "--save", "",
        ]  # fmt: skip


@dataclass(frozen=True)
class Figures:
    contract: str
    dedup_bytes: int  # MEMORY USAGE of the de-duplication keys
    used_delta: int  # used_memory after minus before
    keys: int  # de-duplication keys
    seconds: float
    redis_us: float  # Redis's own time in the script calls (INFO commandstats), in µs


def _batch_args(
    keys: Keys, contract: str, run: str, span: tuple[int, int], opts: argparse.Namespace
) -> list[bytes | str]:
    """One call's arguments: the events `span` (first, how many) of the stream."""
    first, size = span
    ms_per_event = opts.days * 24 * HOUR_MS / opts.events
    marks: list[list[object]] = []
    for i in range(first, first + size):
        device, seq = i % opts.devices, i // opts.devices + 1
        ts = START_MS + int(i * ms_per_event)
        if contract == "v1":
            marks.append([f"{run}-EGM-{device:05d}-{seq}", str(ts // HOUR_MS)])
        else:
            marks.append([f"EGM-{device:05d}", run, seq, ts])
    ttl = str(8 * 24 * 3600)  # longer than the run's span: nothing expires meanwhile
    effects = encode(Effects().payload())
    return [keys.base, ttl, "1000", encode(marks), effects, b"[]", "0"]


def _used(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


def _script_us(r: redis.Redis) -> float:
    """Redis's time in script calls so far (µs): less noisy than the wall clock on a
    shared machine."""
    stats = r.info("commandstats")
    return sum(float(stats.get(f"cmdstat_{c}", {}).get("usec", 0)) for c in ("evalsha", "eval"))


def _dedup_keys(r: redis.Redis, keys: Keys, contract: str) -> list[str]:
    if contract == "v2":
        return [keys.device_sequences]
    return [k.decode() for k in r.scan_iter(match=keys.pattern("seen"), count=1000)]


def _drive(r: redis.Redis, keys: Keys, contract: str, run: str, opts: argparse.Namespace) -> None:
    script = r.register_script(apply_script())
    started, reported = time.monotonic(), 0
    for first in range(0, opts.events, opts.batch * PIPELINE):
        pipe = r.pipeline(transaction=False)
        stop = min(opts.events, first + opts.batch * PIPELINE)
        for lo in range(first, stop, opts.batch):
            args = _batch_args(keys, contract, run, (lo, min(opts.batch, stop - lo)), opts)
            script(keys=[keys.stats], args=args, client=pipe)
        for reply in pipe.execute():
            if reply[0] != b"ok":
                raise SystemExit(f"{contract}: the script did not apply a fresh batch: {reply}")
        if time.monotonic() - started > reported + 30:
            reported += 30
            console.print(f"  {contract}: {stop:,} events after {reported} s")


def _check(r: redis.Redis, keys: Keys, contract: str, run: str, opts: argparse.Namespace) -> None:
    applied = int(r.hget(keys.stats, "applied") or 0)
    if applied != opts.events:
        raise SystemExit(f"{contract}: exactly-once violated: applied {applied:,}")
    last = max(0, opts.events - opts.batch)
    script = r.register_script(apply_script())
    again = _batch_args(keys, contract, run, (last, opts.batch), opts)
    reply = script(keys=[keys.stats], args=again)
    if reply[0] != b"skip" or set(reply[2::2]) != {b"dup"}:
        raise SystemExit(f"{contract}: a replayed batch was not all duplicates")
    if contract == "v2":
        for device in (0, opts.devices - 1):
            raw = r.hget(keys.device_sequences, f"EGM-{device:05d}")
            state = parse_state(raw.decode() if raw else "")
            expected = (opts.events - 1 - device) // opts.devices + 1
            if (state.current.high, state.gaps) != (expected, 0):
                raise SystemExit(f"v2: EGM-{device:05d} at {state.current.high}, not {expected}")


def _one(r: redis.Redis, contract: str, opts: argparse.Namespace) -> Figures:
    keys = Keys("bench", f"dedup{uuid.uuid4().hex[:8]}")
    run = uuid.uuid4().hex[:8]
    before, spent = _used(r), _script_us(r)
    began = time.monotonic()
    _drive(r, keys, contract, run, opts)
    seconds = time.monotonic() - began
    after, spent = _used(r), _script_us(r) - spent
    dedup = _dedup_keys(r, keys, contract)
    size = sum(int(r.memory_usage(k, samples=0) or 0) for k in dedup)
    _check(r, keys, contract, run, opts)
    doomed = list(r.scan_iter(match=f"{keys.base}*", count=5000))
    for i in range(0, len(doomed), 5000):
        r.delete(*doomed[i : i + 5000])
    return Figures(contract, size, after - before, len(dedup), seconds, spent)


def _table(results: list[Figures], opts: argparse.Namespace) -> Table:
    table = Table(
        title=f"de-duplication memory: {opts.devices:,} devices, {opts.events:,} events, "
        f"{opts.rounds} round(s), medians"
    )
    for column in ("figure", "v1 (ids)", "v2 (sequence)"):
        table.add_column(column, justify="right" if column != "figure" else "left")

    def median(contract: str, field: str) -> float:
        return statistics.median(getattr(f, field) for f in results if f.contract == contract)

    mb = 1024 * 1024
    rows = [
        ("de-duplication keys", "keys", "{:,.0f}", 1),
        ("their MEMORY USAGE (MiB)", "dedup_bytes", "{:,.2f}", mb),
        ("used_memory growth (MiB)", "used_delta", "{:,.2f}", mb),
        ("bytes per event", "dedup_bytes", "{:,.2f}", opts.events),
        ("bytes per device", "dedup_bytes", "{:,.0f}", opts.devices),
        ("script throughput (events/s)", "seconds", "", 0),
        ("Redis time in the script per event (µs)", "redis_us", "{:,.2f}", opts.events),
    ]
    for label, field, fmt, scale in rows:
        cells = []
        for contract in ("v1", "v2"):
            value = median(contract, field)
            cells.append(f"{opts.events / value:,.0f}" if not scale else fmt.format(value / scale))
        table.add_row(label, *cells)
    ratio = median("v1", "dedup_bytes") / max(1.0, median("v2", "dedup_bytes"))
    table.add_row("v1 / v2 memory", "", f"{ratio:,.0f}x")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--days", type=float, default=7.0 - 1 / 24)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--redis-url", help="a Redis of your own (default: a throwaway one)")
    opts = parser.parse_args()
    if opts.events < opts.batch or opts.devices < 1:
        raise SystemExit("--events must be at least --batch, and --devices at least 1")
    results: list[Figures] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = None if opts.redis_url else _BareRedis(Path(tmp) / "redis")
        if server is not None:
            server.start()
        try:
            r = redis.Redis.from_url(opts.redis_url or server.url)  # type: ignore[union-attr]
            for n in range(opts.rounds):
                for contract in ("v1", "v2"):
                    figures = _one(r, contract, opts)
                    results.append(figures)
                    console.print(
                        f"round {n + 1} {contract}: {figures.dedup_bytes / 2**20:,.2f} MiB in "
                        f"{figures.keys:,} key(s), used_memory +{figures.used_delta / 2**20:,.2f}"
                        f" MiB, {figures.seconds:,.0f} s"
                    )
        finally:
            if server is not None:
                server.stop()
    console.print(_table(results, opts))


if __name__ == "__main__":
    sys.exit(main())
