"""What the deployment tests share: the files of deploy/, a test-made certificate
authority, a redis-server with or without deploy/redis/bonusd.conf, nginx with
deploy/nginx/bonusd.conf rewritten to spare ports, and a stand-in for systemd's notify
socket. Everything runs on spare loopback ports in the test's own folder."""

from __future__ import annotations

import datetime as dt
import getpass
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from simulators.local.services import LocalRedis, free_port, wait_for_port
from tests.daemon_helpers import PROJECT

DEPLOY = PROJECT / "deploy"
REDIS_POLICY = DEPLOY / "redis" / "bonusd.conf"
NGINX_SITE = DEPLOY / "nginx" / "bonusd.conf"


def tool(name: str, package: str) -> str:
    """The path of a Debian tool the test needs, or a skip saying how to get it."""
    for folder in ("", "/usr/sbin", "/usr/local/sbin", "/sbin"):
        found = shutil.which(name, path=folder or None)
        if found:
            return found
    pytest.skip(
        f"{name} is not installed: `make test` installs Debian's {package} "
        "(scripts/ensure-services.sh --with-test-tools), or apt-get install -y " + package
    )


# -- a certificate authority and a server certificate -----------------------------------


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the authority clients trust
    chain: Path  # the server's certificate, then the authority's (nginx's ssl_certificate)
    key: Path
    expires: dt.datetime


def make_certificates(folder: Path, *, days: int = 30) -> Certificates:
    """A throwaway authority and a certificate for localhost / 127.0.0.1 signed by it."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bonusd test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    expires = (now + dt.timedelta(days=days)).replace(microsecond=0)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(expires)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    folder.mkdir(parents=True, exist_ok=True)
    certs = Certificates(folder / "ca.crt", folder / "bonusd.crt", folder / "bonusd.key", expires)
    certs.ca.write_bytes(ca.public_bytes(pem))
    certs.chain.write_bytes(leaf.public_bytes(pem) + ca.public_bytes(pem))
    certs.key.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    certs.key.chmod(0o600)
    return certs


# -- Redis ------------------------------------------------------------------------------


class PolicyRedis(LocalRedis):
    """redis-server on a spare port from a main file like Debian's (no AOF, no limit), with
    deploy/redis/bonusd.conf included after it when `policy`, as the unit's drop-in does."""

    def __init__(self, workdir: Path, *, policy: bool, port: int | None = None) -> None:
        super().__init__(workdir, port)
        self.policy = policy

    def command(self) -> list[str]:
        main = self.workdir / "redis.conf"
        main.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.workdir}\n"
            'appendonly no\nsave ""\nlogfile ""\n'
        )
        include = ["--include", str(REDIS_POLICY)] if self.policy else []
        return ["redis-server", str(main), *include]


# -- nginx ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proxy:
    tls_port: int
    http_port: int
    folder: Path

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.tls_port}"


def nginx_site(
    *,
    daemon_port: int,
    tls_port: int,
    http_port: int,
    certs: Certificates,
    header_timeout: str,
    backup_port: int | None = None,
) -> str:
    """deploy/nginx/bonusd.conf with its addresses, ports and certificate paths replaced
    (each replacement must hit, so the test follows the file), and the header timeout
    shortened so a silent connection's end is seen quickly. The other server's daemon is
    `backup_port` (default: a port nothing listens on)."""
    text = NGINX_SITE.read_text()
    replacements = [
        (r"server 10\.0\.0\.11:8000 ", f"server 127.0.0.1:{daemon_port} ", 1),
        (
            r"server 10\.0\.0\.12:8000 backup;",
            f"server 127.0.0.1:{backup_port or free_port()} backup;",
            1,
        ),
        (r"listen 80;", f"listen 127.0.0.1:{http_port};", 1),
        (r"listen 443 ssl http2;", f"listen 127.0.0.1:{tls_port} ssl http2;", 1),
        (r"\n\s*listen \[::\]:(80|443)[^;]*;", "", 2),
        (r"/etc/nginx/tls/bonusd\.crt", str(certs.chain), 1),
        (r"/etc/nginx/tls/bonusd\.key", str(certs.key), 1),
        (r"client_header_timeout 10s;", f"client_header_timeout {header_timeout};", 1),
    ]
    for pattern, new, count in replacements:
        text, made = re.subn(pattern, new, text)
        assert made == count, f"deploy/nginx/bonusd.conf: {pattern!r} found {made} times"
    return text


def nginx_main(folder: Path, site: Path) -> Path:
    """A main nginx.conf of the test's own (pid, logs and temporary files in `folder`)
    that includes the site file as Debian's includes sites-enabled/."""
    main = folder / "nginx.conf"
    temp = "\n".join(
        f"    {kind}_temp_path {folder / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    user = f"user {getpass.getuser()};\n" if os.geteuid() == 0 else ""
    main.write_text(
        f"{user}worker_processes 1;\npid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'error.log'} info;\n"
        "events { worker_connections 512; }\n"
        f"http {{\n    access_log {folder / 'access.log'};\n{temp}\n    include {site};\n}}\n"
    )
    return main


@contextmanager
def nginx(
    folder: Path,
    *,
    daemon_port: int,
    certs: Certificates,
    header_timeout: str = "10s",
    backup_port: int | None = None,
) -> Iterator[Proxy]:
    """nginx in the foreground with deploy/nginx/bonusd.conf in front of the daemon on
    `daemon_port` (and the one on `backup_port` as the other server's); stopped
    (SIGQUIT: graceful) at the end."""
    binary = tool("nginx", "nginx")
    folder.mkdir(parents=True, exist_ok=True)
    proxy = Proxy(free_port(), free_port(), folder)
    site = folder / "bonusd.conf"
    site.write_text(
        nginx_site(
            daemon_port=daemon_port,
            tls_port=proxy.tls_port,
            http_port=proxy.http_port,
            certs=certs,
            header_timeout=header_timeout,
            backup_port=backup_port,
        )
    )
    main = nginx_main(folder, site)
    command = [binary, "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(main)]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    process = subprocess.Popen(
        [*command, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(proxy.tls_port, what=f"nginx (log: {folder / 'error.log'})")
        yield proxy
    finally:
        process.send_signal(signal.SIGQUIT)  # graceful: finish what is open, then exit
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- systemd's notify socket --------------------------------------------------------------


class NotifySocket:
    """What systemd listens on for a Type=notify unit: a datagram socket whose messages
    (`READY=1`, `WATCHDOG=1`, ...) are kept in order."""

    def __init__(self) -> None:
        # a short path: unix socket paths are limited to 107 bytes
        self.folder = Path(tempfile.mkdtemp(prefix="bonusd-notify-", dir="/tmp"))
        self.path = self.folder / "notify"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.settimeout(0.2)
        self.messages: list[str] = []

    def until(self, wanted: str, timeout: float) -> list[str]:
        """Read until a message holds the line `wanted`; every message read so far."""
        deadline = time.monotonic() + timeout
        while not any(wanted in m.splitlines() for m in self.messages):
            assert time.monotonic() < deadline, f"no {wanted} within {timeout}s: {self.messages}"
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except TimeoutError:
                continue
        return self.messages

    def read_for(self, seconds: float) -> list[str]:
        """Every message that arrives within `seconds`."""
        deadline, got = time.monotonic() + seconds, []
        while time.monotonic() < deadline:
            try:
                got.append(self.sock.recv(4096).decode())
            except TimeoutError:
                continue
        self.messages += got
        return got

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.folder, ignore_errors=True)
