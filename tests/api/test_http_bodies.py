"""Hostile request bodies at every route that takes one: deeply nested JSON, bodies over
the limit (declared or streamed), bytes that are not text. Each is refused with 413 or 422
and a reason, never a 500, and the daemon answers /health throughout (bonusd/api/httpguard.py,
the imports in bonusd/api/app.py and bonusd/registry/records.py)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi.routing import APIRoute
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bonusd.api.app import api_routes
from bonusd.api.httpguard import MAX_BODY_BYTES, MAX_IMPORT_BYTES, BodyLimits, json_too_deep
from tests.daemon_helpers import Daemon

SAMPLE = {
    "promotion": "no-such-promotion",
    "draw": "no-such-draw",
    "session": "no-such-session",
    "number": "1",
    "claim": "1",
    "entry": "1",
}


def deep(levels: int) -> bytes:
    return b'{"x":' + b"[" * levels + b"]" * levels + b"}"


def body_routes(daemon: Daemon) -> list[str]:
    """Every route of the application that takes a body (POST, PUT, PATCH, DELETE)."""
    out = []
    for route in api_routes(daemon.service.app):
        if isinstance(route, APIRoute) and route.methods & {"POST", "PUT", "PATCH", "DELETE"}:
            out.append(re.sub(r"\{(\w+)\}", lambda m: SAMPLE.get(m.group(1), "x"), route.path))
    return out


async def test_deep_json_to_the_imports_is_a_row_error_not_a_500(daemon: Daemon) -> None:
    for path in ("/members/import", "/devices/import"):
        for levels in (100, 1_000, 100_000):
            inside = b'[{"card": "7001", "name": ' + b"[" * levels + b"]" * levels + b"}]"
            r = await daemon.http.post(path, content=inside)
            assert r.status_code == 422, (path, levels, r.text[:200])
            errors = r.json()["errors"]
            assert errors[0]["row"] == 1 and errors[0]["field"] == "name", errors
            assert "not a list" in errors[0]["problem"]
            whole = b"[" * levels + b"]" * levels  # the file itself nested
            r = await daemon.http.post(path, content=whole)
            assert r.status_code == 422, (path, levels, r.text[:200])
            assert r.json()["errors"][0]["field"] == "(file)"
            assert "array of objects" in r.json()["errors"][0]["problem"]
    assert (await daemon.http.get("/health")).status_code == 200


async def test_every_route_with_a_body_refuses_deep_and_large_json(daemon: Daemon) -> None:
    routes = body_routes(daemon)
    assert len(routes) >= 15, routes  # the imports, the draws', claims', jackpots' actions
    for path in routes:
        if path.endswith("/import"):
            continue  # files, not JSON bodies: the test above
        r = await daemon.http.post(path, content=deep(20_000))
        assert r.status_code == 422, (path, r.status_code, r.text[:200])
        assert "nest" in r.json()["detail"]
        r = await daemon.http.post(
            path, content=b" " * (MAX_BODY_BYTES + 1), headers={"content-type": "application/json"}
        )
        assert r.status_code == 413, (path, r.status_code)

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
            for _ in range(MAX_BODY_BYTES // 1024 + 2):
                yield b" " * 1024

        r = await daemon.http.post(path, content=chunks())
        assert r.status_code == 413, (path, r.status_code)
    assert (await daemon.http.get("/health")).status_code == 200


async def test_a_shallow_body_still_reaches_its_route(daemon: Daemon) -> None:
    """The guard replays what it read: an ordinary body is judged by the route itself."""
    r = await daemon.http.post(
        "/promotions/no-such-promotion/draws/no-such-draw/run", json={"round": 1}
    )
    assert r.status_code == 404, r.text
    r = await daemon.http.post(
        "/promotions/no-such-promotion/draws/no-such-draw/run", json={"round": "one"}
    )
    assert r.status_code == 422 and "nest" not in r.text


async def test_an_import_over_the_limit_is_refused_before_it_is_read(daemon: Daemon) -> None:
    """A declared length over the limit: 413 at once, with 50 MB never sent (a raw socket,
    as a client library will not declare more than it sends)."""
    url = daemon.http.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        auth = daemon.http.headers["authorization"]
        writer.write(
            f"POST /members/import HTTP/1.1\r\nHost: {url.host}\r\nAuthorization: {auth}\r\n"
            f"Content-Length: {MAX_IMPORT_BYTES + 1}\r\n\r\ncard,name,tier\n".encode()
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 10)
        assert status.split()[1] == b"413", status
        head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode().lower()
        length = int(re.search(r"content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        detail = json.loads(await reader.readexactly(length))["detail"]
        assert str(MAX_IMPORT_BYTES) in detail
    finally:
        writer.close()


async def test_an_import_that_is_not_utf8_is_a_file_error(daemon: Daemon) -> None:
    r = await daemon.http.post("/members/import", content=b"card,name,tier\n7001,\xff\xfe,Q\n")
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"] == "(file)"
    assert "UTF-8" in r.json()["errors"][0]["problem"]


async def test_a_streamed_import_over_its_limit_gives_413() -> None:
    """The streamed routes count their body as they read it (a small limit here)."""

    async def endpoint(request: Request) -> JSONResponse:
        n = 0
        async for chunk in request.stream():
            n += len(chunk)
        return JSONResponse({"read": n})

    app = BodyLimits(
        Starlette(routes=[Route("/members/import", endpoint, methods=["POST"])]),
        streamed={"/members/import": 10_000},
    )

    def chunks(n: int) -> Iterator[bytes]:
        for _ in range(n):
            yield b"x" * 1_000

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        ok = await http.post("/members/import", content=b"".join(chunks(10)))
        assert ok.status_code == 200 and ok.json() == {"read": 10_000}
        r = await http.post("/members/import", content=b"".join(chunks(11)))
        assert r.status_code == 413  # declared

        async def unsized() -> AsyncIterator[bytes]:  # chunked: no Content-Length
            for chunk in chunks(11):
                yield chunk

        r = await http.post("/members/import", content=unsized())
        assert r.status_code == 413  # counted as the route read it


@pytest.mark.parametrize("levels", [1, 32, 33, 100, 1_000, 100_000])
def test_json_depth_is_measured_without_recursion(levels: int) -> None:
    body = b"[" * levels + b"]" * levels
    assert json_too_deep(body) is (levels > 32)
    assert json_too_deep(json.dumps({"a": "[[[[" * 100}).encode()) is False  # text, not depth
    assert json_too_deep(b"[[[ not json") is False
