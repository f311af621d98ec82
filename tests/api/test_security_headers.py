"""Secure headers on every response of every route (bonusd/api/httpguard.py): nosniff, no
referrer, no framing, a Content-Security-Policy, and `Cache-Control: no-store` on all but
the data-free static files; with the role's token, without one, and on refusals (404,
413, 422). The HTML the server writes (prize letter, ticket slips, /docs) runs no script
but what its CSP names by hash."""

from __future__ import annotations

import base64
import hashlib
import re

import httpx
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import Route

from bonusd.api.app import api_routes
from bonusd.api.httpguard import DOCUMENT_CSP, MAX_BODY_BYTES, PAGE_CSP, STATIC_PREFIXES
from bonusd.notices import letterprint
from bonusd.notices.letterprint import PRINT_SCRIPT_HASH
from tests.daemon_helpers import Daemon

SAMPLE = {
    "card": "7001",
    "day": "2026-10-03",
    "promotion": "golden-horse-mega-points-chase",
    "draw": "halfway",
    "side": "slots",
    "claim": "1",
    "number": "1",
    "session": "no-such-session",
    "tombola": "pooled",
    "round_no": "1",
    "entry": "1",
    "name": "swagger-ui.css",
}


def assert_secure(r: httpx.Response, what: str) -> None:
    h = r.headers
    assert h.get("x-content-type-options") == "nosniff", what
    assert h.get("referrer-policy") == "no-referrer", what
    assert h.get("x-frame-options") == "DENY", what
    csp = h.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp, (what, csp)
    script = re.search(r"script-src ([^;]*)", csp)
    assert script is None or "unsafe" not in script.group(1), (what, csp)
    static = r.request.url.path.startswith(STATIC_PREFIXES)
    assert h.get("cache-control") == ("no-cache" if static else "no-store"), (what, h)


def get_paths(daemon: Daemon) -> list[str]:
    out = []
    for route in api_routes(daemon.service.app):
        if isinstance(route, APIWebSocketRoute) or not isinstance(route, APIRoute | Route):
            continue
        if "GET" in (route.methods or ()):
            out.append(re.sub(r"\{(\w+)\}", lambda m: SAMPLE.get(m.group(1), "x"), route.path))
    return out


async def test_every_get_route_answers_with_the_secure_headers(daemon: Daemon) -> None:
    paths = get_paths(daemon)
    assert {"/health", "/members/7001", "/signage", "/docs", "/openapi.json"} <= set(paths)
    assert any("/tickets/" in p for p in paths) and "/letters/1/print" in paths
    anonymous = httpx.AsyncClient(base_url=str(daemon.http.base_url), timeout=10)
    try:
        for path in paths:
            for client, who in ((daemon.http, "admin"), (anonymous, "anonymous")):
                r = await client.get(path)
                assert r.status_code < 500, (path, who, r.status_code, r.text[:200])
                assert_secure(r, f"GET {path} ({who}): {r.status_code}")
                if path.startswith("/members/") and r.status_code == 200:
                    assert r.headers["cache-control"] == "no-store"
        for path in ("/no-such-route", "/displays/nothing.js", "/docs/static/index.html"):
            r = await anonymous.get(path)
            assert r.status_code == 404, path
            assert_secure(r, f"GET {path}")
        too_large = await daemon.http.post(
            "/promotions/reload", content=b" " * (MAX_BODY_BYTES + 1)
        )
        assert too_large.status_code == 413
        assert_secure(too_large, "413")
        too_deep = await daemon.http.post("/promotions/reload", content=b"[" * 100 + b"]" * 100)
        assert too_deep.status_code == 422
        assert_secure(too_deep, "422")
    finally:
        await anonymous.aclose()


async def test_pages_documents_and_docs_get_their_policies(daemon: Daemon) -> None:
    page = await daemon.http.get("/signage?area=main")
    assert page.headers["content-security-policy"] == PAGE_CSP
    member = await daemon.http.get("/members/7001")
    assert member.headers["content-security-policy"] == DOCUMENT_CSP
    tickets = await daemon.http.get(
        f"/promotions/{SAMPLE['promotion']}/draws/halfway/tickets/pooled/1"
    )
    assert tickets.headers["content-security-policy"] == DOCUMENT_CSP
    docs = await daemon.http.get("/docs")
    assert docs.status_code == 200
    csp = docs.headers["content-security-policy"]
    assert "cdn" not in docs.text.lower() and "https://" not in docs.text
    for src in re.findall(r'(?:src|href)="([^"]+)"', docs.text):
        assert src.startswith("/docs/static/"), src
        assert (await daemon.http.get(src)).status_code == 200, src
    for script in re.findall(r"<script>(.*?)</script>", docs.text, re.S):
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert "unsafe-inline" not in csp


def test_the_letter_print_script_is_the_one_its_hash_names() -> None:
    script = letterprint._PRINT_SCRIPT
    digest = "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert digest == PRINT_SCRIPT_HASH and f"'{digest}'" in DOCUMENT_CSP


async def test_an_unexpected_500_carries_the_secure_headers_and_no_traceback(
    daemon: Daemon,
) -> None:
    """A fault no handler knows becomes Starlette's bare 500, written outside the app's
    middleware: the headers are added once more around the whole app."""

    async def boom() -> None:
        raise RuntimeError("an internal detail that must not leak")

    daemon.service.app.add_api_route("/test-only-boom", boom)
    r = await daemon.http.get("/test-only-boom")
    assert r.status_code == 500
    assert "internal detail" not in r.text
    assert_secure(r, "500")
