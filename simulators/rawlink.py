"""A minimal MQTT 3.1.1 QoS 1 publisher that reconnects: the link of the stepped
publisher (`simulators.stepped`), with the few packet helpers it needs."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections import OrderedDict

from bonusd.infra.backoff import Backoff
from simulators.publish import MqttTarget, PublishError

logger = logging.getLogger(__name__)
_FLUSH = 1 << 16  # bytes of PUBLISH packets written to the socket at once


class RawLink:
    """A minimal MQTT 3.1.1 QoS 1 publisher: packets are written in batches and PUBACKs
    only matched to their ids, about ten times cheaper per message than paho (whose
    per-publish bookkeeping would make the simulator the rehearsal's bottleneck). Like
    `publish._Link` it keeps at most `max_inflight` publishes unacknowledged.

    A lost broker is reconnected with capped, jittered backoff (a WARNING each time);
    every publish not yet acknowledged is then sent again, in order, with the DUP flag,
    and nothing else is: no event is lost, and one is sent twice only when its PUBACK
    was lost with the connection (the daemon applies an event id once). After
    `give_up_s` without a connection it raises `PublishError`."""

    def __init__(
        self,
        target: MqttTarget,
        *,
        client_id: str,
        max_inflight: int,
        connect_timeout: float = 10.0,
        give_up_s: float = 300.0,
        backoff: Backoff | None = None,
    ) -> None:
        if not 1 <= max_inflight < 65535:
            raise ValueError(f"max_inflight must be in 1..65534, got {max_inflight}")
        self._target, self._client_id, self._limit = target, client_id, max_inflight
        self._connect_timeout, self._give_up_s = connect_timeout, give_up_s
        self._backoff = backoff or Backoff(base=0.2, cap=5.0)
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._next_id = 0
        # packet id -> its PUBLISH packet, oldest first, until the broker acknowledges it;
        # the reader thread removes, this thread adds (both under `_window`)
        self._inflight: OrderedDict[int, bytes] = OrderedDict()
        self._window = threading.Condition()
        self._lost: str | None = None
        self.sent = 0  # publishes handed to `send`
        self.reconnects = 0
        self.resent = 0  # publishes sent again after a reconnect

    def open(self, timeout: float | None = None) -> None:
        """Connect (raises `PublishError` if the broker is unreachable or refuses us)."""
        host, port = self._target.host, self._target.port
        try:
            sock = socket.create_connection((host, port), timeout or self._connect_timeout)
        except OSError as exc:
            raise PublishError(f"cannot reach MQTT broker {host}:{port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        flags, payload = 0x02, _str16(self._client_id)  # clean session
        if self._target.username is not None:
            flags |= 0x80
            payload += _str16(self._target.username)
            if self._target.password is not None:
                flags |= 0x40
                payload += _str16(self._target.password)
        # protocol MQTT level 4, keep alive 0: the broker never drops us for idling
        variable = _str16("MQTT") + bytes((4, flags, 0, 0))
        try:
            sock.sendall(_packet(0x10, variable + payload))
            ack = sock.recv(4)
        except OSError as exc:
            sock.close()
            raise PublishError(f"MQTT broker {host}:{port} dropped the connection: {exc}") from exc
        if len(ack) < 4 or ack[0] != 0x20 or ack[3] != 0:
            sock.close()
            raise PublishError(f"MQTT broker {host}:{port} refused the connection: {ack!r}")
        sock.settimeout(None)
        with self._window:
            self._sock = sock
            self._lost = None
        threading.Thread(target=self._read_acks, args=(sock,), daemon=True).start()

    @property
    def unacknowledged(self) -> int:
        with self._window:
            return len(self._inflight)

    def send(self, topic: str, body: bytes) -> None:
        while True:
            if self._lost is not None:
                self._reconnect()
            with self._window:
                if len(self._inflight) < self._limit:
                    break
            self.flush()  # never wait for acknowledgements of packets still buffered here
            with self._window:
                while len(self._inflight) >= self._limit and self._lost is None:
                    self._window.wait(1.0)
        self._next_id = self._next_id % 65535 + 1
        while self._next_id in self._inflight:  # a packet id still unacknowledged: skip it
            self._next_id = self._next_id % 65535 + 1
        name = topic.encode()
        head = len(name).to_bytes(2, "big") + name + self._next_id.to_bytes(2, "big")
        packet = _packet(0x32, head + body)
        with self._window:
            self._inflight[self._next_id] = packet
        self.sent += 1
        self._buffer += packet
        if len(self._buffer) >= _FLUSH:
            self.flush()

    def flush(self) -> None:
        """Write the buffered packets to the socket (a failed write is a lost connection:
        the packets stay unacknowledged and go again after the reconnect)."""
        sock = self._sock
        if self._buffer and sock is not None:
            try:
                sock.sendall(self._buffer)
            except OSError as exc:
                self._mark_lost(sock, f"MQTT connection lost while writing: {exc}")
        self._buffer.clear()

    def drain(self, timeout: float) -> int:
        """Wait until every publish is acknowledged (reconnecting if the broker is lost
        meanwhile); return how many are still not."""
        self.flush()
        deadline = time.monotonic() + timeout
        while True:
            with self._window:
                while self._inflight and self._lost is None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return len(self._inflight)
                    self._window.wait(left)
                if not self._inflight:
                    return 0
            if time.monotonic() >= deadline:
                return self.unacknowledged
            self._reconnect()

    def close(self) -> None:
        with self._window:
            sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                if self._buffer:
                    sock.sendall(self._buffer)
                sock.sendall(b"\xe0\x00")  # DISCONNECT
            self._buffer.clear()
            sock.close()

    def _reconnect(self) -> None:
        """Connect again after a loss, then resend what the broker never acknowledged."""
        with self._window:
            sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        self._buffer.clear()  # every buffered packet is also in `_inflight`
        give_up = time.monotonic() + self._give_up_s
        reason = self._lost
        while True:
            delay = self._backoff.next_delay()
            logger.warning("%s; reconnecting in %.2f s", reason, delay)
            time.sleep(delay)
            try:
                self.open()
            except PublishError as exc:
                reason = str(exc)
                if time.monotonic() >= give_up:
                    raise PublishError(
                        f"{exc}; gave up after {self._give_up_s:.0f} s of reconnecting, "
                        f"{self.unacknowledged} publishes unacknowledged"
                    ) from exc
                continue
            break
        self._backoff.reset()
        self.reconnects += 1
        with self._window:
            again = list(self._inflight.values())
        for packet in again:  # DUP: this packet id may have reached the broker before
            self._buffer += bytes((packet[0] | 0x08,)) + packet[1:]
        self.resent += len(again)
        logger.warning(
            "MQTT connection restored; %d unacknowledged publishes sent again", len(again)
        )
        self.flush()

    def _mark_lost(self, sock: socket.socket, reason: str) -> None:
        with self._window:
            if sock is self._sock and self._lost is None:
                self._lost = reason
            self._window.notify_all()

    def _read_acks(self, sock: socket.socket) -> None:
        pending = b""
        while True:
            try:
                data = sock.recv(1 << 16)
            except OSError as exc:
                data, reason = b"", str(exc)
            else:
                reason = "the broker closed the connection"
            if not data:
                self._mark_lost(sock, f"MQTT connection lost: {reason}")
                return
            pending += data
            ids, pending = _puback_ids(pending)
            if ids:
                with self._window:
                    for packet_id in ids:
                        self._inflight.pop(packet_id, None)
                    self._window.notify_all()


def _str16(text: str) -> bytes:
    raw = text.encode()
    return len(raw).to_bytes(2, "big") + raw


def _packet(kind: int, body: bytes) -> bytes:
    n, length = len(body), bytearray()
    while True:
        n, digit = n >> 7, n & 0x7F
        length.append(digit | (0x80 if n else 0))
        if not n:
            return bytes((kind,)) + bytes(length) + body


def _puback_ids(data: bytes) -> tuple[list[int], bytes]:
    """The packet ids of the PUBACKs among the whole packets at the front of `data`; the
    rest (an incomplete packet) is kept."""
    ids: list[int] = []
    at = 0
    while at + 2 <= len(data):
        length = shift = 0
        i = at + 1
        while i < len(data):
            length |= (data[i] & 0x7F) << shift
            shift += 7
            i += 1
            if not data[i - 1] & 0x80:
                break
        else:
            break  # the length itself is not complete yet
        if i + length > len(data):
            break
        if data[at] >> 4 == 4 and length >= 2:
            ids.append(int.from_bytes(data[i : i + 2], "big"))
        at = i + length
    return ids, data[at:]


def _count_pubacks(data: bytes) -> tuple[int, bytes]:
    """How many PUBACKs are among the whole packets at the front of `data`; the rest is kept."""
    ids, rest = _puback_ids(data)
    return len(ids), rest
