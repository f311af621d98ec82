"""One stream of the live push and its subscribers: the view, epoch, sequence number and
ring of recent deltas (for `resume`), and each subscriber's bounded queue.

A change is serialised once (msgspec) and the same text is offered to every subscriber's
queue without waiting. A subscriber whose queue is full is dropped to a fresh snapshot
(its queue becomes one "send the snapshot" marker; deltas the snapshot covers are then
skipped); one whose queue fills again before its connection took anything off it is
kicked (closed 4429 by its connection), as is one whose token is revoked or expires
(4401). Every message carries the daemon's clock as of its writing (`clock`,
`bonusd.push.clockstate`); a snapshot's is written at each send, as the rest of it may be
a tick old. No I/O here: `bonusd.push.hub` drives the streams, `bonusd.api.push` drains
the queues into websockets.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from bonusd.push.crewview import crew_events, crew_view
from bonusd.push.views import Inputs, View, signage_events, signage_view

STRIKES = 2  # overflows in a row, with nothing drained between, that kick a subscriber
SHUTDOWN, TOO_SLOW = 1001, 4429
REVOKED = EXPIRED = 4401  # the token a connection was opened with is no longer valid
Item = tuple[int | None, str] | None
"""(seq, text) of a delta, (None, text) of a ping, None: send a fresh snapshot."""
ClockMessage = Callable[[], dict[str, Any]]
"""The `clock` object of a message written now (`ClockWatch.message`)."""
_encoder = msgspec.json.Encoder()


def encode(message: dict[str, Any]) -> str:
    """One message as the JSON text every subscriber receives."""
    return _encoder.encode(message).decode()


@dataclass
class PushStats:
    resyncs: int = 0  # subscribers dropped to a snapshot
    kicked: int = 0  # subscribers closed for not draining


class Subscriber:
    """One connection's place on a stream: the queue the hub fills and its sender drains."""

    def __init__(self, stream: Stream, size: int, stats: PushStats, *, token_id: str = "") -> None:
        self.stream, self.stats = stream, stats
        self.token_id = token_id  # the token the connection was opened with
        self.queue: asyncio.Queue[Item] = asyncio.Queue(size)
        self.kicked = asyncio.Event()
        self.code, self.reason = 1000, ""
        self.strikes = 0
        self.sent_seq = -1

    def offer(self, item: Item) -> None:
        """Queue a message without ever waiting: on overflow the queue is replaced by one
        snapshot; a second overflow with nothing drained since kicks the subscriber."""
        if self.kicked.is_set():
            return
        try:
            self.queue.put_nowait(item)
            return
        except asyncio.QueueFull:
            self.strikes += 1
        if self.strikes >= STRIKES:
            self.kick(TOO_SLOW, "too slow: the connection is not draining; reconnect")
            return
        self.stats.resyncs += 1
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)

    def kick(self, code: int, reason: str) -> None:
        """Leave the stream now; the connection closes with `code`."""
        self.stream.subscribers.discard(self)
        self.code, self.reason = code, reason
        self.kicked.set()
        if code == TOO_SLOW:
            self.stats.kicked += 1

    async def next_text(self) -> str:
        """The next text to send (a delta already covered by a snapshot is skipped)."""
        while True:
            item = await self.queue.get()
            self.strikes = 0  # the connection drains
            if item is None:
                self.sent_seq, text = self.stream.snapshot()
                return text
            seq, text = item
            if seq is None:
                return text
            if seq > self.sent_seq:
                self.sent_seq = seq
                return text


class Stream:
    """One stream's view, sequence, recent deltas and subscribers."""

    def __init__(self, key: str, area: str, ring: int, clock: ClockMessage | None = None) -> None:
        self.key, self.area = key, area
        self.clock: ClockMessage = clock or dict
        self.crew = key.startswith("crew:")
        self.epoch = uuid.uuid4().hex[:16]
        self.seq = 0
        self.view: View | None = None
        self.at = ""
        self.ring: deque[tuple[int, str]] = deque(maxlen=ring)
        self.subscribers: set[Subscriber] = set()
        self.idle = 0  # ticks without subscribers
        self.spoke = 0  # the tick of the last delta or ping
        self._snapshot: tuple[int, str, str] | None = None  # seq, at, text

    def compute(self, inputs: Inputs) -> View:
        return crew_view(inputs) if self.crew else signage_view(inputs, self.area)

    def snapshot(self) -> tuple[int, str]:
        """(seq, text) of the whole view now; the view serialised once per change and
        tick, the clock at each call (the screen learns the daemon's time from it)."""
        cached = self._snapshot
        if cached is None or cached[0] != self.seq or cached[1] != self.at:
            text = encode(
                {
                    "type": "snapshot",
                    "stream": self.key,
                    "epoch": self.epoch,
                    "seq": self.seq,
                    "at": self.at,
                    "state": self.view or {},
                }
            )
            cached = self._snapshot = (self.seq, self.at, text)
        return cached[0], f'{cached[2][:-1]},"clock":{encode(self.clock())}}}'

    def advance(self, view: View, at: str) -> bool:
        """Take the new view; send the changed sections (and cues) as the next delta."""
        self.at = at
        old = self.view
        changed = {k: v for k, v in view.items() if old is None or old.get(k) != v}
        events = (crew_events if self.crew else signage_events)(old, view)
        self.view = view
        if old is not None and not changed and not events:
            return False
        self._send(at, changed, events)
        return True

    def clock_moved(self, at: str, *, went_back: bool) -> None:
        """The clock jumped, paused, resumed or changed speed: a delta saying so alone.
        A clock that went back sends every subscriber a fresh snapshot after it (a page
        never shows time running backwards otherwise)."""
        if self.view is None:
            return  # nothing sent yet: the first snapshot carries the clock
        self.at = at
        self._send(at, {}, [])
        if went_back:
            for sub in list(self.subscribers):
                sub.offer(None)

    def _send(self, at: str, changed: View, events: list[dict[str, Any]]) -> None:
        self.seq += 1
        delta = {"type": "delta", "stream": self.key, "epoch": self.epoch, "seq": self.seq}
        text = encode(delta | {"at": at, "clock": self.clock(), "set": changed, "events": events})
        self.ring.append((self.seq, text))
        for sub in list(self.subscribers):
            sub.offer((self.seq, text))

    def ping(self, at: str) -> None:
        self.at = at
        ping = {"type": "ping", "stream": self.key, "seq": self.seq, "at": at}
        text = encode(ping | {"clock": self.clock()})
        for sub in list(self.subscribers):
            sub.offer((None, text))

    def replay(self, epoch: str, seq: int) -> list[tuple[int, str]] | None:
        """The deltas after `seq`, or None when they are not all here (a snapshot then)."""
        if epoch != self.epoch or not 0 <= seq <= self.seq:
            return None
        if seq == self.seq:
            return []
        if not self.ring or self.ring[0][0] > seq + 1:
            return None
        return [(s, t) for s, t in self.ring if s > seq]
