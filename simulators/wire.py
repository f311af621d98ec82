"""The wire form of simulated events: MQTT topics, JSON bodies and the JSONL dump.

Topics follow the telemetry contract (v1 and v2 alike): `{prefix}/{site}/{kind}/{device}/
events`. The dump writes one `topic<TAB>json` line per event, in stream order; for one
seed and config it is byte-identical from run to run (benchmarks and tests replay it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import msgspec

from simulators.events import Payload, SimEvent

_FORBIDDEN = frozenset("+#\0")


def topic_head(prefix: str, site: str) -> str:
    """`{prefix}/{site}/`, checked: neither part may be empty or hold an MQTT wildcard."""
    for name, value in (("prefix", prefix), ("site", site)):
        if not value or _FORBIDDEN & set(value) or value.startswith("/") or value.endswith("/"):
            raise ValueError(
                f"MQTT topic {name} {value!r} must be non-empty, without + # or edge /"
            )
    if "/" in site:
        raise ValueError(f"site {site!r} must be one topic level (no /)")
    return f"{prefix}/{site}/"


def topic_for(event: SimEvent, *, prefix: str = "bonusd", site: str = "demo") -> str:
    """The topic an event is published on."""
    return f"{topic_head(prefix, site)}{event.kind}/{event.device}/events"


class Encoder:
    """Turns events into (topic, JSON bytes) for one prefix and site."""

    __slots__ = ("_encode", "_head")

    def __init__(self, *, prefix: str = "bonusd", site: str = "demo") -> None:
        self._head = topic_head(prefix, site)
        self._encode = msgspec.json.Encoder().encode

    def topic(self, event: SimEvent) -> str:
        return f"{self._head}{event.kind}/{event.device}/events"

    def body(self, payload: Payload) -> bytes:
        return self._encode(payload)


def write_jsonl(
    events: Iterable[SimEvent], out: TextIO, *, prefix: str = "bonusd", site: str = "demo"
) -> Counter[str]:
    """Write `topic<TAB>json` lines to `out`; return the count of events per type."""
    encoder = Encoder(prefix=prefix, site=site)
    counts: Counter[str] = Counter()
    for event in events:
        body = encoder.body(event.payload).decode()
        out.write(f"{encoder.topic(event)}\t{body}\n")
        counts[str(event.payload["type"])] += 1
    return counts


def dump_events(
    events: Iterable[SimEvent], path: Path, *, prefix: str = "bonusd", site: str = "demo"
) -> Counter[str]:
    """Write the dump to `path` (UTF-8, `\\n` line ends); return the count per type."""
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        return write_jsonl(events, fh, prefix=prefix, site=site)
