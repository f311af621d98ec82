"""A point-in-time snapshot of a Redis, taken as a replica takes one, and a throwaway
redis-server to read one back (docs/deploy.md, "Backups and restores").

`fetch_snapshot` sends `SYNC`: Redis forks, its child writes an RDB file of the whole
dataset as it was at the fork, and Redis streams it to us. Redis goes on serving writes
meanwhile (a fork is what every AOF rewrite costs too), so a backup pauses nothing; every
key of the snapshot is of the same instant, so a draw, its ledger and its audit record
are never copied from two different moments. The file is written as it arrives, 1 MiB at
a time, with its SHA-256.

`ScratchRedis` runs redis-server on such a file, on a Unix socket in a temporary folder,
with no TCP port and no persistence, for `bonusd restore` to read one site's keys from.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import redis.exceptions
from redis.asyncio import Redis
from redis.asyncio.connection import SSLConnection, parse_url
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from bonusd.errors import BonusdError

CHUNK = 1 << 20
IDLE_TIMEOUT_S = 120.0  # Redis sends a newline a second while its child writes the file
LOAD_TIMEOUT_S = 3600.0  # a scratch server loading a large snapshot

Progress = Callable[[int, int | None], None]  # bytes done, bytes in all (None: not known yet)


class RedisSnapshotError(BonusdError):
    """A snapshot could not be taken or read back; the message says why and what to do."""


@dataclass(frozen=True)
class SnapshotFile:
    """What `fetch_snapshot` wrote."""

    path: Path
    size: int
    sha256: str
    rdb_version: int
    redis_version: str
    taken_at: int  # the RDB's `ctime`: the instant of the fork, Unix seconds (0: not said)


def fetch_snapshot(url: str, path: Path, *, progress: Progress | None = None) -> SnapshotFile:
    """Write a point-in-time RDB of the Redis at `url` (every database) to `path`."""
    where: dict[str, Any] = dict(parse_url(url))
    try:
        with _connect(where) as conn:
            _authenticate(conn, where)
            conn.sendall(b"SYNC\r\n")
            size = _bulk_header(conn)
            digest = _receive(conn, path, size, progress)
    except OSError as exc:
        raise RedisSnapshotError(f"no snapshot from Redis: {exc}") from exc
    version, aux = read_header(path)
    return SnapshotFile(
        path=path,
        size=size,
        sha256=digest,
        rdb_version=version,
        redis_version=aux.get("redis-ver", ""),
        taken_at=int(aux.get("ctime", "0") or 0),
    )


def _connect(where: dict[str, Any]) -> socket.socket:
    if "path" in where:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(IDLE_TIMEOUT_S)
        conn.connect(where["path"])
        return conn
    conn = socket.create_connection((where["host"], where.get("port", 6379)), IDLE_TIMEOUT_S)
    if where.get("connection_class") is SSLConnection:  # rediss://, ?ssl_ca_certs= as redis-py
        tls = ssl.create_default_context(cafile=where.get("ssl_ca_certs"))
        return tls.wrap_socket(conn, server_hostname=where["host"])
    return conn


def _authenticate(conn: socket.socket, where: dict[str, Any]) -> None:
    password = where.get("password")
    if not password:
        return
    user = where.get("username")
    words = [b"AUTH", *([user.encode()] if user else []), password.encode()]
    conn.sendall(_command(words))
    reply = _line(conn)
    if not reply.startswith(b"+"):
        raise RedisSnapshotError(f"Redis refused the credentials: {reply.decode(errors='replace')}")


def _command(words: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


def _line(conn: socket.socket) -> bytes:
    out = bytearray()
    while not out.endswith(b"\r\n"):
        byte = conn.recv(1)
        if not byte:
            raise RedisSnapshotError("Redis closed the connection before the snapshot began")
        out += byte
    return bytes(out[:-2])


def _bulk_header(conn: socket.socket) -> int:
    """Skip the keep-alive newlines sent while Redis's child writes the file; the size."""
    while True:
        first = conn.recv(1)
        if first == b"\n":
            continue
        if not first:
            raise RedisSnapshotError("Redis closed the connection before the snapshot began")
        line = first + _line(conn)
        if line.startswith(b"$") and line[1:].isdigit():
            return int(line[1:])
        text = line.decode(errors="replace").lstrip("-")
        if "NOPERM" in text or "no permissions" in text:
            text += "; bonusd's Redis user needs +sync, as a replica does"
        raise RedisSnapshotError(f"Redis refused a snapshot: {text}")


def _receive(conn: socket.socket, path: Path, size: int, progress: Progress | None) -> str:
    digest, done = hashlib.sha256(), 0
    with path.open("wb") as out:
        while done < size:
            chunk = conn.recv(min(CHUNK, size - done))
            if not chunk:
                raise RedisSnapshotError(
                    f"Redis closed the connection after {done} of {size} bytes"
                )
            out.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, size)
        out.flush()
    return digest.hexdigest()


# -- the RDB file's header: its format version and the facts Redis put first ---------------


def read_header(path: Path) -> tuple[int, dict[str, str]]:
    """The RDB format version and the auxiliary fields (`redis-ver`, `ctime`, ...) that
    open an RDB file."""
    with path.open("rb") as stream:
        head = stream.read(1 << 16)
    if len(head) < 9 or not head.startswith(b"REDIS") or not head[5:9].isdigit():
        raise RedisSnapshotError(f"{path} is not an RDB file")
    aux: dict[str, str] = {}
    pos = 9
    with contextlib.suppress(
        IndexError, RedisSnapshotError
    ):  # the fields end where the data begins
        while head[pos] == 0xFA:
            name, pos = _rdb_string(head, pos + 1)
            value, pos = _rdb_string(head, pos)
            aux[name.decode(errors="replace")] = value.decode(errors="replace")
    return int(head[5:9]), aux


def _rdb_string(buf: bytes, pos: int) -> tuple[bytes, int]:
    first = buf[pos]
    kind, low = first >> 6, first & 0x3F
    if kind == 0:
        return buf[pos + 1 : pos + 1 + low], pos + 1 + low
    if kind == 1:
        size = (low << 8) | buf[pos + 1]
        return buf[pos + 2 : pos + 2 + size], pos + 2 + size
    if first in (0x80, 0x81):
        width = 4 if first == 0x80 else 8
        size = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
        start = pos + 1 + width
        return buf[start : start + size], start + size
    if kind == 3 and low <= 2:  # an integer kept in 1, 2 or 4 bytes
        width = 1 << low
        number = int.from_bytes(buf[pos + 1 : pos + 1 + width], "little", signed=True)
        return str(number).encode(), pos + 1 + width
    raise RedisSnapshotError("a compressed string in the RDB header")


# -- a throwaway redis-server on a snapshot ----------------------------------------------


class ScratchRedis:
    """redis-server on the RDB file `rdb`, reachable only through a Unix socket in its own
    temporary folder, without persistence; stopped and its folder removed on exit.
    `client(db)` gives clients of it (bytes, or str with `decode=True`)."""

    def __init__(self, rdb: Path, *, binary: str = "redis-server") -> None:
        self.rdb = rdb.resolve()
        self.binary = binary
        self.folder = Path()
        self._process: asyncio.subprocess.Process | None = None
        self._clients: list[Redis] = []

    @property
    def socket(self) -> Path:
        return self.folder / "redis.sock"

    async def __aenter__(self) -> ScratchRedis:
        found = shutil.which(self.binary)
        if found is None:
            raise RedisSnapshotError(
                f"{self.binary} not found: a restore reads the snapshot with a redis-server of "
                "the same or a newer version (apt-get install redis-server; --redis-server PATH)"
            )
        self.folder = Path(tempfile.mkdtemp(prefix="bonusd-restore-"))
        (self.folder / "dump.rdb").symlink_to(self.rdb)
        self._process = await asyncio.create_subprocess_exec(
            found,
            *("--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700"),
            *("--dir", str(self.folder), "--dbfilename", "dump.rdb", "--appendonly", "no"),
            *("--save", "", "--logfile", str(self.folder / "redis.log"), "--databases", "16"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await self._wait_loaded()
        except BaseException:
            await self._stop()
            raise
        return self

    async def _wait_loaded(self) -> None:
        # no retries of its own: this loop retries every 0.05 s and looks at the process
        # between tries (redis-py's default backoff waited ~4 s on a server that had exited)
        probe = Redis(unix_socket_path=str(self.socket), retry=Retry(NoBackoff(), 0))
        self._clients.append(probe)
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.returncode is not None:
                raise RedisSnapshotError(
                    f"redis-server could not load {self.rdb}: {self._log_tail()}"
                )
            with contextlib.suppress(redis.exceptions.ConnectionError, OSError):
                await probe.ping()  # BusyLoadingError (a ConnectionError) while it loads
                return
            await asyncio.sleep(0.05)
        raise RedisSnapshotError(
            f"redis-server did not load {self.rdb} within {LOAD_TIMEOUT_S:g} s"
        )

    def _log_tail(self) -> str:
        try:
            lines = (self.folder / "redis.log").read_text(errors="replace").splitlines()
        except OSError:
            return "no log"
        return " / ".join(line.split(" * ", 1)[-1].split(" # ", 1)[-1] for line in lines[-3:])

    def client(self, db: int, *, decode: bool = False) -> Redis:
        made = Redis(unix_socket_path=str(self.socket), db=db, decode_responses=decode)
        self._clients.append(made)
        return made

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stop()

    async def _stop(self) -> None:
        for made in self._clients:
            await made.aclose()
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await self._process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
