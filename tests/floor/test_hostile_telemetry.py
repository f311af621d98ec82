"""Hostile telemetry against a running daemon over the real broker (issue 14).

- The corpus of `tests/hostile_corpus.py`, interleaved with good events: every good event
  is applied exactly once, every bad one is dead-lettered with its reason, the daemon
  stays up and `/health` says `ok` throughout (nothing is wrong with the floor).
- What is over the broker's packet limit (100,000 levels, 10 MB) is refused at the
  broker's door: its publisher is disconnected and the daemon never sees it.
- A poison message queued in the daemon's persistent session while it is down costs one
  dead letter at the next start, not the daemon.
- A message whose application fails (not an outage) is dead-lettered as
  `unprocessable` and the rest of its batch is applied; an unexpected exception in the
  ingest is logged with the topics and devices in hand, the ingest connects again and
  the unacknowledged messages are applied exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from bonusd.clocks.clock import ManualClock
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import FloorEvent, Reason
from bonusd.ingest.consumer import Ingest
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import Daemon, running
from tests.hostile_corpus import CORPUS, OVER_THE_PACKET_LIMIT, body, text
from tests.telemetry_helpers import Publisher

DAY = "2026-10-03"


class HealthWatch:
    """Polls /health every 50 ms while the test runs and keeps every answer."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.seen: list[dict[str, Any]] = []

    async def run(self) -> None:
        while True:
            self.seen.append(await self.daemon.get("/health"))
            await asyncio.sleep(0.05)

    def not_ok(self) -> list[dict[str, Any]]:
        return [
            h
            for h in self.seen
            if (h["status"], h["mqtt"], h["ingest"]) != ("ok", "connected", "ok")
        ]


@contextlib.asynccontextmanager
async def watching(daemon: Daemon) -> AsyncIterator[HealthWatch]:
    watch = HealthWatch(daemon)
    task = asyncio.create_task(watch.run())
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def good(n: int, card: str = "9001") -> dict[str, Any]:
    return body(id=f"good-{card}-{n}", card=card, wager_cents=100 + n, points=1)


async def _letters(d: Daemon, n: int) -> list[dict[str, str]]:
    return list(reversed(await d.get(f"/deadletters?count={n}")))


async def test_the_hostile_corpus_costs_dead_letters_and_nothing_else(
    daemon: Daemon, broker: LocalMosquitto, site: str
) -> None:
    pub = Publisher(broker, site)

    def publish() -> None:  # in a thread: the daemon and the health watch run meanwhile
        for n, bad in enumerate(CORPUS):
            pub.send(f"bonusd/{site}/{bad.topic_tail}", bad.payload)
            pub.send(pub.topic("egm", "EGM-0002"), text(good(n)))

    try:
        async with watching(daemon) as watch:
            await asyncio.to_thread(publish)
            await daemon.wait_committed(2 * len(CORPUS), timeout=60)
        assert len(watch.seen) > 1, "the health watch never answered"
        assert watch.not_ok() == []
    finally:
        pub.close()
    letters = await _letters(daemon, len(CORPUS))
    assert [(x["reason"], x["topic"]) for x in letters] == [
        (h.reason.value, f"bonusd/{site}/{h.topic_tail}") for h in CORPUS
    ]
    assert all(x["detail"].strip() for x in letters)
    day = await daemon.get(f"/members/9001/days/{DAY}")
    assert day["games"] == len(CORPUS)  # each good event exactly once
    assert day["spend_cents"] == sum(100 + n for n in range(len(CORPUS)))
    health = await daemon.get("/health")
    assert (health["status"], health["mqtt"], health["pending_messages"]) == ("ok", "connected", 0)


def _publish_oversize(broker: LocalMosquitto, topic: str, payload: bytes) -> bool:
    """Publish `payload` at QoS 1 from a client of its own (MQTT v5); True if the broker
    disconnected it for it."""
    gone = threading.Event()
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5, reconnect_on_failure=False
    )
    client.on_disconnect = lambda *_: gone.set()
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        client.publish(topic, payload, qos=1)
        return gone.wait(10)
    finally:
        client.disconnect()
        client.loop_stop()


async def test_what_is_over_the_packet_limit_is_refused_at_the_broker(
    daemon: Daemon, broker: LocalMosquitto, site: str
) -> None:
    pub = Publisher(broker, site)
    try:
        async with watching(daemon) as watch:
            for n, bad in enumerate(OVER_THE_PACKET_LIMIT):
                topic = f"bonusd/{site}/{bad.topic_tail}"
                assert await asyncio.to_thread(_publish_oversize, broker, topic, bad.payload)
                pub.send(pub.topic("egm", "EGM-0002"), text(good(n, card="9002")))
            await daemon.wait_committed(len(OVER_THE_PACKET_LIMIT))
        assert watch.not_ok() == []
    finally:
        pub.close()
    assert await _letters(daemon, 10) == []  # it never reached the daemon
    assert (await daemon.get(f"/members/9002/days/{DAY}"))["games"] == len(OVER_THE_PACKET_LIMIT)
    assert "disconnected due to oversize packet" in broker.log_path.read_text(errors="replace")


# -- a poison message waiting in the persistent session ---------------------------------

POISON = ('{"x":' + "[" * 1000 + "]" * 1000 + "}").encode()  # the issue's, byte for byte


async def test_a_poison_message_queued_while_down_is_dead_lettered_at_start(
    settings: Settings, broker: LocalMosquitto, site: str, clock: ManualClock
) -> None:
    async with running(settings, clock):
        pass  # the daemon's persistent session now exists, and the daemon is down
    pub = Publisher(broker, site)
    try:
        pub.send(pub.topic("egm", "EGM-0001"), POISON)
        pub.send(pub.topic("egm", "EGM-0001"), text(good(1, card="9003")))
        async with running(settings, clock) as d:
            await d.wait_committed(2)
            pub.send(pub.topic("egm", "EGM-0001"), text(good(2, card="9003")))
            await d.wait_committed(3)
            letters = await _letters(d, 5)
            assert [(x["reason"], x["topic"]) for x in letters] == [
                (Reason.TOO_DEEP.value, f"bonusd/{site}/egm/EGM-0001/events")
            ]
            assert "1001 levels" in letters[0]["detail"]
            assert (await d.get(f"/members/9003/days/{DAY}"))["games"] == 2
            health = await d.get("/health")
            assert (health["status"], health["mqtt"]) == ("ok", "connected")
    finally:
        pub.close()
    # acknowledged: a third start receives nothing again
    async with running(settings, clock) as d:
        await asyncio.sleep(0.5)
        assert d.service.ingest.committed == 0


# -- a message whose application fails ---------------------------------------------------


def _failing_for(store: FloorStore, bad_id: str) -> Callable[..., Any]:
    """`store.apply_batch`, raising (as a bug in a rule would) for any batch holding
    the event `bad_id`."""
    real = store.apply_batch

    async def apply_batch(events: list[FloorEvent], dead: list[Any], origins: Any = None) -> Any:
        if any(e.id == bad_id for e in events):
            raise ValueError(f"a rule cannot take event {bad_id}")
        return await real(events, dead, origins)

    return apply_batch


async def test_a_message_that_fails_to_apply_is_dead_lettered_and_its_batch_goes_on(
    daemon: Daemon, broker: LocalMosquitto, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = daemon.service.store
    monkeypatch.setattr(store, "apply_batch", _failing_for(store, "boom"))
    ingest = daemon.service.ingest
    # hold the consumer so that the messages arrive together and make one batch
    gate = asyncio.Event()
    real_commit = ingest._commit

    async def held(batch: list[Any], stop: asyncio.Event) -> Any:
        await gate.wait()
        return await real_commit(batch, stop)

    monkeypatch.setattr(ingest, "_commit", held)
    pub = Publisher(broker, site)
    try:
        pub.send(pub.topic("egm", "EGM-0001"), text(good(0, card="9004")))
        for n in range(1, 9):
            event = body(id="boom", card="9004") if n == 4 else good(n, card="9004")
            pub.send(pub.topic("egm", "EGM-0007"), text(event))
        await asyncio.sleep(0.3)
        gate.set()
        await daemon.wait_committed(9)
    finally:
        pub.close()
    letters = await _letters(daemon, 5)
    assert [(x["reason"], x["topic"]) for x in letters] == [
        (Reason.UNPROCESSABLE.value, f"bonusd/{site}/egm/EGM-0007/events")
    ]
    assert "ValueError: a rule cannot take event boom" in letters[0]["detail"]
    assert '"id": "boom"' in letters[0]["payload"]
    assert (await daemon.get(f"/members/9004/days/{DAY}"))["games"] == 8
    assert (await daemon.get("/health"))["status"] == "ok"


async def test_an_unexpected_exception_restarts_the_ingest_and_loses_nothing(
    daemon: Daemon,
    broker: LocalMosquitto,
    site: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ingest: Ingest = daemon.service.ingest
    real_commit = ingest._commit
    failures = [RuntimeError("a bug in the ingest")]

    async def once(batch: list[Any], stop: asyncio.Event) -> Any:
        if failures:
            raise failures.pop()
        return await real_commit(batch, stop)

    monkeypatch.setattr(ingest, "_commit", once)
    monkeypatch.setattr(ingest, "_backoff_max_s", 0.2)
    pub = Publisher(broker, site)
    try:
        with caplog.at_level(logging.WARNING, logger="bonusd.ingest.consumer"):
            pub.send(pub.topic("egm", "EGM-0009"), text(good(0, card="9005")))
            await daemon.wait_committed(1)
            pub.send(pub.topic("egm", "EGM-0009"), text(good(1, card="9005")))
            await daemon.wait_committed(2)
    finally:
        pub.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert f"bonusd/{site}/egm/EGM-0009/events" in errors[0].getMessage()
    assert "device 'EGM-0009'" in errors[0].getMessage()
    assert errors[0].exc_info is not None
    assert (await daemon.get(f"/members/9005/days/{DAY}"))["games"] == 2
    async with asyncio.timeout(5):
        while (await daemon.get("/health"))["mqtt"] != "connected":
            await asyncio.sleep(0.05)
