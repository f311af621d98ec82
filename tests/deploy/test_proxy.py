"""TLS in front: Debian's nginx with deploy/nginx/bonusd.conf (rewritten to spare ports
and a test-made certificate) in front of a real daemon. Through it, over TLS: a signage
websocket follows a draw the desk runs through the proxy, a crew member presents the
winner, the API answers; the daemon counts failed token checks per real client address
(BONUSD_TRUSTED_PROXIES), never per proxy and never per address a client claims; and
the proxy closes what uvicorn alone would hold (docs/robustness.md, "Known limits")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import websockets

from bonusd.access.auth import Role
from bonusd.settings import Settings
from tests.daemon_helpers import running
from tests.deploy.helpers import Certificates, Proxy, make_certificates, nginx, tool
from tests.push.helpers import GH, draw_day, ensure_closed, events, golden_horse, recv, token, until

HALFWAY = f"/promotions/{GH}/draws/halfway"


@pytest.fixture
def certs(tmp_path: Path) -> Certificates:
    tool("nginx", "nginx")
    return make_certificates(tmp_path / "tls")


def _tls(certs: Certificates) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certs.ca))


def _web(
    proxy: Proxy, certs: Certificates, token: str = "", source: str = "127.0.0.1"
) -> httpx.AsyncClient:
    """An HTTPS client of the proxy, from loopback address `source`."""
    transport = httpx.AsyncHTTPTransport(verify=_tls(certs), local_address=source)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(base_url=proxy.base, transport=transport, headers=headers, timeout=10)


async def test_signage_crew_and_api_through_the_proxy(
    settings: Settings, redis_url: str, site: str, tmp_path: Path, certs: Certificates
) -> None:
    trusting = settings.model_copy(update={"trusted_proxies": "127.0.0.1"})
    async with draw_day(golden_horse(trusting, tmp_path, site), redis_url, site) as d:
        with nginx(tmp_path / "nginx", daemon_port=settings.http_port, certs=certs) as proxy:
            desk = _web(proxy, certs, await token(d, Role.DESK))
            crew = _web(proxy, certs, await token(d, Role.CREW))
            screen = await token(d, Role.SIGNAGE, "main")
            uri = f"wss://127.0.0.1:{proxy.tls_port}/ws/signage?area=main"
            async with websockets.connect(uri, ssl=_tls(certs)) as signage:
                await signage.send(json.dumps({"token": screen}))
                first = await recv(signage)
                assert first["type"] == "snapshot"
                assert first["state"]["next_draw"]["round"] == 1

                # an API call: the desk's view of the promotions, over TLS
                listed = await desk.get("/promotions")
                assert listed.status_code == 200, listed.text
                assert GH in {p["id"] for p in listed.json()}
                assert listed.headers["strict-transport-security"] == "max-age=31536000"

                # the desk draws round 1 through the proxy; the screen sees the winners
                await ensure_closed(d)  # an approved early close (it is 18:55)
                drawn = await desk.post(f"{HALFWAY}/run", json={"round": 1})
                assert drawn.status_code == 200, drawn.text
                seen = await until(signage, lambda m: len(events([m], "winner")) == 5)
                assert len(events(seen, "winner")) == 5

                # a crew action through the proxy: the winner is presented, the screen follows
                claim = drawn.json()["claims"][0]["claim"]
                presented = await crew.post(f"{HALFWAY}/claims/{claim}/present")
                assert presented.status_code == 200, presented.text
                more = await until(signage, lambda m: bool(events([m], "outcome")))
                (outcome,) = events(more, "outcome")
                assert (outcome["claim"], outcome["state"]) == (claim, "presented")
            for client in (desk, crew):
                await client.aclose()


@pytest.fixture
async def proxied(
    settings: Settings, tmp_path: Path, certs: Certificates
) -> AsyncIterator[tuple[Proxy, Settings]]:
    """A daemon believing the proxy on 127.0.0.1, at most 3 failed token checks per
    client address; nginx in front with a 1 s header timeout (10 s as shipped)."""
    limited = settings.model_copy(
        update={"trusted_proxies": "127.0.0.1", "limit_auth_failures_per_client": 3}
    )
    async with running(limited):
        port = limited.http_port
        with nginx(tmp_path / "nginx", daemon_port=port, certs=certs, header_timeout="1s") as proxy:
            yield proxy, limited


async def _failures(client: httpx.AsyncClient, n: int, **headers: str) -> list[int]:
    """Statuses of `n` requests with unknown tokens (a fresh token id each)."""
    statuses = []
    for i in range(n):
        bogus = {"Authorization": f"Bearer bd_{i:012x}_not-a-secret", **headers}
        statuses.append((await client.get("/promotions", headers=bogus)).status_code)
    return statuses


async def test_rate_limits_count_the_real_client_address(
    proxied: tuple[Proxy, Settings], certs: Certificates
) -> None:
    proxy, limited = proxied
    first, second = _web(proxy, certs, source="127.0.0.2"), _web(proxy, certs, source="127.0.0.3")
    direct = httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{limited.http_port}",
        transport=httpx.AsyncHTTPTransport(local_address="127.0.0.4"),
    )
    try:
        # 127.0.0.2 spends its 3 failed checks, then is held off
        assert await _failures(first, 4) == [401, 401, 401, 429]
        # 127.0.0.3, behind the same proxy, has its own count, and cannot borrow
        # another's address: nginx sets X-Forwarded-For, it never appends to it
        assert await _failures(second, 2, **{"X-Forwarded-For": "127.0.0.9"}) == [401, 401]
        assert await _failures(second, 2) == [401, 429]
        # the header from anyone but the proxy is not believed: 127.0.0.4 claiming to be
        # the held-off 127.0.0.2 is counted as itself
        assert await _failures(direct, 1, **{"X-Forwarded-For": "127.0.0.2"}) == [401]
    finally:
        for client in (first, second, direct):
            await client.aclose()


async def _closed_by_the_proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Wait (5 s at most: the header timeout is 1 s here) until the proxy ends the
    connection, with a FIN or a reset (`reset_timedout_connection on`)."""
    try:
        async with asyncio.timeout(5):
            while await reader.read(4096):
                pass
    except ConnectionResetError:
        pass
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()


async def test_the_proxy_closes_silent_slow_and_oversized_requests(
    proxied: tuple[Proxy, Settings], certs: Certificates
) -> None:
    proxy, limited = proxied
    # a TCP connection that never sends anything (not even a TLS hello)
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.tls_port)
    await _closed_by_the_proxy(reader, writer)
    # a request whose headers never end
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", proxy.tls_port, ssl=_tls(certs), server_hostname="localhost"
    )
    writer.write(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
    await _closed_by_the_proxy(reader, writer)

    web = _web(proxy, certs)
    try:
        # a body over the daemon's 64 KiB never reaches it; an import may be far larger
        big = "x" * 100_000
        assert (await web.post("/promotions/reload", content=big)).status_code == 413
        rows = "card,name,tier\n" + "not-a-card,Someone,Q\n" * 5_000  # ~105 KB
        imported = await web.post(
            "/members/import", content=rows, headers={"content-type": "text/csv"}
        )
        assert imported.status_code == 401  # the daemon answered: no token
        # /metrics only on the back-office network; plain HTTP is sent to HTTPS
        assert (await web.get("/metrics")).status_code == 404
        health = await web.get("/health")
        assert health.status_code == 200 and health.json()["redis"] == "ok"
    finally:
        await web.aclose()
    async with httpx.AsyncClient() as plain:
        moved = await plain.get(f"http://127.0.0.1:{proxy.http_port}/health")
        assert (moved.status_code, moved.headers["location"]) == (
            301,
            "https://127.0.0.1/health",
        )
        direct = await plain.get(f"http://127.0.0.1:{limited.http_port}/metrics")
        assert direct.status_code == 200
