"""MQTT ingest: telemetry from the broker into the floor store, exactly once, in batches.

The broker keeps a persistent MQTT v5 session for the daemon (fixed client id, clean start
off, a session expiry), so what is published while the daemon is down waits for it. Every
message is acknowledged to the broker only after its effect (or its dead letter) is
committed in Redis; a crash before that means redelivery, and redelivery is harmless
because the store applies each event once (by its id, or its device's epoch and seq).

Speed comes from batching below aiomqtt's per-message iterator: paho hands each message
to a callback that only appends it to a bounded inbox (bonusd/ingest/inbox.py), and the
consumer applies whatever has arrived in one Lua call, then acknowledges it all.

One hostile message never stops the floor: the decoder never raises; a batch whose
application fails for a reason that is not an outage is applied in halves down to the
message that fails, which is dead-lettered (`unprocessable`) and acknowledged; and any
other exception ends the session, is logged with the topics and devices in hand, and the
ingest connects again after a backoff. While connected, the broker is pinged when it has
been quiet for a second and counts as alive for /health only while it answers
(bonusd/ingest/liveness.py; docs/security.md, "One hostile message on a floor topic").
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from bonusd.clocks.clock import Clock
from bonusd.floor.store import BatchResult, DeadLetter, FloorStore, Origin
from bonusd.floor.telemetry import FloorEvent, Reason, Rejection, TelemetryDecoder
from bonusd.infra.backoff import Backoff, pause
from bonusd.infra.health import Health
from bonusd.infra.metrics import Metrics
from bonusd.ingest.faults import (
    describe,
    disconnection_seen,
    first_of,
    is_outage,
    until_disconnected,
    where,
)
from bonusd.ingest.inbox import Inbox, Received
from bonusd.ingest.liveness import confirm_alive
from bonusd.ingest.target import MqttTarget, paho_logger

logger = logging.getLogger(__name__)

DRAIN_DEADLINE_S = 5.0
# Room above the contract's payload limit in the Maximum Packet Size the daemon sends in
# CONNECT: the topic, the fixed header and any properties. The broker never sends the
# daemon a bigger packet (MQTT v5, 3.1.2.11.4), so a 10 MB publish costs it nothing;
# an oversize payload below this still arrives, and is dead-lettered as `too_large`.
PACKET_HEADROOM = 4096


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
        self._max_packet = decoder.limits.max_payload_bytes + PACKET_HEADROOM
        self._inbox = Inbox(
            stub_bytes=decoder.limits.max_payload_bytes,
            qos1_max=receive_maximum,
            qos0_max=batch_max,
            metrics=metrics,
        )
        self._arrived = asyncio.Event()
        self._in_hand: Sequence[Received] = ()  # the batch being committed, for the logs
        self.committed = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, consume, and on any failure connect again after a jittered backoff:
        a lost broker is a WARNING; anything else is a fault, logged as an ERROR with
        the topics and devices in hand, and the ingest carries on all the same."""
        backoff = Backoff(cap=self._backoff_max_s)
        while not stop.is_set():
            lost: list[Exception] = []
            failed: list[Exception] = []
            try:
                await self._session(stop)
            except* aiomqtt.MqttError as group:
                lost.append(first_of(group))
            except* Exception as group:
                failed.append(first_of(group))
            finally:
                self._health.mqtt_connected = False
                self._health.mqtt_alive_mono = None
            if not lost and not failed:
                backoff.reset()
                continue
            problem = lost[0] if lost else failed[0]
            self._health.mqtt_error = str(problem) or type(problem).__name__
            self._metrics.connected.labels("mqtt").set(0)
            self._metrics.reconnects.labels("mqtt").inc()
            delay = backoff.next_delay()
            if failed:
                logger.error(
                    "ingest failed while holding %s; %d message(s) left unacknowledged for "
                    "redelivery; connecting again in %.1fs",
                    where(self._in_hand),
                    len(self._in_hand) + len(self._inbox),
                    delay,
                    exc_info=failed[0],
                )
            else:
                logger.warning(
                    "MQTT broker %s:%s unreachable or lost (%s); retrying in %.1fs",
                    self._target.host,
                    self._target.port,
                    problem,
                    delay,
                )
            self._in_hand = ()
            await pause(stop, delay)

    def _client(self) -> aiomqtt.Client:
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = self._session_expiry_s
        props.ReceiveMaximum = self._receive_maximum
        props.MaximumPacketSize = self._max_packet
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
            logger=paho_logger(),
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
        if self._inbox.add(message.topic, message.payload, message.mid, message.qos, now):
            if self._health.oldest_pending_mono is None:
                self._health.oldest_pending_mono = now
            self._health.pending = len(self._inbox) + len(self._in_hand)
            self._arrived.set()

    async def _session(self, stop: asyncio.Event) -> None:
        client = self._client()
        self._inbox.clear()  # unacknowledged leftovers are redelivered by the broker
        self._in_hand = ()
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
                    watcher = tg.create_task(until_disconnected(client))
                    liveness = tg.create_task(confirm_alive(client._client, self._health))
                    consumer = tg.create_task(self._consume(client, stop))
                    await stop.wait()
                    self._arrived.set()  # wake the consumer: it commits what it holds
                    try:
                        await asyncio.wait_for(asyncio.shield(consumer), DRAIN_DEADLINE_S)
                    except TimeoutError:
                        logger.warning("ingest did not drain in %ss; cancelling", DRAIN_DEADLINE_S)
                        consumer.cancel()
                    watcher.cancel()
                    liveness.cancel()
        finally:
            disconnection_seen(client)
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
            batch = self._inbox.take(self._batch_max)
            self._in_hand = batch
            result = await self._commit(batch, stop)
            if result is None:
                return
            for msg in batch:
                if msg.qos:
                    paho.ack(msg.mid, msg.qos)
            self._in_hand = ()
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
        """Decode and apply `batch`; None if `stop` came while Redis was away."""
        now = self._clock.now()
        now_ms = int(now.timestamp() * 1000)  # arrival on the floor clock, to the ms
        items = [(msg, self._decode(msg, now, now_ms)) for msg in batch]
        return await self._apply(items, now_ms, stop)

    def _decode(self, msg: Received, now: dt.datetime, now_ms: int) -> FloorEvent | DeadLetter:
        try:
            decoded = self._decoder.decode(msg.topic, msg.payload, now, size=msg.size)
        except Exception as exc:
            logger.error("decoding the message on %s failed", where([msg]), exc_info=exc)
            decoded = Rejection(Reason.UNPROCESSABLE, f"decoding failed: {describe(exc)}")
        if isinstance(decoded, Rejection):
            return DeadLetter(decoded.reason, msg.topic, msg.payload, decoded.detail, now_ms)
        return decoded

    async def _apply(
        self,
        items: list[tuple[Received, FloorEvent | DeadLetter]],
        now_ms: int,
        stop: asyncio.Event,
    ) -> BatchResult | None:
        """Apply a batch. If that fails for a reason other than an outage, apply its
        halves, down to the one message that fails, which is dead-lettered instead."""
        events = [x for _, x in items if isinstance(x, FloorEvent)]
        dead = [x for _, x in items if isinstance(x, DeadLetter)]
        origins = [(m.topic, m.payload, now_ms) for m, x in items if isinstance(x, FloorEvent)]
        try:
            return await self._apply_waiting(events, dead, stop, origins)
        except Exception as exc:
            if len(items) > 1:
                half = len(items) // 2
                first = await self._apply(items[:half], now_ms, stop)
                second = None if first is None else await self._apply(items[half:], now_ms, stop)
                if first is None or second is None:
                    return None
                return first + second
            return await self._dead_letter_failed(items[0][0], exc, now_ms, stop)

    async def _dead_letter_failed(
        self, msg: Received, exc: Exception, now_ms: int, stop: asyncio.Event
    ) -> BatchResult | None:
        """One message whose application failed: its dead letter (without the payload if
        even that fails), or, as the very last resort, a count and an ERROR."""
        logger.warning(
            "applying the message on %s failed (%s); dead-lettered as unprocessable",
            where([msg]),
            describe(exc),
        )
        detail = f"applying it failed: {describe(exc)}"
        for payload in (msg.payload, b""):
            letter = DeadLetter(Reason.UNPROCESSABLE, msg.topic, payload, detail, now_ms)
            try:
                return await self._apply_waiting([], [letter], stop)
            except Exception as again:
                failure = again
        logger.error(
            "the message on %s could not be dead-lettered either (%s); acknowledged and "
            'counted in bonusd_messages_dropped_total{reason="unrecordable"}',
            where([msg]),
            describe(failure),
        )
        self._metrics.dropped.labels("unrecordable").inc()
        return BatchResult(0, 0, 0)

    async def _apply_waiting(
        self,
        events: list[FloorEvent],
        dead: list[DeadLetter],
        stop: asyncio.Event,
        origins: list[Origin] | None = None,
    ) -> BatchResult | None:
        """`store.apply_batch`, retried while Redis is away or busy; None if `stop` came
        meanwhile. Any other exception is the batch's own and is raised."""
        backoff = Backoff(cap=self._backoff_max_s)
        while True:
            try:
                result = await self._store.apply_batch(events, dead, origins)
            except Exception as exc:
                if not is_outage(exc):
                    raise
                if self._health.redis_ok or backoff.attempt == 0:
                    self._metrics.reconnects.labels("redis").inc()
                self._health.redis_ok = False
                self._health.redis_error = str(exc)
                self._metrics.connected.labels("redis").set(0)
                delay = backoff.next_delay()
                logger.warning(
                    "Redis unavailable (%s); %d message(s) held unacknowledged, retry in %.1fs",
                    exc,
                    len(events) + len(dead),
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
            for letter in dead:
                self._metrics.dead_letters.labels(letter.reason.value).inc()
                logger.debug(
                    "dead letter %s on %s: %s", letter.reason.value, letter.topic, letter.detail
                )
            for reason in result.refused:  # v2 events the sequence check refused
                self._metrics.dead_letters.labels(reason.value).inc()
            return result

    def _after_commit(self, batch: list[Received], result: BatchResult) -> None:
        done = time.monotonic()
        self.committed += len(batch)
        metrics = self._metrics
        metrics.events_applied.inc(result.applied)
        metrics.duplicates.inc(result.duplicates)
        metrics.sequence_gaps.inc(result.gaps)
        metrics.batch_size.observe(len(batch))
        for msg in batch:
            metrics.ingest_latency.observe(done - msg.arrived_mono)
        self._health.last_commit_mono = done
        self._health.pending = len(self._inbox)
        self._health.oldest_pending_mono = self._inbox.oldest_mono
        if self._on_commit is not None:
            self._on_commit(batch, result, done)
