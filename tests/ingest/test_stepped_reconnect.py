"""The stepped publisher (`simulators.stepped`, the rehearsal's floor) rides out a broker
restart: a real Mosquitto is frozen with publishes in flight, restarted, and the publisher
reconnects with backoff and sends again only what was never acknowledged; the daemon
applies every event of the stream exactly once."""

from __future__ import annotations

import asyncio
import datetime as dt
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bonusd.clocks.clock import ManualClock
from bonusd.infra.backoff import Backoff
from bonusd.settings import Settings
from simulators import FloorConfig, build_floor, generate_events
from simulators.local.services import LocalMosquitto
from simulators.publish import parse_mqtt_url
from simulators.rawlink import RawLink
from simulators.stepped import Feeder
from simulators.wire import Encoder
from tests.daemon_helpers import SAST, running

START = dt.datetime(2026, 10, 3, 18, 0, tzinfo=SAST)
WINDOW = 40  # publishes in flight at most
END_MS = 2**62


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[LocalMosquitto]:
    """A broker of this test's own: restarting it disturbs nobody else."""
    with LocalMosquitto(tmp_path / "mq") as mq:
        yield mq  # type: ignore[misc]


async def _until(what: str, check: object, timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.02)
    assert check(), what  # type: ignore[operator]


async def test_the_stepped_publisher_reconnects_and_loses_nothing(
    settings: Settings, own_broker: LocalMosquitto
) -> None:
    floor = build_floor(FloorConfig(egms=12, tables=2, members=60), seed=3, as_of=START.date())
    events = list(generate_events(floor, seed=3, start=START, duration=dt.timedelta(minutes=20)))
    total = len(events)
    assert total > 10 * WINDOW
    cfg = settings.model_copy(update={"mqtt_url": own_broker.url, "backoff_max_s": 1.0})
    clock = ManualClock(START + dt.timedelta(minutes=25))
    async with running(cfg, clock) as d:
        link = RawLink(
            parse_mqtt_url(own_broker.url),
            client_id=f"stepped-{cfg.site}",
            max_inflight=WINDOW,
            backoff=Backoff(base=0.05, cap=0.5),
        )
        link.open()
        feeder = Feeder(events, link, Encoder(prefix=cfg.topic_prefix, site=cfg.site))
        half = total // 2
        assert feeder.until(END_MS, half)[0] == half
        assert link.drain(30.0) == 0
        await d.wait_committed(half, timeout=60)

        # freeze the broker: the rest fills the window and waits for PUBACKs that the
        # broker will never send on this connection
        assert own_broker.proc is not None
        own_broker.proc.send_signal(signal.SIGSTOP)
        rest: list[tuple[int, int]] = []
        worker = threading.Thread(target=lambda: rest.append(feeder.until(END_MS, total)))
        worker.start()
        await _until("the window filled", lambda: link.unacknowledged == WINDOW)
        in_flight = link.unacknowledged
        own_broker.proc.send_signal(signal.SIGTERM)  # a graceful restart: the daemon's
        own_broker.proc.send_signal(signal.SIGCONT)  # queued messages are kept on disk
        own_broker.restart()
        await asyncio.to_thread(worker.join, 120)
        assert rest == [(total, -1)]  # every event handed to the link
        assert await asyncio.to_thread(link.drain, 60.0) == 0
        link.close()

        assert link.reconnects >= 1
        assert link.sent == total
        assert link.resent <= in_flight  # only what was never acknowledged went again
        stats: dict[str, int] = {}
        async with asyncio.timeout(60):
            while stats.get("applied", 0) < total:
                await asyncio.sleep(0.05)
                stats = await d.service.store.stats()
        assert stats["applied"] == total  # none lost, none applied twice
