"""The processes around a load run: the daemon, the warm-up publisher, the bare subscriber,
and reading the daemon's /health and /metrics.

The daemon is `bonusd run` as a child process with the run's `BONUSD_*` environment, as
an operator starts it. Its metrics are read before and after a phase; the difference of
the ingest-latency histogram gives that phase's arrival-to-committed quantiles.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import httpx
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from prometheus_client.parser import text_string_to_metric_families


def start_daemon(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bonusd", "run"], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def wait_healthy(base: str, daemon: subprocess.Popen[bytes] | None, log: Path) -> dict[str, Any]:
    """/health once the daemon answers with MQTT connected (60 s at most)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if daemon is not None and daemon.poll() is not None:
            raise SystemExit(f"the daemon exited: see {log}")
        try:
            health: dict[str, Any] = httpx.get(f"{base}/health", timeout=5).json()
            if health.get("mqtt") == "connected":
                return health
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the daemon did not become healthy: see {log}")


def open_draw(base: str, token: str) -> tuple[str, str] | None:
    """A running daemon's (promotion, draw) that takes activations now, else one that is
    earning, else None: what its kiosks and desk work on."""
    headers = {"Authorization": f"Bearer {token}"}
    found: dict[str, tuple[str, str]] = {}
    for p in httpx.get(f"{base}/promotions", headers=headers, timeout=10).json():
        detail = httpx.get(f"{base}/promotions/{p['id']}", headers=headers, timeout=10).json()
        for d in detail["draws"]:
            found.setdefault(d["state"], (p["id"], d["id"]))
    return found.get("activation") or found.get("earning")


def stop_daemon(daemon: subprocess.Popen[bytes]) -> int:
    daemon.terminate()
    try:
        return daemon.wait(30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        return daemon.wait(10)


@dataclass
class Metrics:
    """The figures of one /metrics read that a run compares."""

    applied: float = 0.0
    duplicates: float = 0.0
    dead_letters: dict[str, float] = field(default_factory=dict)
    latency: list[tuple[float, float]] = field(default_factory=list)  # (le, cumulative)
    latency_sum: float = 0.0
    batches: float = 0.0
    batched: float = 0.0

    def minus(self, before: Metrics) -> Metrics:
        old = dict(before.latency)
        return Metrics(
            applied=self.applied - before.applied,
            duplicates=self.duplicates - before.duplicates,
            dead_letters={
                k: v - before.dead_letters.get(k, 0.0) for k, v in self.dead_letters.items()
            },
            latency=[(le, c - old.get(le, 0.0)) for le, c in self.latency],
            latency_sum=self.latency_sum - before.latency_sum,
            batches=self.batches - before.batches,
            batched=self.batched - before.batched,
        )

    def quantile(self, q: float) -> float | None:
        """The latency quantile `q` (0-1), interpolated inside its histogram bucket;
        `inf` when it lies beyond the last finite bucket (10 s)."""
        total = self.latency[-1][1] if self.latency else 0.0
        if total <= 0:
            return None
        rank, low, below = q * total, 0.0, 0.0
        for le, cum in self.latency:
            if cum >= rank:
                if le == float("inf"):
                    return le
                share = (rank - below) / (cum - below) if cum > below else 1.0
                return low + (le - low) * share
            low, below = le, cum
        return low


def scrape(base: str) -> Metrics:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    m = Metrics()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "bonusd_events_applied_total":
                m.applied = s.value
            elif s.name == "bonusd_events_duplicate_total":
                m.duplicates = s.value
            elif s.name == "bonusd_dead_letters_total":
                m.dead_letters[s.labels["reason"]] = s.value
            elif s.name == "bonusd_ingest_latency_seconds_bucket":
                m.latency.append((float(s.labels["le"]), s.value))
            elif s.name == "bonusd_ingest_latency_seconds_sum":
                m.latency_sum = s.value
            elif s.name == "bonusd_ingest_batch_size_count":
                m.batches = s.value
            elif s.name == "bonusd_ingest_batch_size_sum":
                m.batched = s.value
    m.latency.sort()
    return m


def publish_all(host: str, port: int, messages: list[tuple[str, bytes]]) -> float:
    """Publish (topic, body) at QoS 1 as fast as the broker takes them; wall seconds."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="")
    client.max_inflight_messages_set(1000)
    client.max_queued_messages_set(0)
    client.connect(host, port)
    client.loop_start()
    t0 = time.monotonic()
    infos = [client.publish(topic, body, qos=1) for topic, body in messages]
    for info in infos:
        info.wait_for_publish(60)
    took = time.monotonic() - t0
    client.loop_stop()
    client.disconnect()
    return took


def forget_session(host: str, port: int, client_id: str) -> None:
    """End the daemon's persistent MQTT session, so the broker keeps nothing for it."""
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 0
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    client.connect(host, port, clean_start=True, properties=props)
    client.loop_start()
    time.sleep(0.2)
    client.disconnect()
    client.loop_stop()


def _bare(where: tuple[str, int, str], ready: Any, counts: Any, stop: MpEvent) -> None:
    """A subscriber that only counts: what the broker costs without the daemon."""
    host, port, topic = where
    received = [0]

    def on_message(_c: mqtt.Client, _u: object, _m: mqtt.MQTTMessage) -> None:
        received[0] += 1

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="", protocol=mqtt.MQTTv5)
    client.on_message = on_message
    client.connect(host, port)
    client.subscribe(topic, qos=1)
    client.loop_start()
    ready.put(True)
    stop.wait()
    client.loop_stop()
    client.disconnect()
    counts.put(received[0])


class BareSubscriber:
    """The bare subscriber in a process of its own (`with` starts and stops it)."""

    def __init__(self, host: str, port: int, topic: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._ready, self._counts, self._stop = ctx.Queue(), ctx.Queue(), ctx.Event()
        self.process = ctx.Process(
            target=_bare, args=((host, port, topic), self._ready, self._counts, self._stop)
        )
        self.received = 0

    def __enter__(self) -> BareSubscriber:
        self.process.start()
        self._ready.get(timeout=30)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self.received = int(self._counts.get(timeout=30))
        self.process.join(10)

    @property
    def pid(self) -> int | None:
        return self.process.pid
