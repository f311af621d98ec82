"""A throwaway local Redis Cluster on loopback (masters only), for tests and benchmarks.

`LocalRedisCluster` starts N `redis-server --cluster-enabled yes` processes on free
ports, each in its own folder under `workdir`, joins them with `redis-cli --cluster
create ... --cluster-replicas 0` and waits until every slot is served. A production
group runs a managed cluster with replicas (docs/scaling.md); this is only its shape.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from bonusd.errors import ServiceUnavailableError
from simulators.local.services import free_port, wait_for_port

SLOTS = 16384
BUS_OFFSET = 10000  # Redis Cluster's node-to-node bus listens on port + 10000


def _node_port() -> int:
    """A free port whose cluster bus port (port + 10000) is a valid, free port too."""
    for _ in range(200):
        port = free_port()
        if port + BUS_OFFSET > 65535:
            continue
        with contextlib.suppress(OSError), socket.socket() as s:
            s.bind(("127.0.0.1", port + BUS_OFFSET))
            return port
    raise ServiceUnavailableError("no free pair of ports (node, node + 10000) on 127.0.0.1")


class LocalRedisCluster:
    """`masters` cluster nodes on 127.0.0.1 (no replicas, no persistence)."""

    def __init__(self, workdir: Path, masters: int = 3) -> None:
        for binary in ("redis-server", "redis-cli"):
            if shutil.which(binary) is None:
                raise ServiceUnavailableError(
                    f"{binary} is not installed; on Debian: apt-get install -y redis-server"
                )
        if masters < 3:
            raise ValueError("redis-cli --cluster create needs 3 masters or more")
        self.workdir = workdir
        self.ports = [_node_port() for _ in range(masters)]
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        """A startup node; the client discovers the others."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def _command(self, port: int, folder: Path) -> list[str]:
        return [
            "redis-server",
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(folder),
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", "5000",
            "--appendonly", "no",
            "--save", "",
        ]  # fmt: skip

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()  # no node left running behind a failed start
            raise

    def _start(self) -> None:
        for port in self.ports:
            folder = self.workdir / f"node-{port}"
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / "redis-server.log").open("ab") as log:
                self.procs.append(
                    subprocess.Popen(
                        self._command(port, folder),
                        cwd=folder,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        for port in self.ports:
            wait_for_port(port, what=f"redis-server (cluster node, {self.workdir})")
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        done = subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *nodes,
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise ServiceUnavailableError(f"redis-cli --cluster create failed: {done.stdout}")
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        """Until every node reports the cluster ok with all slots assigned."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self._info(p).get("cluster_state") == "ok" for p in self.ports):
                return
            time.sleep(0.1)
        raise ServiceUnavailableError(f"the local Redis Cluster in {self.workdir} never got ok")

    def _info(self, port: int) -> dict[str, str]:
        out = subprocess.run(
            ["redis-cli", "-p", str(port), "cluster", "info"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
        return dict(line.strip().split(":", 1) for line in out.splitlines() if ":" in line.strip())

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
        self.procs = []

    def __enter__(self) -> LocalRedisCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
