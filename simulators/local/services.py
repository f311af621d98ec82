"""Local Redis and Mosquitto processes on loopback, for the demo, the tests and benchmarks.

A casino runs its own Redis and broker; this module only starts throwaway ones, each in
its own working folder, with the broker configuration shipped in deploy/mosquitto/.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from bonusd.errors import ServiceUnavailableError

BROKER_CONF = Path(__file__).resolve().parents[2] / "deploy" / "mosquitto" / "bonusd.conf"
_OWN_LINES = (
    "listener",
    "port",
    "persistence_location",
    "log_dest",
    "pid_file",
    "bind_address",
    "user",
    "include_dir",
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, *, timeout: float = 10.0, what: str = "service") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise ServiceUnavailableError(f"{what} did not start listening on 127.0.0.1:{port}")


class _Process:
    """A child server process that can be stopped, killed and started again in place."""

    binary: str = ""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        if shutil.which(self.binary) is None:
            raise ServiceUnavailableError(
                f"{self.binary} is not installed; on Debian: apt-get install -y "
                f"{'redis-server' if self.binary == 'redis-server' else 'mosquitto'}"
            )
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.binary}.log"

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.command(), cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        wait_for_port(self.port, what=f"{self.binary} (log: {self.log_path})")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the process (SIGTERM: graceful, it saves state; SIGKILL: a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=15)
        self.proc = None

    def restart(self, sig: int = signal.SIGTERM) -> None:
        """Stop (SIGTERM: a graceful restart; SIGKILL: a crash) and start again in place."""
        self.stop(sig)
        self.start()

    def __enter__(self) -> _Process:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class LocalMosquitto(_Process):
    """Mosquitto with bonusd's broker configuration, persistence in `workdir`."""

    binary = "mosquitto"

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        conf = self.workdir / "mosquitto.conf"
        lines = [
            line
            for line in BROKER_CONF.read_text().splitlines()
            if not line.strip().startswith(_OWN_LINES)
        ]
        lines += [
            # as root, mosquitto would switch to its own user and fail to write here
            f"user {getpass.getuser()}",
            f"listener {self.port} 127.0.0.1",
            f"persistence_location {self.workdir}{os.sep}",
            f"log_dest file {self.log_path}",
        ]
        conf.write_text("\n".join(lines) + "\n")
        return ["mosquitto", "-c", str(conf)]

    def start(self) -> None:
        # the broker writes its own log file; ours would only hold start-up noise
        self.proc = subprocess.Popen(
            self.command(), cwd=self.workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port(self.port, what=f"mosquitto (log: {self.log_path})")


class LocalRedis(_Process):
    """redis-server with AOF persistence in `workdir`.

    `appendfsync` is Redis's own setting: "everysec" (its default: a crash may lose the
    last second of writes) or "always" (every write is on disk before it is answered, so a
    `kill -9` loses nothing that a client was told succeeded)."""

    binary = "redis-server"

    def __init__(
        self, workdir: Path, port: int | None = None, *, appendfsync: str = "everysec"
    ) -> None:
        if appendfsync not in ("always", "everysec", "no"):
            raise ValueError(f"appendfsync is always, everysec or no, not {appendfsync!r}")
        super().__init__(workdir, port)
        self.appendfsync = appendfsync

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        return [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.workdir),
            "--appendonly",
            "yes",
            "--appendfsync",
            self.appendfsync,
            "--save",
            "",
        ]
