"""What `bonusd doctor` reads of the MQTT broker: the limits in Mosquitto's configuration
files (`--broker-config`) and what the running broker says in CONNACK.

The broker's queue is the floor's only copy of what bonusd has not acknowledged, so the
settings that drop it silently matter most (deploy/mosquitto/bonusd.conf says why each is
set): `persistence` (the queue survives a broker restart), `max_queued_messages` (a
persistent session silently loses everything past it; Mosquitto's default is 1,000, a few
seconds of a busy floor), `max_queued_bytes` (the same, in bytes) and `max_packet_size`
(nothing bounds a message without it; below the telemetry contract's payload limit it
refuses frames the contract allows).

Over MQTT a broker tells its packet limit and its receive window, not its queue limit or
whether it keeps its queue on disk: those are read from its files, on the broker's host.
The CONNACK probe connects only while bonusd needs no broker account: with accounts
(Mosquitto secure mode) the listener takes the username as the client id, so a probe with
bonusd's account would take over the daemon's session.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from bonusd.ingest.target import MqttTarget
from bonusd.service.doctorreport import CheckStatus, Finding

FIX_FILE = "deploy/mosquitto/bonusd.conf"
QUEUE_FLOOR = 100_000  # below this, a restart of the daemons can outlast the queue
# Mosquitto's own defaults (2.0), for keys a configuration does not set
DEFAULTS = {
    "persistence": "false",
    "max_queued_messages": "1000",
    "max_queued_bytes": "0",
    "max_packet_size": "0",
}


@dataclass(frozen=True)
class Connack:
    """What the broker said to a probe: refused (`refused` names why) or its limits."""

    refused: str = ""
    max_packet_size: int = 0  # 0: the broker sent none (no limit)
    receive_maximum: int = 0


def read_broker_config(path: Path) -> dict[str, str]:
    """The settings of a Mosquitto configuration: `path` is its main file (whose
    `include_dir` lines are followed, as Mosquitto does) or a folder of `*.conf` files
    read in name order (`/etc/mosquitto/conf.d`). The last value of a key wins."""
    values: dict[str, str] = {}
    files = sorted(path.glob("*.conf")) if path.is_dir() else [path]
    for file in files:
        _read_file(file, values, depth=0)
    return values


def _read_file(file: Path, values: dict[str, str], *, depth: int) -> None:
    for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.strip().partition(" ")
        if not key or key.startswith("#"):
            continue
        if key == "include_dir" and depth < 4:
            for included in sorted(Path(value.strip()).glob("*.conf")):
                _read_file(included, values, depth=depth + 1)
            continue
        values[key] = value.strip()


def config_findings(values: dict[str, str], *, max_payload_bytes: int) -> list[Finding]:
    """Each broker limit of `values` judged, with its fix."""
    got = {key: values.get(key, default) for key, default in DEFAULTS.items()}
    found = [_persistence(got["persistence"]), _queue(got["max_queued_messages"])]
    if _int(got["max_queued_bytes"]) > 0:
        found.append(
            Finding(
                "broker queue bytes",
                CheckStatus.WARN,
                f"max_queued_bytes is {got['max_queued_bytes']}: past it the broker drops "
                "queued floor events silently",
                f"set max_queued_bytes 0 and bound memory at the host ({FIX_FILE})",
            )
        )
    found.append(packet_finding(_int(got["max_packet_size"]), max_payload_bytes, "max_packet_size"))
    return found


def _persistence(value: str) -> Finding:
    if value.lower() in {"true", "yes", "1"}:
        return Finding("broker persistence", CheckStatus.OK, "persistence true")
    return Finding(
        "broker persistence",
        CheckStatus.FAIL,
        "persistence is false: a broker restart loses the queue of floor events bonusd "
        "has not acknowledged",
        f"set persistence true and persistence_location /var/lib/mosquitto/ ({FIX_FILE})",
    )


def _queue(value: str) -> Finding:
    limit = _int(value)
    if limit == 0 or limit >= QUEUE_FLOOR:
        return Finding(
            "broker queue", CheckStatus.OK, f"max_queued_messages {limit or 'unlimited'}"
        )
    return Finding(
        "broker queue",
        CheckStatus.FAIL,
        f"max_queued_messages is {limit}: while the daemons are away (a restart, an upgrade, "
        "Redis down) the broker silently drops every floor event past that many",
        f"set max_queued_messages 10000000 ({FIX_FILE}) and watch the broker's memory",
    )


def packet_finding(limit: int, max_payload_bytes: int, source: str) -> Finding:
    """The broker's packet limit (`limit`, 0: none) against the telemetry contract's."""
    needed = max_payload_bytes + 1024  # the payload, the topic and the properties
    if limit == 0:
        return Finding(
            "broker packet size",
            CheckStatus.WARN,
            f"{source}: no packet size limit: a megabyte message from a faulty board enters "
            "the queue",
            f"set max_packet_size {max_payload_bytes + 4096} ({FIX_FILE})",
        )
    if limit < needed:
        return Finding(
            "broker packet size",
            CheckStatus.FAIL,
            f"{source} is {limit}: frames within BONUSD_MAX_PAYLOAD_BYTES "
            f"({max_payload_bytes}) are refused by the broker",
            f"set max_packet_size {max_payload_bytes + 4096} ({FIX_FILE})",
        )
    return Finding("broker packet size", CheckStatus.OK, f"{source} {limit}")


def _int(value: str) -> int:
    try:
        return int(value.split(maxsplit=1)[0]) if value.strip() else 0
    except ValueError:
        return 0


def probe_broker(target: MqttTarget, *, timeout: float = 5.0) -> Connack:
    """Connect once with a throwaway client id and no session (nothing is kept on the
    broker), and return the CONNACK's limits; blocking (run it in a thread)."""
    said: dict[str, Connack] = {}
    answered = threading.Event()

    def on_connect(
        client: mqtt.Client, userdata: object, flags: object, reason: object, props: object
    ) -> None:
        failure = getattr(reason, "is_failure", False)
        packet = getattr(props, "MaximumPacketSize", 0) if props is not None else 0
        window = getattr(props, "ReceiveMaximum", 0) if props is not None else 0
        said["connack"] = Connack(str(reason) if failure else "", int(packet), int(window))
        answered.set()

    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=f"bonusd-doctor-{secrets.token_hex(4)}",
        protocol=mqtt.MQTTv5,
    )
    client.on_connect = on_connect
    if target.username:
        client.username_pw_set(target.username, target.password)
    context = target.tls_context()
    if context is not None:
        client.tls_set_context(context)
    properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
    properties.SessionExpiryInterval = 0
    try:
        client.connect(
            target.host, target.port, keepalive=10, clean_start=True, properties=properties
        )
    except OSError as exc:
        return Connack(refused=str(exc) or type(exc).__name__)
    client.loop_start()
    try:
        if not answered.wait(timeout):
            return Connack(refused=f"no CONNACK within {timeout:g} s")
        return said["connack"]
    finally:
        client.disconnect()
        client.loop_stop()
