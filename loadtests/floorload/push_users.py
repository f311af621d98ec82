"""Websocket users: floor signage screens and crew handhelds (protocol: docs/push.md).

A user opens `/ws/signage?area=A` (a screen, its area's signage token) or `/ws/crew` (a
handheld, a crew token), sends the token as its first frame and reads the snapshot, then
deltas and pings. It holds the connection for a while (`screen_hold`), then reconnects
with `resume` as a screen that lost its network would. A handheld also loads
`/floor/active?kind=egm` over HTTP at each start, as the crew page does.

Requests in locust's statistics (type `WS`):
- `{stream} connect -> snapshot`: from opening the socket to the snapshot read;
- `{stream} resume`: opening the socket and sending the resume frame;
- `{stream} delta` / `{stream} ping` / `{stream} snapshot`: one per message received,
  response time 0 (counts and bytes only: the server's `at` is the floor's clock, not a
  send time);
- failures: a refused or dropped connection (with its close code), a gap in `seq`, and
  silence for 35 s (pings come every 10 s; the pages reconnect after 35 s, as here).
"""

from __future__ import annotations

import contextlib
import json
import random
import struct
import time
from typing import Any

import websocket
from locust import FastHttpUser, constant, task

from floorload.config import from_environment

CFG = from_environment()
SILENCE_S = 35.0  # as the pages' stream client (displays/stream.js): then it reconnects


class StreamFailure(Exception):
    """What went wrong with a stream, as locust records it."""


class _Stream(FastHttpUser):
    """One websocket client of the push; reconnects with resume after each hold."""

    abstract = True
    host = CFG.http_base or "http://127.0.0.1"
    wait_time = constant(0)
    label = "stream"

    def on_start(self) -> None:
        self.ws: websocket.WebSocket | None = None
        self.epoch: str | None = None
        self.seq = 0

    def url(self) -> str:
        raise NotImplementedError

    def token(self) -> str:
        raise NotImplementedError

    def after_snapshot(self) -> None:
        """What the page does once it has its first snapshot."""

    def _fire(self, name: str, started: float, length: int, exc: Exception | None) -> None:
        self.environment.events.request.fire(
            request_type="WS",
            name=f"{self.label} {name}",
            response_time=(time.perf_counter() - started) * 1000 if started else 0,
            response_length=length,
            exception=exc,
            context={},
        )

    @task
    def session(self) -> None:
        try:
            self._open()
            hold_until = time.monotonic() + random.uniform(*CFG.screen_hold)
            while time.monotonic() < hold_until:
                if not self._receive(hold_until):
                    break
        except (OSError, websocket.WebSocketException, StreamFailure) as exc:
            self._fire("connection", 0, 0, exc)
            time.sleep(1.0)
        finally:
            self._close()

    def _open(self) -> None:
        started = time.perf_counter()
        ws = websocket.create_connection(self.url(), timeout=SILENCE_S)
        self.ws = ws
        hello: dict[str, Any] = {"token": self.token()}
        if self.epoch is not None:
            hello["resume"] = {"epoch": self.epoch, "seq": self.seq}
        ws.send(json.dumps(hello))
        if self.epoch is not None:
            self._fire("resume", started, 0, None)
            return
        text = self._recv_text(time.monotonic() + SILENCE_S)
        message = json.loads(text)
        if message.get("type") != "snapshot":
            raise StreamFailure(f"expected a snapshot first, got {message.get('type')}")
        self.epoch, self.seq = message["epoch"], int(message["seq"])
        self._fire("connect -> snapshot", started, len(text), None)
        self.after_snapshot()

    def _recv_text(self, until: float) -> str:
        assert self.ws is not None
        self.ws.settimeout(max(0.05, until - time.monotonic()))
        opcode, data = self.ws.recv_data()
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1005
            reason = data[2:].decode(errors="replace")
            self.epoch = None if code in (4401, 4403, 4400) else self.epoch
            raise StreamFailure(f"closed by the server: {code} {reason}".strip())
        return data.decode() if isinstance(data, bytes) else str(data)

    def _receive(self, hold_until: float) -> bool:
        """Read one message; False when the hold ended first."""
        silent_until = time.monotonic() + SILENCE_S
        try:
            text = self._recv_text(min(silent_until, hold_until))
        except websocket.WebSocketTimeoutException:
            if time.monotonic() >= silent_until - 0.01:
                raise StreamFailure(f"nothing received for {SILENCE_S:.0f} s") from None
            return False
        message = json.loads(text)
        kind = message.get("type")
        if kind == "snapshot":
            self.epoch, self.seq = message["epoch"], int(message["seq"])
        elif kind == "delta":
            seq = int(message["seq"])
            if seq != self.seq + 1:
                self.seq = seq
                self._fire("delta", 0, len(text), StreamFailure("gap in seq"))
                return True
            self.seq = seq
        elif kind == "ping" and int(message.get("seq", self.seq)) > self.seq:
            self._fire("ping", 0, len(text), StreamFailure("a ping shows a missed delta"))
            return True
        self._fire(str(kind), 0, len(text), None)
        return True

    def _close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(OSError, websocket.WebSocketException):
                self.ws.close(timeout=2)
            self.ws = None

    def on_stop(self) -> None:
        self._close()


def _ws_base() -> str:
    return CFG.http_base.replace("http://", "ws://", 1).replace("https://", "wss://", 1)


def _screen_areas() -> list[str]:
    """The screens' areas in an order whose every prefix keeps the scenario's proportions
    (each worker process deals from the start of it)."""
    total = sum(CFG.signage_areas.values())
    dealt = dict.fromkeys(CFG.signage_areas, 0)
    order = []
    for i in range(1, total + 1):
        area = max(dealt, key=lambda a: CFG.signage_areas[a] * i / total - dealt[a])
        dealt[area] += 1
        order.append(area)
    return order


class SignageScreen(_Stream):
    """A floor screen of one area (areas dealt out in the scenario's proportions)."""

    fixed_count = CFG.users.get("SignageScreen", 0)
    label = "signage"
    _areas = _screen_areas()
    _dealt = 0

    def on_start(self) -> None:
        super().on_start()
        cls = type(self)
        self.area = cls._areas[cls._dealt % len(cls._areas)] if cls._areas else "main"
        cls._dealt += 1
        self.label = f"signage[{self.area}]"

    def url(self) -> str:
        return f"{_ws_base()}/ws/signage?area={self.area}"

    def token(self) -> str:
        assert CFG.tokens is not None
        return CFG.tokens.signage[self.area]


class CrewHandheld(_Stream):
    """A crew handheld: the crew stream, and the floor's active EGMs on each start."""

    fixed_count = CFG.users.get("CrewHandheld", 0)
    label = "crew"

    def url(self) -> str:
        return f"{_ws_base()}/ws/crew"

    def token(self) -> str:
        assert CFG.tokens is not None
        return CFG.tokens.crew

    def after_snapshot(self) -> None:
        self.client.get(
            "/floor/active?kind=egm",
            headers={"Authorization": f"Bearer {self.token()}"},
            name="/floor/active?kind=egm (crew)",
        )
