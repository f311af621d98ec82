"""Empirical checks of deploy/mosquitto/bonusd.conf against a real Mosquitto.

Each test starts its own ``mosquitto`` processes on free loopback ports in a
pytest tmp dir. The main config for each instance is written the same way
scripts/ensure-services.sh writes it (listener + persistence_location +
include_dir of a directory holding a link to the policy file). The checks:

* the reason the file exists: a persistent MQTT v5 session subscribed at QoS 1
  that is offline while 20,000 QoS 1 messages arrive, then survives a broker
  restart, receives all 20,000;
* the contrast: with Mosquitto's default queue limit the same scenario
  silently loses everything beyond 1000;
* the in-flight finding documented in bonusd.conf: for v5 clients the
  client's Receive Maximum, not max_inflight_messages, sets the broker's
  outgoing window, and max_inflight_messages is only the default.

The only reason to skip is a missing ``mosquitto`` binary. Without
``mosquitto_pub`` the load is published with paho instead.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

REPO_ROOT = Path(__file__).resolve().parents[2]
BONUSD_CONF = REPO_ROOT / "deploy" / "mosquitto" / "bonusd.conf"

# Mosquitto's default max_queued_messages (2.0.x); see the contrast test.
MOSQUITTO_DEFAULT_MAX_QUEUED = 1000
BACKLOG = 20_000
SESSION_EXPIRY_S = 86_400


def _find_binary(name: str) -> str | None:
    # /usr/sbin is often not on a non-root user's PATH, and Debian puts the
    # broker there.
    found = shutil.which(name)
    if found:
        return found
    for directory in ("/usr/sbin", "/usr/local/sbin", "/sbin"):
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


MOSQUITTO = _find_binary("mosquitto")
MOSQUITTO_PUB = _find_binary("mosquitto_pub")

pytestmark = pytest.mark.skipif(MOSQUITTO is None, reason="mosquitto binary not installed")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _conf_value(path: Path, key: str) -> str:
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == key:
            return parts[1]
    raise AssertionError(f"{key} not set in {path}")


# --------------------------------------------------------------------------- broker


class Broker:
    """A Mosquitto instance: instance main config + included policy file."""

    def __init__(self, root: Path, policy: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.data_dir = root / "data"
        self.log_file = root / "mosquitto.log"
        self.main_conf = root / "mosquitto.conf"
        conf_d = root / "conf.d"
        conf_d.mkdir(parents=True)
        self.data_dir.mkdir()
        (conf_d / "policy.conf").symlink_to(policy)
        self.main_conf.write_text(
            f"listener {self.port} 127.0.0.1\n"
            f"persistence_location {self.data_dir}/\n"
            f"log_dest file {self.log_file}\n"
            # Only matters when run as root: otherwise Mosquitto switches to
            # the 'mosquitto' user, which cannot write to our tmp dir.
            f"user {getpass.getuser()}\n"
            f"include_dir {conf_d}\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return "(no log file)"

    def start(self, timeout: float = 10.0) -> None:
        assert self.proc is None
        assert MOSQUITTO is not None
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.main_conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.proc = None
                pytest.fail(f"mosquitto exited with {rc} at start-up:\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        self.stop()
        pytest.fail(f"mosquitto did not listen on {self.port} within {timeout}s:\n{self.log()}")

    def stop(self) -> int:
        """SIGTERM (clean shutdown: the database is written) and wait."""
        if self.proc is None:
            return 0
        proc, self.proc = self.proc, None
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise

    def restart(self) -> None:
        rc = self.stop()
        assert rc == 0, f"mosquitto exited with {rc} on SIGTERM:\n{self.log()}"
        self.start()


@contextmanager
def running_broker(root: Path, policy: Path) -> Iterator[Broker]:
    broker = Broker(root, policy)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


# --------------------------------------------------------------------------- clients


def _v5_connect_props(*, session_expiry: int | None = None, receive_max: int | None = None):
    props = Properties(PacketTypes.CONNECT)
    if session_expiry is not None:
        props.SessionExpiryInterval = session_expiry
    if receive_max is not None:
        props.ReceiveMaximum = receive_max
    return props


class Subscriber:
    """A paho MQTT v5 client that records every message it is delivered."""

    def __init__(
        self,
        port: int,
        client_id: str,
        *,
        clean_start: bool = False,
        session_expiry: int | None = SESSION_EXPIRY_S,
        receive_max: int | None = None,
        manual_ack: bool = False,
    ) -> None:
        self.payloads: list[bytes] = []
        self.connack_props: dict[str, object] = {}
        self.session_present: bool | None = None
        self._connected = threading.Event()
        self._subscribed = threading.Event()
        self._lock = threading.Lock()
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=mqtt.MQTTv5,
            manual_ack=manual_ack,
        )
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        self.client.connect(
            "127.0.0.1",
            port,
            clean_start=clean_start,
            properties=_v5_connect_props(session_expiry=session_expiry, receive_max=receive_max),
        )
        self.client.loop_start()
        if not self._connected.wait(5):
            self.close()
            raise AssertionError(f"{client_id}: no CONNACK within 5 s")

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        assert not reason_code.is_failure, reason_code
        self.session_present = bool(flags.session_present)
        self.connack_props = properties.json() if properties is not None else {}
        self._connected.set()

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        assert all(not rc.is_failure for rc in reason_codes), reason_codes
        self._subscribed.set()

    def _on_message(self, client, userdata, message) -> None:
        with self._lock:
            self.payloads.append(message.payload)

    def subscribe(self, topic: str, qos: int = 1) -> None:
        self.client.subscribe(topic, qos=qos)
        assert self._subscribed.wait(5), "no SUBACK within 5 s"

    def count(self) -> int:
        with self._lock:
            return len(self.payloads)

    def wait_for(self, expected: int, *, idle: float, timeout: float) -> int:
        """Wait until `expected` messages arrived, or none arrived for `idle` s."""
        deadline = time.monotonic() + timeout
        last_count, last_change = -1, time.monotonic()
        while time.monotonic() < deadline:
            n = self.count()
            if n >= expected:
                return n
            if n != last_count:
                last_count, last_change = n, time.monotonic()
            elif time.monotonic() - last_change >= idle:
                return n
            time.sleep(0.02)
        return self.count()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def publish_lines(port: int, topic: str, lines: list[str]) -> int:
    """Publish one QoS 1 message per line; return how many the broker acknowledged."""
    if MOSQUITTO_PUB is not None:
        # The brief's tool: `mosquitto_pub -l -q 1`. -d prints one
        # "received PUBACK" line per acknowledged message, which proves that
        # the broker accepted all of them (so a shortfall at the subscriber is
        # the broker's doing, not the publisher's). Stay below 65,535 lines:
        # mosquitto_pub 2.0.11 -l quits early when message IDs wrap.
        assert len(lines) < 65_535
        cmd = [MOSQUITTO_PUB, "-h", "127.0.0.1", "-p", str(port), "-V", "5"]
        cmd += ["-i", "bonusd-test-pub", "-q", "1", "-t", topic, "-l", "-d"]
        result = subprocess.run(
            cmd,
            input="".join(f"{line}\n" for line in lines).encode(),
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return len(re.findall(rb"received PUBACK", result.stdout))

    acked = 0
    done = threading.Event()

    def on_publish(client, userdata, mid, reason_code, properties) -> None:
        nonlocal acked
        acked += 1
        if acked == len(lines):
            done.set()

    pub = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id="bonusd-test-pub", protocol=mqtt.MQTTv5
    )
    pub.on_publish = on_publish
    pub.max_inflight_messages_set(100)
    pub.connect("127.0.0.1", port)
    pub.loop_start()
    try:
        for i, line in enumerate(lines):
            # paho's outgoing queue is O(n) per ack: keep it short.
            while i - acked > 1000:
                time.sleep(0.005)
            pub.publish(topic, line.encode(), qos=1)
        done.wait(60)
    finally:
        pub.disconnect()
        pub.loop_stop()
    return acked


# --------------------------------------------------------------------------- scenario


@dataclass
class BacklogResult:
    published_acked: int
    session_present: bool | None
    received: list[bytes]
    broker_log: str


def run_offline_backlog_scenario(root: Path, policy: Path, n: int) -> BacklogResult:
    """Persistent v5 session offline during n QoS 1 messages, broker restart, reconnect."""
    with running_broker(root, policy) as broker:
        # 1. Register the persistent session and its QoS 1 subscription, then leave.
        sub = Subscriber(broker.port, "bonusd-test-sub", clean_start=False)
        sub.subscribe("t/#", qos=1)
        sub.close()

        # 2. Floor traffic while bonusd is away.
        acked = publish_lines(broker.port, "t/load", [str(i) for i in range(n)])

        # 3. Broker restart (SIGTERM, start again): the backlog must come back
        #    from mosquitto.db.
        broker.restart()

        # 4. bonusd comes back: same client id, clean_start=False, no
        #    re-subscribe. Everything still queued must be delivered.
        sub = Subscriber(broker.port, "bonusd-test-sub", clean_start=False)
        try:
            sub.wait_for(n, idle=1.0, timeout=30)
            received = list(sub.payloads)
            session_present = sub.session_present
        finally:
            sub.close()
        return BacklogResult(acked, session_present, received, broker.log())


# --------------------------------------------------------------------------- tests


def test_bonusd_conf_keeps_full_offline_backlog_across_restart(tmp_path: Path) -> None:
    res = run_offline_backlog_scenario(tmp_path, BONUSD_CONF, BACKLOG)
    print(
        f"bonusd.conf: broker acked {res.published_acked}, "
        f"subscriber received {len(res.received)} of {BACKLOG} after restart"
    )

    assert res.published_acked == BACKLOG
    assert res.session_present is True, "persistent session was lost across restart"
    expected = {str(i).encode() for i in range(BACKLOG)}
    missing = expected - set(res.received)
    assert not missing, (
        f"{len(missing)} of {BACKLOG} messages lost (received {len(res.received)}):\n"
        f"{res.broker_log}"
    )


def test_default_queue_limit_drops_silently(tmp_path: Path) -> None:
    """Contrast: same scenario with persistence on but Mosquitto's default queue limit."""
    baseline = tmp_path / "baseline-policy.conf"
    baseline.write_text("allow_anonymous true\npersistence true\n")

    res = run_offline_backlog_scenario(tmp_path / "broker", baseline, BACKLOG)
    print(
        f"defaults: broker acked {res.published_acked}, "
        f"subscriber received {len(res.received)} of {BACKLOG} after restart"
    )

    # The publisher got a PUBACK for every message...
    assert res.published_acked == BACKLOG
    assert res.session_present is True
    # ...yet only the first max_queued_messages reached the offline session.
    assert len(res.received) == MOSQUITTO_DEFAULT_MAX_QUEUED, res.broker_log
    assert set(res.received) == {str(i).encode() for i in range(MOSQUITTO_DEFAULT_MAX_QUEUED)}


def test_inflight_window_v5_receive_maximum(tmp_path: Path) -> None:
    """max_inflight_messages is only the default window. A v5 client's Receive Maximum wins.

    With manual_ack and no acks sent, the number of messages a client has been
    delivered is exactly the broker's outgoing in-flight window for it.
    """
    conf_window = int(_conf_value(BONUSD_CONF, "max_inflight_messages"))
    packet_limit = int(_conf_value(BONUSD_CONF, "max_packet_size"))
    small, large = 7, conf_window * 3
    total = large + 100

    with running_broker(tmp_path, BONUSD_CONF) as broker:
        clients = {
            "no-receive-max": Subscriber(
                broker.port, "rm-none", clean_start=True, session_expiry=None, manual_ack=True
            ),
            "receive-max-small": Subscriber(
                broker.port,
                "rm-small",
                clean_start=True,
                session_expiry=None,
                receive_max=small,
                manual_ack=True,
            ),
            "receive-max-large": Subscriber(
                broker.port,
                "rm-large",
                clean_start=True,
                session_expiry=None,
                receive_max=large,
                manual_ack=True,
            ),
        }
        try:
            for c in clients.values():
                c.subscribe("w/#", qos=1)
            acked = publish_lines(broker.port, "w/x", [str(i) for i in range(total)])
            assert acked == total
            windows = {name: c.wait_for(total, idle=0.5, timeout=10) for name, c in clients.items()}
            connack = clients["no-receive-max"].connack_props
        finally:
            for c in clients.values():
                c.close()

    print(
        f"max_inflight_messages={conf_window}: unacked deliveries per client {windows}; "
        f"CONNACK properties {connack}"
    )
    # A v5 client that does not send Receive Maximum gets max_inflight_messages.
    assert windows["no-receive-max"] == conf_window
    # A v5 client that sends it gets its own value, smaller or LARGER than the config.
    assert windows["receive-max-small"] == small
    assert windows["receive-max-large"] == large
    # Mosquitto also tells v5 clients its own inbound window and packet limit.
    assert connack.get("ReceiveMaximum") == conf_window
    assert connack.get("MaximumPacketSize") == packet_limit
