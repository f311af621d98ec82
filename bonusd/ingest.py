"""MQTT ingest: telemetry from the broker into the floor store, exactly once, in batches.

The broker keeps a persistent MQTT v5 session for the daemon (fixed client id, clean start
off, a session expiry), so what is published while the daemon is down waits for it. Every
message is acknowledged to the broker only after its effect (or its dead letter) is
committed in Redis; a crash before that means redelivery, and redelivery is harmless
because the store applies each event id once.

Speed comes from batching below aiomqtt's per-message iterator: paho hands each message
to a callback that only appends it to a list, and the consumer applies whatever has
arrived in one Lua call, then acknowledges it all.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from bonusd.backoff import Backoff, pause
from bonusd.clock import Clock
from bonusd.health import Health
from bonusd.metrics import Metrics
from bonusd.store import REDIS_ERRORS, BatchResult, DeadLetter, FloorStore
from bonusd.telemetry import FloorEvent, Rejection, TelemetryDecoder

if TYPE_CHECKING:
    from bonusd.settings import Settings

logger = logging.getLogger(__name__)

DRAIN_DEADLINE_S = 5.0


@dataclass(frozen=True, slots=True)
class Received:
    topic: str
    payload: bytes
    mid: int
    qos: int
    arrived_mono: float


@dataclass(frozen=True, slots=True)
class MqttTarget:
    """Where and how to connect: `BONUSD_MQTT_URL`, and the account and TLS files of
    `BONUSD_MQTT_USERNAME`, `_PASSWORD`, `_TLS_CA_FILE`, `_TLS_CERT_FILE`, `_TLS_KEY_FILE`."""

    host: str
    port: int
    username: str | None
    password: str | None
    tls: bool
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    @classmethod
    def from_url(cls, url: str) -> MqttTarget:
        parts = urlsplit(url)
        tls = parts.scheme == "mqtts"
        return cls(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or (8883 if tls else 1883),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            tls=tls,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> MqttTarget:
        url = cls.from_url(settings.mqtt_url)
        password = settings.mqtt_password.get_secret_value()
        return cls(
            host=url.host,
            port=url.port,
            username=settings.mqtt_username or url.username,
            password=password or url.password,
            tls=url.tls,
            ca_file=settings.mqtt_tls_ca_file,
            cert_file=settings.mqtt_tls_cert_file,
            key_file=settings.mqtt_tls_key_file,
        )

    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS context of an mqtts:// target: the broker's certificate checked against
        the given CA (else the system's), and our client certificate if one is set."""
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file is not None:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context


CommitHook = Callable[[list[Received], BatchResult, float], None]


class Ingest:
    """Owns the MQTT subscription of one site; `run()` reconnects until `stop` is set."""

    def __init__(
        self,
        *,
        target: MqttTarget,
        client_id: str,
        topic_filter: str,
        shared_group: str,
        session_expiry_s: int,
        receive_maximum: int,
        batch_max: int,
        decoder: TelemetryDecoder,
        store: FloorStore,
        clock: Clock,
        metrics: Metrics,
        health: Health,
        backoff_max_s: float,
        on_commit: CommitHook | None = None,
    ) -> None:
        self._target = target
        self._client_id = client_id
        self._filter = f"$share/{shared_group}/{topic_filter}" if shared_group else topic_filter
        self._session_expiry_s = session_expiry_s
        self._receive_maximum = receive_maximum
        self._batch_max = batch_max
        self._decoder = decoder
        self._store = store
        self._clock = clock
        self._metrics = metrics
        self._health = health
        self._backoff_max_s = backoff_max_s
        self._on_commit = on_commit
        self._inbox: deque[Received] = deque()
        self._arrived = asyncio.Event()
        self.committed = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, consume, and on any broker failure reconnect with jittered backoff."""
        backoff = Backoff(cap=self._backoff_max_s)
        while not stop.is_set():
            try:
                await self._session(stop)
            except* aiomqtt.MqttError as group:
                self._health.mqtt_connected = False
                self._health.mqtt_error = str(group.exceptions[0])
                self._metrics.connected.labels("mqtt").set(0)
                self._metrics.reconnects.labels("mqtt").inc()
                delay = backoff.next_delay()
                logger.warning(
                    "MQTT broker %s:%s unreachable or lost (%s); retrying in %.1fs",
                    self._target.host,
                    self._target.port,
                    group.exceptions[0],
                    delay,
                )
                await pause(stop, delay)
            else:
                backoff.reset()

    def _client(self) -> aiomqtt.Client:
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = self._session_expiry_s
        props.ReceiveMaximum = self._receive_maximum
        client = aiomqtt.Client(
            self._target.host,
            self._target.port,
            identifier=self._client_id,
            username=self._target.username,
            password=self._target.password,
            protocol=aiomqtt.ProtocolVersion.V5,
            clean_start=False,
            properties=props,
            tls_context=self._target.tls_context(),
            logger=_paho_logger(),
        )
        # aiomqtt 2.x has no manual acknowledgement yet (empicano/aiomqtt#345), so the paho
        # client underneath is configured directly: acks are ours to send, and messages go
        # straight to our inbox instead of through aiomqtt's per-message queue.
        paho = client._client
        paho.manual_ack_set(True)
        paho.on_message = self._on_paho_message
        return client

    def _on_paho_message(self, _client: Any, _userdata: Any, message: Any) -> None:
        # Runs on the event loop thread (aiomqtt reads the socket from a loop reader).
        now = time.monotonic()
        self._inbox.append(
            Received(
                message.topic,
                message.payload,
                message.mid,
                message.qos,
                now,
            )
        )
        if self._health.oldest_pending_mono is None:
            self._health.oldest_pending_mono = now
        self._arrived.set()

    async def _session(self, stop: asyncio.Event) -> None:
        client = self._client()
        self._inbox.clear()  # unacknowledged leftovers are redelivered by the broker
        self._health.oldest_pending_mono = None
        try:
            async with client:
                await client.subscribe(self._filter, qos=1)
                self._health.mqtt_connected = True
                self._health.mqtt_error = ""
                self._metrics.connected.labels("mqtt").set(1)
                logger.info("subscribed to %s as %s", self._filter, self._client_id)
                # A failing child (the watcher raising MqttError) cancels this body and the
                # group re-raises it; otherwise the body waits for shutdown and ends both.
                async with asyncio.TaskGroup() as tg:
                    watcher = tg.create_task(_until_disconnected(client))
                    consumer = tg.create_task(self._consume(client, stop))
                    await stop.wait()
                    self._arrived.set()  # wake the consumer: it commits what it holds
                    try:
                        await asyncio.wait_for(asyncio.shield(consumer), DRAIN_DEADLINE_S)
                    except TimeoutError:
                        logger.warning("ingest did not drain in %ss; cancelling", DRAIN_DEADLINE_S)
                        consumer.cancel()
                    watcher.cancel()
        finally:
            _disconnection_seen(client)
        logger.info("ingest stopped; %d message(s) left for redelivery", len(self._inbox))

    async def _consume(self, client: aiomqtt.Client, stop: asyncio.Event) -> None:
        paho = client._client
        while not stop.is_set():
            if not self._inbox:
                self._arrived.clear()
                await self._arrived.wait()
                if stop.is_set():
                    return
            self._drain_socket(paho)
            n = min(len(self._inbox), self._batch_max)
            batch = [self._inbox.popleft() for _ in range(n)]
            result = await self._commit(batch, stop)
            if result is None:
                return
            for msg in batch:
                if msg.qos:
                    paho.ack(msg.mid, msg.qos)
            self._after_commit(batch, result)

    def _drain_socket(self, paho: Any) -> None:
        """Read what the socket already holds, so one Redis call carries a full batch.

        aiomqtt reads one packet per readable event; draining here turns a backlog into
        one batch instead of many one-message round trips. It adds no waiting: it stops
        as soon as a read yields no new message.
        """
        inbox = self._inbox
        while len(inbox) < self._batch_max:
            before = len(inbox)
            try:
                rc = paho.loop_read()
            except OSError as exc:
                raise aiomqtt.MqttError(f"connection lost while reading: {exc}") from exc
            if rc != 0:
                raise aiomqtt.MqttError(f"connection lost while reading (paho rc={rc})")
            if len(inbox) == before:
                return

    async def _commit(self, batch: list[Received], stop: asyncio.Event) -> BatchResult | None:
        now = self._clock.now()
        now_ms = int(now.timestamp() * 1000)
        events: list[FloorEvent] = []
        dead: list[DeadLetter] = []
        for msg in batch:
            decoded = self._decoder.decode(msg.topic, msg.payload, now)
            if isinstance(decoded, Rejection):
                reason, detail = decoded.reason, decoded.detail
                # arrival on the floor clock (simulated time in a rehearsal), to the ms
                dead.append(DeadLetter(reason, msg.topic, msg.payload, detail, now_ms))
            else:
                events.append(decoded)
        backoff = Backoff(cap=self._backoff_max_s)
        while True:
            try:
                result = await self._store.apply_batch(events, dead)
            except REDIS_ERRORS as exc:
                if self._health.redis_ok or backoff.attempt == 0:
                    self._metrics.reconnects.labels("redis").inc()
                self._health.redis_ok = False
                self._health.redis_error = str(exc)
                self._metrics.connected.labels("redis").set(0)
                delay = backoff.next_delay()
                logger.warning(
                    "Redis unavailable (%s); %d message(s) held unacknowledged, retry in %.1fs",
                    exc,
                    len(batch),
                    delay,
                )
                if await pause(stop, delay):
                    return None
                continue
            if not self._health.redis_ok:
                self._health.redis_ok = True
                self._health.redis_error = ""
                self._metrics.connected.labels("redis").set(1)
                if backoff.attempt:
                    logger.warning("Redis is back; ingest resumes")
            for d in dead:
                self._metrics.dead_letters.labels(d.reason.value).inc()
                logger.debug("dead letter %s on %s: %s", d.reason.value, d.topic, d.detail)
            return result

    def _after_commit(self, batch: list[Received], result: BatchResult) -> None:
        done = time.monotonic()
        self.committed += len(batch)
        m = self._metrics
        m.events_applied.inc(result.applied)
        m.duplicates.inc(result.duplicates)
        m.batch_size.observe(len(batch))
        for msg in batch:
            m.ingest_latency.observe(done - msg.arrived_mono)
        self._health.last_commit_mono = done
        self._health.pending = len(self._inbox)
        self._health.oldest_pending_mono = self._inbox[0].arrived_mono if self._inbox else None
        if self._on_commit is not None:
            self._on_commit(batch, result, done)


async def _until_disconnected(client: aiomqtt.Client) -> None:
    """Completes by raising `MqttError` when the connection is lost (our callback replaced
    aiomqtt's, so its queue stays empty and its iterator only ever reports disconnection)."""
    async for _ in client.messages:
        pass


def _disconnection_seen(client: aiomqtt.Client) -> None:
    """Mark aiomqtt's record of a lost connection as read. When our consumer notices the
    loss first, the watcher is cancelled before it reads it, and asyncio would log
    "Future exception was never retrieved" at ERROR for a loss `run()` already handles."""
    lost = client._disconnected
    if lost.done() and not lost.cancelled():
        lost.exception()


class _LostConnectionIsAWarning(logging.Filter):
    """paho reports a dropped broker connection ("failed to receive on socket") at ERROR;
    the ingest waits it out and logs that itself, so it is a WARNING here: an operator's
    alarms that key on ERROR stay for what needs a person."""

    LOST = ("failed to receive on socket", "timeout on socket")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(self.LOST):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _paho_logger() -> logging.Logger:
    log = logging.getLogger("bonusd.mqtt")
    if not any(isinstance(f, _LostConnectionIsAWarning) for f in log.filters):
        log.addFilter(_LostConnectionIsAWarning())
    return log
