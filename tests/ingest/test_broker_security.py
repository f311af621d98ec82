"""The secure broker (deploy/mosquitto/secure.conf beside bonusd.conf, the accounts and ACL
of `scripts/broker-credentials`) on a real Mosquitto with a TLS listener, certificates
made by `openssl` for the test: who may connect, publish and read, and the daemon itself
ingesting through TLS with its own account.

Nothing is waited out to prove a negative: a device's own QoS 1 round trip (its PUBACK
comes after anything the broker sent it before) or a marker message that bonusd receives
after the refused one closes each check.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from pydantic import SecretStr

from bonusd.clocks.clock import ManualClock
from bonusd.errors import ConfigError
from bonusd.ingest.brokerauth import SIMULATOR, read_credentials, write_broker_files
from bonusd.registry.files import read_file
from bonusd.registry.records import Device
from bonusd.settings import Settings
from simulators import SimEvent, publish_events
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import PROJECT, SAST, running
from tests.telemetry_helpers import event, game

DEPLOY = PROJECT / "deploy" / "mosquitto"
OPENSSL = shutil.which("openssl")
NOT_AUTHORIZED = 135  # MQTT v5 reason code

pytestmark = pytest.mark.skipif(
    OPENSSL is None
    or shutil.which("mosquitto") is None
    or shutil.which("mosquitto_passwd") is None,
    reason="needs openssl, mosquitto and mosquitto_passwd",
)

DEVICES = "device,kind,area\nEGM-1,egm,main\nEGM-2,egm,main\nRT-1,table,main\n"


# -- certificates and the broker --------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    assert OPENSSL is not None
    done = subprocess.run([OPENSSL, *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A throwaway CA and the broker's certificate for 127.0.0.1 (keys never leave tmp)."""
    d = tmp_path_factory.mktemp("pki")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=bonusd test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)  # fmt: skip
    _openssl("req", *ec, "-keyout", "broker.key", "-out", "broker.csr",
             "-subj", "/CN=localhost", cwd=d)  # fmt: skip
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "broker.crt", "-days", "2", "-extfile", "ext", cwd=d)  # fmt: skip
    return Pki(d / "ca.crt", d / "broker.crt", d / "broker.key")


class SecureMosquitto(LocalMosquitto):
    """The repository's secure-main.conf.example with this test's ports and paths, which
    includes the repository's bonusd.conf and secure.conf (in that order)."""

    def __init__(self, workdir: Path, pki: Pki, accounts: Path) -> None:
        super().__init__(workdir)
        self.pki, self.accounts = pki, accounts

    @property
    def url(self) -> str:
        return f"mqtts://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        conf_d = self.workdir / "conf.d"
        conf_d.mkdir(exist_ok=True)
        for name in ("bonusd.conf", "secure.conf"):
            link = conf_d / name
            if not link.exists():
                link.symlink_to(DEPLOY / name)
        ours = {
            "listener": f"{self.port} 127.0.0.1",
            "cafile": self.pki.ca,
            "certfile": self.pki.server_cert,
            "keyfile": self.pki.server_key,
            "password_file": self.accounts / "passwd",
            "acl_file": self.accounts / "acl",
            "persistence_location": f"{self.workdir}{os.sep}",
            "pid_file": self.workdir / "mosquitto.pid",
            "log_dest": f"file {self.log_path}",
            "include_dir": conf_d,
        }
        lines = []
        for line in (DEPLOY / "secure-main.conf.example").read_text().splitlines():
            key = line.split(" ", 1)[0]
            lines.append(f"{key} {ours.pop(key)}" if key in ours else line)
        assert not ours, f"secure-main.conf.example no longer sets {sorted(ours)}"
        lines.append(f"user {getpass.getuser()}")  # as root, Mosquitto would switch users
        conf = self.workdir / "mosquitto.conf"
        conf.write_text("\n".join(lines) + "\n")
        return ["mosquitto", "-c", str(conf)]


def write_accounts(out: Path, site: str, devices: str = DEVICES) -> dict[str, str]:
    """What `scripts/broker-credentials --simulator` writes (its own code, in process: the
    script itself is run once, below); username -> password."""
    registry = out.parent / "devices.csv"
    registry.write_text(devices)
    accounts = write_broker_files(
        out, read_file(Device, registry), prefix="bonusd", site=site, simulator=True
    )
    return {a.username: a.password for a in accounts}


def run_script(out: Path, site: str, devices: str, *extra: str) -> dict[str, str]:
    """Run `scripts/broker-credentials`; username -> password from what it wrote."""
    registry = out.parent / "devices.csv"
    registry.write_text(devices)
    script = PROJECT / "scripts" / "broker-credentials"
    done = subprocess.run(
        [str(script), str(registry), "--site", site, "--out", str(out), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {a.username: a.password for a in read_credentials(out / "credentials.csv").values()}


@dataclass
class Secure:
    broker: SecureMosquitto
    passwords: dict[str, str]
    site: str

    def topic(self, device: str, kind: str = "egm") -> str:
        return f"bonusd/{self.site}/{kind}/{device}/events"


@pytest.fixture
def secure(tmp_path: Path, pki: Pki, site: str) -> Iterator[Secure]:
    passwords = write_accounts(tmp_path / "accounts", site)
    with SecureMosquitto(tmp_path / "broker", pki, tmp_path / "accounts") as broker:
        yield Secure(broker, passwords, site)  # type: ignore[arg-type]


# -- an MQTT v5 client that records what the broker answered ---------------------------------


@dataclass
class Client:
    """paho MQTT v5 over TLS; every answer of the broker is kept."""

    port: int
    ca: Path | None
    username: str | None = None
    password: str | None = None
    client_id: str = ""
    connack: Any = None
    pubacks: dict[int, int] = field(default_factory=dict)
    subacks: list[int] = field(default_factory=list)
    received: list[tuple[str, bytes]] = field(default_factory=list)
    disconnected: threading.Event = field(default_factory=threading.Event)
    _events: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=self.client_id, protocol=mqtt.MQTTv5)
        c.tls_set(ca_certs=str(self.ca) if self.ca else None)
        if self.username is not None:
            c.username_pw_set(self.username, self.password)
        c.on_connect = self._on_connect
        c.on_publish = self._on_publish
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        c.on_disconnect = lambda *_: self.disconnected.set()
        self.mqtt = c

    def _note(self, fn: Any) -> None:
        with self._events:
            fn()
            self._events.notify_all()

    def _on_connect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        self._note(lambda: setattr(self, "connack", reason))

    def _on_publish(self, _c: Any, _u: Any, mid: int, reason: Any, _p: Any) -> None:
        self._note(lambda: self.pubacks.__setitem__(mid, reason.value))

    def _on_subscribe(self, _c: Any, _u: Any, _mid: int, reasons: Any, _p: Any) -> None:
        self._note(lambda: self.subacks.extend(r.value for r in reasons))

    def _on_message(self, _c: Any, _u: Any, msg: Any) -> None:
        self._note(lambda: self.received.append((msg.topic, msg.payload)))

    def _wait(self, ready: Any, what: str) -> None:
        with self._events:
            assert self._events.wait_for(ready, timeout=10), f"no {what} within 10 s"

    def connect(self) -> Any:
        """Connect; the CONNACK reason code."""
        self.mqtt.connect("127.0.0.1", self.port, keepalive=30)
        self.mqtt.loop_start()
        self._wait(lambda: self.connack is not None, "CONNACK")
        return self.connack

    def publish(self, topic: str, body: dict[str, Any] | str) -> int:
        """Publish at QoS 1; the PUBACK reason code (0 = accepted, 135 = not authorized)."""
        data = json.dumps(body) if isinstance(body, dict) else body
        mid = self.mqtt.publish(topic, data, qos=1).mid
        self._wait(lambda: mid in self.pubacks, "PUBACK")
        return self.pubacks[mid]

    def subscribe(self, topic: str) -> int:
        before = len(self.subacks)
        self.mqtt.subscribe(topic, qos=1)
        self._wait(lambda: len(self.subacks) > before, "SUBACK")
        return self.subacks[-1]

    def wait_received(self, n: int) -> None:
        self._wait(lambda: len(self.received) >= n, f"{n} message(s)")

    def close(self) -> None:
        self.mqtt.disconnect()
        self.mqtt.loop_stop()


@pytest.fixture
def clients(secure: Secure, pki: Pki) -> Iterator[Any]:
    made: list[Client] = []

    def make(username: str | None, *, password: str | None = None, **kw: Any) -> Client:
        if password is None and username is not None:
            password = secure.passwords[username]
        c = Client(secure.broker.port, kw.pop("ca", pki.ca), username, password, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


NOW = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)


# -- who may connect ----------------------------------------------------------------------------


def test_anonymous_and_wrong_passwords_are_refused(secure: Secure, clients: Any) -> None:
    assert clients(None).connect().value == NOT_AUTHORIZED
    assert clients("EGM-1", password="guess").connect().is_failure
    assert clients("nobody", password="guess").connect().is_failure
    assert not clients("EGM-1").connect().is_failure


def test_plain_tcp_and_an_untrusted_certificate_fail(secure: Secure) -> None:
    port = secure.broker.port
    # an MQTT 3.1.1 CONNECT in clear text: the TLS listener never answers with a CONNACK
    connect = bytes([0x10, 12, 0, 4]) + b"MQTT" + bytes([4, 2, 0, 30, 0, 0])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(connect)
        try:
            answer = s.recv(4)
        except ConnectionResetError:
            answer = b""
    assert not answer.startswith(b"\x20"), answer
    # a client that checks the broker against the system's CAs refuses the test CA's cert
    context = ssl.create_default_context()
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        context.wrap_socket(raw, server_hostname="127.0.0.1")


# -- who may publish and read -------------------------------------------------------------------


def test_a_device_reads_nothing_and_cannot_take_bonusds_session(
    secure: Secure, clients: Any
) -> None:
    bonusd = clients("bonusd", client_id="bonusd-session")
    assert not bonusd.connect().is_failure
    assert bonusd.subscribe(f"bonusd/{secure.site}/+/+/events") == 1
    spy = clients("EGM-2")
    spy.connect()
    spy.subscribe(f"bonusd/{secure.site}/#")  # Mosquitto 2.0 grants it; the ACL delivers none
    spy.subscribe(f"$share/spies/bonusd/{secure.site}/+/+/events")
    # a device taking bonusd's client id gets a session of its own (use_username_as_clientid)
    thief = clients("RT-1", client_id="bonusd-session")
    assert not thief.connect().is_failure
    assert thief.subscribe(f"bonusd/{secure.site}/+/+/events") == 1
    egm1 = clients("EGM-1")
    egm1.connect()
    body = event("card_in", "1001", NOW)
    assert egm1.publish(secure.topic("EGM-1"), body) == 0

    bonusd.wait_received(1)
    assert bonusd.received == [(secure.topic("EGM-1"), json.dumps(body).encode())]
    assert not bonusd.disconnected.is_set()
    # their own round trip: anything the broker had sent them would have come before it
    for device, client in (("EGM-2", spy), ("RT-1", thief)):
        assert client.publish(secure.topic(device, "egm"), event("card_out", "9", NOW)) == 0
        assert client.received == [], device
    # the simulator's account publishes, but may not read either
    sim = clients(SIMULATOR)
    sim.connect()
    sim.subscribe(f"bonusd/{secure.site}/#")
    assert sim.publish(secure.topic("EGM-2"), event("card_out", "9", NOW)) == 0
    assert sim.received == []


async def test_the_daemon_ingests_through_tls_and_a_forged_topic_never_reaches_it(
    secure: Secure, clients: Any, pki: Pki, redis_url: str, site: str
) -> None:
    settings = Settings(
        site=site,
        redis_url=redis_url,
        mqtt_url=secure.broker.url,
        mqtt_username="bonusd",
        mqtt_password=SecretStr(secure.passwords["bonusd"]),
        mqtt_tls_ca_file=pki.ca,
        http_port=free_port(),
    )
    async with running(settings, ManualClock(NOW)) as d:
        egm1 = clients("EGM-1")
        egm1.connect()
        assert egm1.publish(secure.topic("EGM-1"), event("card_in", "1001", NOW)) == 0
        # EGM-1 claiming to be EGM-2, on EGM-2's topic and a table's: refused by the ACL
        forged = game("6666", NOW, 500_000, 50_000)
        assert egm1.publish(secure.topic("EGM-2"), forged) == NOT_AUTHORIZED
        assert egm1.publish(secure.topic("RT-1", "table"), forged) == NOT_AUTHORIZED
        # the simulator's account, through the simulator's own publisher over TLS
        sim_url = (
            f"mqtts://{SIMULATOR}:{secure.passwords[SIMULATOR]}@127.0.0.1:{secure.broker.port}"
            f"?cafile={pki.ca}"
        )
        marker = SimEvent(0, "egm", "EGM-2", event("card_in", "1002", NOW))
        counts = publish_events([marker], mqtt_url=sim_url, prefix="bonusd", site=site)
        assert counts == {"card_in": 1}

        await d.wait_committed(2)  # the marker came after the refused messages
        assert d.service.ingest.committed == 2
        active = await d.get("/floor/active")
        assert sorted((a["card"], a["device"]) for a in active) == [
            ("1001", "EGM-1"),
            ("1002", "EGM-2"),
        ]
        assert await d.get("/deadletters") == []
        health = await d.get("/health")
        assert health["mqtt"] == "connected"


def test_broker_credentials_keep_passwords_and_follow_the_registry(tmp_path: Path) -> None:
    out = tmp_path / "accounts"
    first = run_script(out, "demo", DEVICES, "--simulator")
    assert set(first) == {"bonusd", SIMULATOR, "EGM-1", "EGM-2", "RT-1"}
    assert oct((out / "credentials.csv").stat().st_mode & 0o777) == "0o600"
    assert oct((out / "passwd").stat().st_mode & 0o777) == "0o600"
    hashed = (out / "passwd").read_text()
    assert all(pw not in hashed for pw in first.values())  # only hashes in Mosquitto's file
    acl = (out / "acl").read_text()
    assert "pattern write bonusd/demo/egm/%u/events" in acl
    assert "user bonusd\ntopic read bonusd/demo/+/+/events" in acl

    # a new registry: kept passwords, a new device, a removed one, a second daemon
    again = write_accounts(out, "demo", "device,kind,area\nEGM-1,egm,main\nEGM-9,egm,main\n")
    assert again["EGM-1"] == first["EGM-1"] and again["bonusd"] == first["bonusd"]
    assert "EGM-2" not in again and "EGM-9" in again
    two = write_broker_files(out, [], prefix="bonusd", site="demo", daemons=2, rotate=True)
    assert {a.username for a in two} == {"bonusd", "bonusd-2"}
    assert next(a.password for a in two if a.username == "bonusd") != first["bonusd"]
    assert "user bonusd-2\ntopic read bonusd/demo/+/+/events" in (out / "acl").read_text()
    with pytest.raises(ConfigError, match="reserved"):
        write_broker_files(
            out, read_file(Device, _registry(tmp_path, "bonusd")), prefix="b", site="s"
        )


def _registry(folder: Path, device: str) -> Path:
    path = folder / "odd.csv"
    path.write_text(f"device,kind,area\n{device},egm,main\n")
    return path
