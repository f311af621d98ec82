"""A stepped publisher: the floor's events go out only as far as a driver allows.

A campaign rehearsal (`bonusd rehearse`) moves simulated time itself, as fast as the
daemon takes the floor's events, so this process does not follow a clock: it publishes
up to a bound it is given, says how far it got, and waits for the next bound, generating
the following events meanwhile. One line per command on stdin, one reply per line on
stdout (stderr carries the log):

    ready                                   (reply, once connected to the broker)
    until <bound_ms> <limit>             -> at <published> <next_ms>
        publish, in stream order, the events stamped before `bound_ms` (epoch ms), at most
        `limit` of them; `published` counts every event sent so far, `next_ms` is the
        time of the next unsent event (-1: the stream is over)
    end                                  -> done <JSON: events per type, peak_rss_kb>
        after every publish was acknowledged by the broker

    python -m simulators.stepped --floor golden-horse --seed 42 \\
        --start 2026-10-01T08:00:00+02:00 --duration 72d --promotion promo.toml \\
        --mqtt-url mqtt://127.0.0.1:1883 --prefix rh-1a2b --site golden-horse [--log ev.jsonl]

`--log` also writes every published event as a `topic<TAB>json` line (the `dump` format),
the published event log a rehearsal's standings are checked against.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import queue
import resource
import sys
import threading
import uuid
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol, TextIO

from bonusd.promotions import load_promotion
from simulators.events import SimEvent
from simulators.floor import build_floor
from simulators.floorfile import load_floor
from simulators.generator import generate_events
from simulators.publish import _Link as PahoLink  # for mqtts:// (TLS), which RawLink lacks
from simulators.publish import parse_mqtt_url
from simulators.rawlink import RawLink
from simulators.rawlink import _count_pubacks as _count_pubacks  # noqa: PLC0414 -- kept here
from simulators.rawlink import _packet as _packet  # noqa: PLC0414 -- for older imports
from simulators.timefmt import parse_duration
from simulators.wire import Encoder

logger = logging.getLogger(__name__)
Queued = tuple[int, str, bytes, str]  # (t_ms, topic, body, event type)
_PULL = 256  # events generated between two looks at the command queue
_FLUSH = 1 << 16  # bytes of PUBLISH packets written to the socket at once


class Sender(Protocol):
    def send(self, topic: str, body: bytes) -> None: ...

    def flush(self) -> None: ...

    def drain(self, timeout: float) -> int: ...


class _PahoSender(PahoLink):
    """paho's bounded window (for mqtts://, which `RawLink` does not speak)."""

    def flush(self) -> None:
        pass  # paho writes each publish at once


def peak_rss_kb() -> int:
    """This process's peak resident set size (KiB): `VmHWM`, which, unlike `ru_maxrss`,
    does not carry over the parent's peak into a child started with fork and exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class Feeder:
    """Publishes a stream on command; generates up to `ahead` events while it waits."""

    def __init__(
        self,
        events: Iterable[SimEvent],
        link: Sender,
        encoder: Encoder,
        *,
        log: TextIO | None = None,
        ahead: int = 50_000,
    ) -> None:
        self._events: Iterator[SimEvent] = iter(events)
        self._link, self._encoder, self._log = link, encoder, log
        self._ahead = ahead
        self._queue: deque[Queued] = deque()
        self._exhausted = False
        self.counts: Counter[str] = Counter()

    def _pull(self, n: int) -> None:
        topic, body = self._encoder.topic, self._encoder.body
        for _ in range(n):
            event = next(self._events, None)
            if event is None:
                self._exhausted = True
                return
            kind = str(event.payload["type"])
            self._queue.append((event.t_ms, topic(event), body(event.payload), kind))

    def next_command(self, commands: queue.Queue[str]) -> str:
        """The next command; generates ahead while none is waiting."""
        while True:
            try:
                return commands.get_nowait()
            except queue.Empty:
                if self._exhausted or len(self._queue) >= self._ahead:
                    return commands.get()
                self._pull(_PULL)

    def until(self, bound_ms: int, limit: int) -> tuple[int, int]:
        """Publish events stamped before `bound_ms` (at most `limit`); (published so far,
        next event's time or -1)."""
        sent = 0
        while sent < limit:
            if not self._queue and not self._exhausted:
                self._pull(_PULL)
            if not self._queue or self._queue[0][0] >= bound_ms:
                break
            _, topic, body, kind = self._queue.popleft()
            self._link.send(topic, body)
            self.counts[kind] += 1
            sent += 1
            if self._log is not None:
                self._log.write(f"{topic}\t{body.decode()}\n")
        self._link.flush()
        if not self._queue and not self._exhausted:
            self._pull(1)
        return self.counts.total(), self._queue[0][0] if self._queue else -1


def _read_commands(stream: TextIO, commands: queue.Queue[str]) -> None:
    for line in stream:
        commands.put(line.strip())
    commands.put("end")  # the driver went away: finish cleanly


def serve(feeder: Feeder, link: Sender, *, inp: TextIO, out: TextIO) -> None:
    """Answer the driver's commands until `end` (or end of input)."""
    commands: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_commands, args=(inp, commands), daemon=True).start()

    def reply(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    reply("ready")
    while True:
        command = feeder.next_command(commands).split()
        if not command or command[0] == "end":
            break
        if command[0] != "until" or len(command) != 3:
            raise SystemExit(f"stepped publisher: unknown command {' '.join(command)!r}")
        published, nxt = feeder.until(int(command[1]), int(command[2]))
        reply(f"at {published} {nxt}")
    left = link.drain(60.0)
    peak = peak_rss_kb()
    reply("done " + json.dumps({"events": dict(feeder.counts), "unacked": left, "rss_kb": peak}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m simulators.stepped", description=__doc__)
    parser.add_argument("--floor", required=True, help="named floor or floor file")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--start", required=True, help="aware ISO 8601 instant")
    parser.add_argument("--duration", required=True, help="e.g. 72d, 3d12h")
    parser.add_argument("--promotion", type=Path, help="promotion file players chase")
    parser.add_argument("--play-minutes", type=float, default=5.0)
    parser.add_argument("--mqtt-url", default="mqtt://127.0.0.1:1883")
    parser.add_argument("--prefix", default="bonusd")
    parser.add_argument("--site", required=True)
    parser.add_argument("--run-id", default=None)
    parser.add_argument("--contract", choices=("v1", "v2"), default="v2")
    parser.add_argument("--max-inflight", type=int, default=2000)
    parser.add_argument("--log", type=Path, help="also write the published events here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="simulator: %(levelname)s %(message)s")

    spec = load_floor(args.floor)
    start = dt.datetime.fromisoformat(args.start)
    floor = build_floor(spec.config, seed=args.seed, as_of=start.astimezone(spec.zone).date())
    promotion = load_promotion(args.promotion) if args.promotion else None
    events = generate_events(
        floor,
        seed=args.seed,
        start=start,
        duration=parse_duration(args.duration),
        run_id=args.run_id,
        zone=spec.zone,
        granularity="play",
        play_minutes=args.play_minutes,
        promotion=promotion,
        contract=args.contract,
    )
    target = parse_mqtt_url(args.mqtt_url)
    client_id = f"bonusd-rehearsal-sim-{uuid.uuid4().hex[:10]}"
    link: RawLink | _PahoSender = (
        _PahoSender(target, client_id=client_id, max_inflight=args.max_inflight)
        if target.tls
        else RawLink(target, client_id=client_id, max_inflight=args.max_inflight)
    )
    link.open(10.0)
    log = args.log.open("w", encoding="utf-8", newline="\n") if args.log else None
    try:
        feeder = Feeder(events, link, Encoder(prefix=args.prefix, site=args.site), log=log)
        serve(feeder, link, inp=sys.stdin, out=sys.stdout)
    finally:
        if log is not None:
            log.close()
        link.close()


if __name__ == "__main__":
    main()
