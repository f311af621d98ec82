"""MQTT users: bank gateways that play EGMs, pits that rate tables, and the ingest probe.

Built on locust's own MQTT user (`locust.contrib.mqtt`, paho underneath): every QoS 1
publish is a request whose response time is the broker's PUBACK. One user is one
connection carrying a slice of the floor's devices (a bank gateway, a pit's rating
system): the simulator's stream for those devices, every game, card-ins and card-outs
included, published when its simulated time comes (`speed` simulated seconds a wall
second). All users share one origin, so the whole floor plays the same instant.

The probe measures end to end: once a second it cards a probe card in at one of two
probe EGMs and times publish -> the session visible in Redis (committed by the daemon),
or, in the bare phase, publish -> delivered back to its own subscription.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.request
import warnings
from typing import Any

import gevent
import gevent.event
import paho.mqtt.client as mqtt
import redis
from locust import constant, task
from locust.contrib.mqtt import MqttClient, MqttUser

from floorload.config import from_environment

CFG = from_environment()
PROBE_CARD = "LT-PROBE"
PROBE_DEVICES = ("LT-PROBE-A", "LT-PROBE-B")
CONNECT_S = 15.0
BATCH = 500  # most events published in one go before yielding
INFLIGHT = 100
# locust.contrib.mqtt registers paho callbacks of paho's first callback API
warnings.filterwarnings("ignore", "Callback API version 1 is deprecated", DeprecationWarning)


class FloorClient(MqttClient):
    """Names requests by device kind, not by topic (10,400 topics would be 10,400 rows);
    up to `INFLIGHT` QoS 1 messages awaiting their PUBACK (set before connecting)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_inflight_messages_set(INFLIGHT)

    def _generate_event_name(self, event_type: str, qos: int, topic: str) -> str:
        parts = topic.split("/")
        kind = "probe" if "/LT-PROBE" in topic else parts[-3] if len(parts) > 3 else topic
        return f"{event_type} {kind} (QoS {qos}, PUBACK)"


def _redis() -> redis.Redis:
    return redis.Redis.from_url(CFG.redis_url, decode_responses=True)


def claim_slice(kind: str, slices: int) -> int:
    """The next unplayed slice of `kind` for this phase (shared by every worker)."""
    return int(_redis().incr(CFG.key(f"slice:{kind}")) - 1) % max(1, slices)


def shared_origin() -> float:
    """The wall instant (epoch s) of stream offset 0, the same for every user."""
    r = _redis()
    r.set(CFG.key("origin"), repr(time.time() + 2.0), nx=True)
    return float(r.get(CFG.key("origin")) or time.time())


def read_slice(kind: str, n: int) -> list[tuple[float, str, bytes]]:
    """(wall offset s, topic, body) of one slice, in order."""
    out = []
    with CFG.slice_path(kind, n).open(encoding="utf-8") as fh:
        for line in fh:
            offset, kind_device, body = line.rstrip("\n").split("\t", 2)
            topic = f"{CFG.topic_head}{kind_device}/events"
            out.append((int(offset) / 1000 / CFG.speed, topic, body.encode()))
    return out


class _Connected(MqttUser):
    abstract = True
    client_cls = FloorClient
    host = CFG.mqtt_host
    port = CFG.mqtt_port

    def wait_connected(self) -> None:
        deadline = time.monotonic() + CONNECT_S
        while not self.client.is_connected():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no MQTT connection to {self.host}:{self.port}")
            gevent.sleep(0.05)

    def on_stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class _Player(_Connected):
    """Plays one slice of the stream in real time (scaled by the speed)."""

    abstract = True
    kind = "egm"
    wait_time = constant(0)

    def on_start(self) -> None:
        self.wait_connected()
        slices = CFG.egm_slices if self.kind == "egm" else CFG.table_slices
        self.events = read_slice(self.kind, claim_slice(self.kind, slices))
        self.origin = shared_origin()
        self.next = 0

    @task
    def play(self) -> None:
        if self.next >= len(self.events):
            gevent.sleep(1.0)  # the slice is played out (the run outlived the stream)
            return
        now = time.time() - self.origin
        sent = 0
        while self.next < len(self.events) and sent < BATCH:
            offset, topic, body = self.events[self.next]
            if offset > now:
                gevent.sleep(min(offset - now, 0.5))
                return
            self.client.publish(topic, body, qos=1)
            self.next += 1
            sent += 1
        gevent.sleep(0)


class EgmBank(_Player):
    """A bank gateway: the EGMs of one slice of the floor, every game."""

    kind = "egm"
    fixed_count = CFG.users.get("EgmBank", 0)


class TablePit(_Player):
    """A pit's rating system: rating starts, updates and ends of its tables."""

    kind = "table"
    fixed_count = CFG.users.get("TablePit", 0)


class IngestProbe(_Connected):
    """Publish -> committed (or, bare, publish -> delivered), once every `probe_every_s`."""

    fixed_count = CFG.users.get("IngestProbe", 0)
    wait_time = constant(CFG.probe_every_s)

    def on_start(self) -> None:
        self.wait_connected()
        self.n = 0
        self.arrived: dict[str, gevent.event.Event] = {}
        self.base = dt.datetime.now(dt.UTC)
        if CFG.phase == "bare":
            self.client.on_message = self._on_message
            for device in PROBE_DEVICES:
                self.client.subscribe(f"{CFG.topic_head}egm/{device}/events", qos=1)
            gevent.sleep(0.5)
        else:
            self.redis = _redis()
            health: dict[str, Any] = json.loads(
                _get(f"{CFG.http_base}/health") or '{"clock": null}'
            )
            if health.get("clock"):
                self.base = dt.datetime.fromisoformat(health["clock"])

    def _on_message(self, _c: mqtt.Client, _u: object, message: mqtt.MQTTMessage) -> None:
        if b'"LT-PROBE"' in message.payload:
            event_id = json.loads(message.payload)["id"]
            waiting = self.arrived.get(event_id)
            if waiting is not None:
                waiting.set()

    @task
    def probe(self) -> None:
        self.n += 1
        device = PROBE_DEVICES[self.n % 2]
        at = self.base + dt.timedelta(seconds=self.n * CFG.probe_every_s * CFG.speed)
        event_id = f"lt-probe-{CFG.run_tag}-{CFG.phase}-{self.n}"
        body = json.dumps(
            {
                "id": event_id,
                "type": "card_in",
                "ts": at.isoformat(timespec="milliseconds"),
                "card": PROBE_CARD,
                "area": "main",
            }
        )
        arrived = self.arrived[event_id] = gevent.event.Event()
        t0 = time.perf_counter()
        self.client.publish(f"{CFG.topic_head}egm/{device}/events", body, qos=1)
        if CFG.phase == "bare":
            ok = arrived.wait(10.0)
            name = "card_in publish -> delivered to a bare subscriber"
        else:
            ok = self._committed(device, deadline=time.monotonic() + 10.0)
            name = "card_in publish -> committed (session in Redis)"
        del self.arrived[event_id]
        self.environment.events.request.fire(
            request_type="E2E",
            name=name,
            response_time=(time.perf_counter() - t0) * 1000,
            response_length=len(body),
            exception=None if ok else TimeoutError("not seen within 10 s"),
            context={},
        )

    def _committed(self, device: str, deadline: float) -> bool:
        key = f"{CFG.key_base}session:{PROBE_CARD}"
        while time.monotonic() < deadline:
            if self.redis.hget(key, "device") == device:
                return True
            gevent.sleep(0.002)
        return False


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())
    except OSError:
        return None
