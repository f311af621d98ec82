"""What tests import to run a daemon in-process: `running` (a `Service` on a real port,
with an admin client), the `Daemon` it yields, the floor's UTC offset, the project root and
`loopback_tls` (hand it to any httpx client of a test: it saves building a TLS context per
client). The fixtures built on them are in conftest.py."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings

SAST = dt.timezone(dt.timedelta(hours=2))
PROJECT = Path(__file__).resolve().parent.parent


@functools.cache
def loopback_tls() -> ssl.SSLContext:
    """One TLS context for the tests' HTTP clients: the daemon serves plain HTTP on
    loopback, but httpx builds a context (reading the whole CA bundle, ~50 ms) for each
    client it makes unless it is handed one."""
    return httpx.create_ssl_context()


class Daemon:
    """A running in-process `Service` and an HTTP client (admin token) on its real port."""

    def __init__(self, service: Service, http: httpx.AsyncClient) -> None:
        self.service = service
        self.http = http

    async def wait_committed(self, n: int, timeout: float = 20.0) -> None:
        """Wait until the ingest has committed at least `n` messages this run."""
        async with asyncio.timeout(timeout):
            while self.service.ingest.committed < n:
                await asyncio.sleep(0.01)

    async def client(self, role: Role, area: str = "") -> httpx.AsyncClient:
        """A new HTTP client holding a fresh token of `role` (close it after use)."""
        issued = await self.service.tokens.issue(
            role=role,
            name=f"test {role}",
            area=area,
            now=self.service.clock.now(),
            valid_for=dt.timedelta(days=400),
        )
        return httpx.AsyncClient(
            base_url=str(self.http.base_url),
            headers={"Authorization": f"Bearer {issued.token}"},
            timeout=10,
            verify=loopback_tls(),
        )

    async def get(self, path: str) -> Any:
        response = await self.http.get(path)
        response.raise_for_status()
        return response.json()


@contextlib.asynccontextmanager
async def running(settings: Settings, clock: ManualClock | None = None) -> AsyncIterator[Daemon]:
    async with Service(settings, clock=clock) as service, asyncio.TaskGroup() as tg:
        tg.create_task(service.run(install_signal_handlers=False))
        base = f"http://127.0.0.1:{settings.http_port}"
        admin = await service.tokens.issue(
            role=Role.ADMIN,
            name="test suite",
            now=service.clock.now(),
            valid_for=dt.timedelta(days=365),
        )
        headers = {"Authorization": f"Bearer {admin.token}"}
        # idle connections dropped before the server's keep-alive timeout (uvicorn: 5 s)
        # ends them: reusing one the server is closing fails with ReadError
        limits = httpx.Limits(keepalive_expiry=2)
        async with httpx.AsyncClient(
            base_url=base, timeout=10, headers=headers, limits=limits, verify=loopback_tls()
        ) as http:
            async with asyncio.timeout(10):
                while True:
                    with contextlib.suppress(httpx.TransportError):
                        if (await http.get("/health")).json()["mqtt"] == "connected":
                            break
                    await asyncio.sleep(0.02)
            try:
                yield Daemon(service, http)
            finally:
                service.stop()  # a graceful stop, also when the test body failed


def daemon_process(env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
    """`bonusd run` as a child process with `env`, its output appended to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bonusd", "run"], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def run_until_exit(
    env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`bonusd run` with `env` in `cwd` until it exits by itself (its output captured)."""
    return subprocess.run(
        [sys.executable, "-m", "bonusd", "run"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def wait_healthy(port: int, timeout: float = 15) -> None:
    """Block until the daemon on `port` says its broker session is connected."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", verify=loopback_tls()) as http:
        while time.monotonic() < deadline:
            try:
                if http.get("/health").json()["mqtt"] == "connected":
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    raise AssertionError("daemon did not become healthy")
