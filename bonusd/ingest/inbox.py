"""The ingest's inbox: what the broker has delivered and the consumer has not taken yet,
bounded in bytes per message and, for QoS 0, in messages.

- QoS 0 messages have no protocol bound (a flood of them arrives while Redis is stalled
  and nothing is committed): beyond `qos0_max` waiting, they are dropped, counted in
  `bonusd_messages_dropped_total{reason="inbox_full"}` and reported in a WARNING at
  most every `WARN_EVERY_S`.
- QoS 1 messages are bounded by the Receive Maximum the daemon sends in CONNECT, on a
  broker that keeps it. They are never dropped here: one refused would wait
  unacknowledged until the next session. (Mosquitto 2.0.11 was seen sending tens of
  thousands beyond it while Redis was down; a WARNING says so when it happens.)
- An oversize payload (the broker delivers up to the Maximum Packet Size the daemon
  sends, above the contract's limit) is kept as a stub of its first bytes with its size,
  enough to dead-letter it as `too_large`, never the whole of it.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

from bonusd.infra.metrics import Metrics

logger = logging.getLogger(__name__)

WARN_EVERY_S = 10.0


@dataclass(frozen=True, slots=True)
class Received:
    topic: str
    payload: bytes  # the first `stub_bytes` bytes when the message was larger
    mid: int
    qos: int
    arrived_mono: float
    size: int  # the payload's size as received


class Inbox:
    """A bounded FIFO of received messages (single event loop, no locks)."""

    def __init__(self, *, stub_bytes: int, qos1_max: int, qos0_max: int, metrics: Metrics):
        self._stub_bytes = stub_bytes
        self._qos1_max = qos1_max
        self._qos0_max = qos0_max
        self._metrics = metrics
        self._queue: deque[Received] = deque()
        self._qos0 = 0
        self._dropped_since_warning = 0
        self._warned_mono = -WARN_EVERY_S

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:
        return bool(self._queue)

    @property
    def oldest_mono(self) -> float | None:
        return self._queue[0].arrived_mono if self._queue else None

    def add(self, topic: str, payload: bytes, mid: int, qos: int, now: float) -> bool:
        """Keep one message; False if it was refused (counted and reported)."""
        if qos == 0 and self._qos0 >= self._qos0_max:
            self._drop("inbox_full", topic, now)
            return False
        if qos and len(self._queue) - self._qos0 >= self._qos1_max:
            self._warn("the broker sent more than Receive Maximum unacknowledged", topic, now)
        size = len(payload)
        if size > self._stub_bytes:
            payload = bytes(payload[: self._stub_bytes])
        self._queue.append(Received(topic, payload, mid, qos, now, size))
        self._qos0 += qos == 0
        return True

    def take(self, count: int) -> list[Received]:
        """The oldest `count` messages (or all), out of the inbox."""
        out = [self._queue.popleft() for _ in range(min(count, len(self._queue)))]
        self._qos0 -= sum(1 for m in out if m.qos == 0)
        return out

    def clear(self) -> None:
        """Forget everything (a new session: the broker redelivers what was unacknowledged)."""
        self._queue.clear()
        self._qos0 = 0

    def _drop(self, reason: str, topic: str, now: float) -> None:
        self._metrics.dropped.labels(reason).inc()
        self._dropped_since_warning += 1
        self._warn(
            f"{self._dropped_since_warning} message(s) refused since the last warning "
            f"({reason}; counted in bonusd_messages_dropped_total)",
            topic,
            now,
        )

    def _warn(self, what: str, topic: str, now: float) -> None:
        if now - self._warned_mono >= WARN_EVERY_S:
            logger.warning("inbox full: %s; the latest on %s", what, topic[:200])
            self._warned_mono = now
            self._dropped_since_warning = 0
