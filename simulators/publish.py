"""Publish a simulated event stream to an MQTT broker, paced by simulated time.

paho-mqtt 2 (callback API v2) with its network loop in a background thread; every event
goes out with QoS 1. At most `max_inflight` publishes wait for their PUBACK at any time,
so memory stays flat however long the run: the producer blocks while the window is full
(also while paho reconnects after a broker restart, after which it resends what was not
acknowledged). Pacing (pacing.py): `speed` is simulated seconds per wall second, 0 means
as fast as possible; or a `SharedPacer` publishes each event when the site's shared clock
in Redis reaches its time, the clock the daemons run on.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from simulators.events import SimEvent
from simulators.pacing import Pacer, WallPacer
from simulators.timefmt import to_ms
from simulators.wire import Encoder

logger = logging.getLogger(__name__)


class PublishError(RuntimeError):
    """The broker refused us, could not be reached, or did not acknowledge in time."""


@dataclass(frozen=True, slots=True)
class MqttTarget:
    """Where to publish, from an `mqtt://[user:pass@]host[:port]` URL; for `mqtts://`
    optionally `?cafile=ca.pem` (the CA of the broker's certificate, else the system's)
    and `&certfile=...&keyfile=...` (a client certificate)."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: bool = False
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None


_TLS_FILES = ("cafile", "certfile", "keyfile")


def _tls_files(url: str, query: str, tls: bool) -> dict[str, str]:
    files = {}
    for name, values in parse_qs(query).items():
        if name not in _TLS_FILES:
            raise ValueError(
                f"MQTT URL {url!r}: unknown option {name!r} (cafile, certfile, keyfile)"
            )
        files[name] = values[-1]
    if files and not tls:
        raise ValueError(f"MQTT URL {url!r}: {', '.join(files)} need mqtts://")
    return files


def parse_mqtt_url(url: str) -> MqttTarget:
    """Parse `mqtt://host:port`, `mqtt://user:pass@host:port` or `mqtts://...` (TLS, with
    `?cafile=`, `certfile=`, `keyfile=` if the broker's CA or a client certificate is
    needed)."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts", "tcp"):
        raise ValueError(f"MQTT URL {url!r}: scheme must be mqtt:// or mqtts://")
    if not parts.hostname:
        raise ValueError(f"MQTT URL {url!r} has no host")
    tls = parts.scheme == "mqtts"
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError as exc:
        raise ValueError(f"MQTT URL {url!r}: bad port") from exc
    return MqttTarget(
        host=parts.hostname,
        port=port,
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        tls=tls,
        **_tls_files(url, parts.query, tls),
    )


class _Link:
    """One paho client with a bounded window of unacknowledged QoS 1 publishes."""

    def __init__(self, target: MqttTarget, *, client_id: str, max_inflight: int) -> None:
        self._limit = max_inflight
        self._outstanding = 0
        self._window = threading.Condition()
        self._connected = threading.Event()
        self._refused: str | None = None
        self._closing = False
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
        if target.username is not None:
            client.username_pw_set(target.username, target.password)
        if target.tls:
            client.tls_set(ca_certs=target.cafile, certfile=target.certfile, keyfile=target.keyfile)
        # paho's own window re-scans every queued message on each PUBACK (slow when the
        # window is large), so paho sends at once and our window below bounds the queue.
        client.max_inflight_messages_set(0)
        client.max_queued_messages_set(0)
        client.reconnect_delay_set(min_delay=1, max_delay=10)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        self._client = client
        self._target = target

    def open(self, timeout: float) -> None:
        host, port = self._target.host, self._target.port
        try:
            self._client.connect(host, port, keepalive=30)
        except OSError as exc:
            raise PublishError(f"cannot reach MQTT broker {host}:{port}: {exc}") from exc
        self._client.loop_start()
        if not self._connected.wait(timeout) or self._refused:
            self.close()
            reason = self._refused or f"no CONNACK within {timeout:g} s"
            raise PublishError(f"MQTT broker {host}:{port} refused the connection: {reason}")
        logger.info("connected to MQTT broker %s:%d", host, port)

    def send(self, topic: str, body: bytes) -> None:
        with self._window:
            while self._outstanding >= self._limit:
                self._window.wait(1.0)
            self._outstanding += 1
        info = self._client.publish(topic, body, qos=1)
        if info.rc not in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN):
            self._acked()
            raise PublishError(f"publish to {topic} failed: {mqtt.error_string(info.rc)}")

    def drain(self, timeout: float) -> int:
        """Wait until every publish is acknowledged; return how many are still not."""
        deadline = time.monotonic() + timeout
        with self._window:
            while self._outstanding and (left := deadline - time.monotonic()) > 0:
                self._window.wait(left)
            return self._outstanding

    def close(self) -> None:
        self._closing = True
        self._client.disconnect()
        self._client.loop_stop()

    def _acked(self) -> None:
        with self._window:
            self._outstanding -= 1
            self._window.notify()

    def _on_connect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if reason.is_failure:
            self._refused = str(reason)
        self._connected.set()

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if not self._closing:
            logger.warning("MQTT broker connection lost (%s); paho reconnects", reason)

    def _on_publish(self, _c: Any, _u: Any, _mid: Any, _reason: Any, _p: Any) -> None:
        self._acked()


def publish_events(
    events: Iterable[SimEvent],
    *,
    mqtt_url: str,
    prefix: str = "bonusd",
    site: str = "demo",
    speed: float = 0.0,
    start: dt.datetime | None = None,
    duration: dt.timedelta | None = None,
    max_inflight: int = 1000,
    progress: bool = False,
    client_id: str | None = None,
    connect_timeout: float = 10.0,
    drain_timeout: float = 30.0,
    pacer: Pacer | None = None,
) -> Counter[str]:
    """Publish `events` (QoS 1); return the number published per event type.

    Pacing starts at `start` (default: the first event's time): at `speed` 60 an event
    stamped one simulated minute after `start` goes out one wall second after the first.
    A `pacer` (e.g. `SharedPacer`) replaces that. `duration` sizes the progress bar.
    Raises `PublishError` if the broker is unreachable, refuses us, or leaves publishes
    unacknowledged for `drain_timeout` seconds at the end.
    """
    if speed < 0:
        raise ValueError(f"speed must be >= 0, got {speed}")
    if max_inflight < 1:
        raise ValueError(f"max_inflight must be >= 1, got {max_inflight}")
    encoder = Encoder(prefix=prefix, site=site)
    link = _Link(
        parse_mqtt_url(mqtt_url),
        client_id=client_id or f"bonusd-sim-{uuid.uuid4().hex[:12]}",
        max_inflight=max_inflight,
    )
    link.open(connect_timeout)
    counts: Counter[str] = Counter()
    bar = _Bar(progress, duration)
    sim_s = 0.0
    origin_ms = to_ms(start) if start is not None else None
    pace = pacer or WallPacer(speed, origin_ms)
    try:
        with bar:
            for event in events:
                if origin_ms is None:
                    origin_ms = event.t_ms
                sim_s = (event.t_ms - origin_ms) / 1000
                if pace.now_ms() < event.t_ms:
                    bar.show(sim_s, counts.total())
                    pace.wait_until(event.t_ms)
                link.send(encoder.topic(event), encoder.body(event.payload))
                counts[str(event.payload["type"])] += 1
                bar.tick(sim_s, counts.total())
            left = link.drain(drain_timeout)
            bar.show(duration.total_seconds() if duration else sim_s, counts.total())
        if left:
            raise PublishError(f"{left} publishes not acknowledged after {drain_timeout:g} s")
    finally:
        link.close()
        if pacer is None:
            pace.close()
    logger.info("published %d events: %s", counts.total(), dict(counts))
    return counts


class _Bar:
    """A rich progress bar of simulated time covered and events published (optional)."""

    def __init__(self, enabled: bool, duration: dt.timedelta | None) -> None:
        self._progress: Progress | None = None
        self._next = 0.0
        if not enabled:
            return
        self._progress = Progress(
            TextColumn("[bold]simulating"),
            BarColumn(),
            TextColumn("{task.fields[sim]} simulated"),
            TextColumn("{task.fields[events]:>10,} events"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        total = duration.total_seconds() if duration else None
        self._task = self._progress.add_task("sim", total=total, sim="0:00:00", events=0)

    def __enter__(self) -> _Bar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def tick(self, sim_s: float, events: int) -> None:
        """Refresh at most ten times a wall second; cheap when called per event."""
        if self._progress is None:
            return
        now = time.monotonic()
        if now >= self._next:
            self._next = now + 0.1
            self.show(sim_s, events)

    def show(self, sim_s: float, events: int) -> None:
        if self._progress is not None:
            sim = str(dt.timedelta(seconds=int(sim_s)))
            self._progress.update(self._task, completed=sim_s, sim=sim, events=events)
