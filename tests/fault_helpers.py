"""Helpers of the fault tests (`test_faults_*.py`): a telemetry burst whose publisher
outlives a broker restart, and the expected totals to compare the floor with.

A burst is a fixed list of game events with unique ids (contract v1), or numbered per
device in one epoch (v2, sent in reverse within each window of the publisher: reordered
inside the de-duplication window). Its publisher (paho, QoS 1) republishes any message
the broker did not acknowledge, unchanged, until it is acknowledged: a broker restart
can make it send one twice, never lose one. The daemon must still apply each exactly
once.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt
import redis.asyncio as aioredis
from paho.mqtt.enums import CallbackAPIVersion

from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import Daemon

WINDOW = 200  # messages in flight before the publisher waits for their acknowledgements


@dataclass(frozen=True)
class Game:
    id: str
    card: str
    device: str
    wager_cents: int
    points: int
    seq: int  # its number among its device's games, from 1 (contract v2)


class Burst:
    """`n` game events of `cards` cards on `cards` EGMs, with timestamps from `start`; in
    `contract` v2 the epoch of every device is `tag`."""

    def __init__(
        self, site: str, n: int, cards: int, start: dt.datetime, *, tag: str, contract: str = "v1"
    ) -> None:
        self.site = site
        self.start = start
        self.tag = tag
        self.v2 = contract == "v2"
        self.games = [
            Game(
                id=f"{tag}-{i}",
                card=str(7000 + i % cards),
                device=f"EGM-{i % cards}",
                wager_cents=100 + i % 7,
                points=1 + i % 3,
                seq=i // cards + 1,
            )
            for i in range(n)
        ]
        self.cards = sorted({g.card for g in self.games})
        self.republished = 0  # messages sent again because no acknowledgement came

    def payload(self, i: int) -> tuple[str, str]:
        g = self.games[i]
        ts = (self.start + dt.timedelta(milliseconds=i)).isoformat(timespec="milliseconds")
        identity = {"epoch": self.tag, "seq": g.seq} if self.v2 else {"id": g.id}
        body = {
            **identity,
            "type": "game",
            "ts": ts,
            "card": g.card,
            "wager_cents": g.wager_cents,
            "win_cents": 0,
            "points": g.points,
        }
        return f"bonusd/{self.site}/egm/{g.device}/events", json.dumps(body)

    def totals(self) -> dict[str, int]:
        return {
            "games": len(self.games),
            "spend_cents": sum(g.wager_cents for g in self.games),
            "slots_points": sum(g.points for g in self.games),
        }


class BurstPublisher:
    """Publishes slices of a burst; survives the broker going away and coming back."""

    def __init__(self, broker: LocalMosquitto, burst: Burst) -> None:
        self.burst = burst
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"burst-{burst.site}")
        self.client.max_inflight_messages_set(WINDOW)
        self.client.max_queued_messages_set(0)
        self.client.reconnect_delay_set(0.05, 0.5)
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()

    def publish(self, first: int, stop: int, timeout: float = 120) -> None:
        """Publish games [first, stop), each until the broker acknowledged it."""
        deadline = time.monotonic() + timeout
        for lo in range(first, stop, WINDOW):
            todo = list(range(lo, min(lo + WINDOW, stop)))
            if self.burst.v2:  # each device's few events of the window, newest first
                todo.reverse()
            while todo:
                assert time.monotonic() < deadline, f"{len(todo)} message(s) never acknowledged"
                infos = [(i, self.client.publish(*self.burst.payload(i), qos=1)) for i in todo]
                missing = []
                window_ends = time.monotonic() + 3
                for i, info in infos:
                    published = False
                    # paho raises from both calls when the publish found no connection
                    with contextlib.suppress(RuntimeError, ValueError):
                        info.wait_for_publish(max(0.0, window_ends - time.monotonic()))
                        published = info.is_published()
                    if not published:
                        missing.append(i)
                if missing:
                    self.burst.republished += len(missing)
                    time.sleep(0.1)
                todo = missing

    def close(self) -> None:
        # disconnect first: it wakes the network thread, which loop_stop() otherwise
        # waits for until its 1 s select times out
        self.client.disconnect()
        self.client.loop_stop()


def in_thread(target: object, *args: object) -> threading.Thread:
    """Run `target(*args)` in a started thread; its exception fails `join_checked`."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target(*args)  # type: ignore[operator]
        except BaseException as exc:
            errors.append(exc)
            raise

    thread = threading.Thread(target=run, daemon=True)
    thread.errors = errors  # type: ignore[attr-defined]
    thread.start()
    return thread


def join_checked(thread: threading.Thread, timeout: float = 120) -> None:
    thread.join(timeout)
    assert not thread.is_alive(), "the publisher did not finish"
    errors: list[BaseException] = thread.errors  # type: ignore[attr-defined]
    if errors:
        raise errors[0]


async def health_reaches(d: Daemon, field: str, value: str, timeout: float = 30) -> dict[str, Any]:
    """/health once its `field` says `value` (TimeoutError after `timeout`)."""
    async with asyncio.timeout(timeout):
        while (health := await d.get("/health"))[field] != value:
            await asyncio.sleep(0.05)
    return health


async def site_stat(r: aioredis.Redis, site: str, field: str) -> int:
    """One counter of the site's stats hash."""
    return int(await r.hget(f"bonusd:{{{site}}}:stats", field) or 0)


async def floor_totals(d: Daemon, burst: Burst) -> dict[str, int]:
    """The burst's day totals as the daemon's API reports them, summed over its cards."""
    day = d.service.calendar.gaming_day(burst.start).isoformat()
    out = {"games": 0, "spend_cents": 0, "slots_points": 0}
    for card in burst.cards:
        totals = await d.get(f"/members/{card}/days/{day}")
        for k in out:
            out[k] += totals[k]
    return out
