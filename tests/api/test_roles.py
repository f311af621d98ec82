"""Every route of the application is either public on purpose or checks its role:
401 without a token, 403 with the wrong one; expired and revoked tokens are refused.

The routes are read from the application's own route table, so a new route cannot
escape these checks without being added to PUBLIC below.
"""

from __future__ import annotations

import datetime as dt
import re

import httpx
from fastapi.routing import APIRoute

from bonusd.access.auth import Role
from bonusd.api.app import api_routes
from tests.daemon_helpers import Daemon

PUBLIC = {
    ("GET", "/health"),
    ("GET", "/metrics"),
    ("POST", "/screens/pairing"),  # a new floor screen, before it holds anything
    ("POST", "/screens/pairing/claim"),  # the same screen with its pairing secret
    ("POST", "/staff/sign-in"),  # a staff number and PIN, from this site's pages
    ("POST", "/staff/sign-out"),  # ends the session its cookie holds, if any
}
SAMPLE = {
    "card": "1001",
    "day": "2026-10-03",
    "promotion": "no-such-promotion",
    "draw": "no-such-draw",
    "side": "slots",
    "claim": "1",
    "number": "1",
    "session": "no-such-session",
    "tombola": "pooled",
    "round_no": "1",
    "entry": "1",
    "device": "EGM-1",
    "screen": "0123456789ab",
    "credential": "0123456789ab",
}


def _routes(daemon: Daemon) -> list[tuple[str, str, frozenset[Role]]]:
    out = []
    for route in api_routes(daemon.service.app):
        if not isinstance(route, APIRoute):
            continue
        roles: frozenset[Role] = frozenset()
        for dep in route.dependant.dependencies:
            roles |= getattr(dep.call, "roles", frozenset())
        for method in route.methods:
            out.append((method, route.path, roles))
    return out


def _url(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: SAMPLE[m.group(1)], path)


async def test_every_route_is_guarded_or_public(daemon: Daemon) -> None:
    routes = _routes(daemon)
    assert len(routes) >= 13
    anonymous = httpx.AsyncClient(base_url=str(daemon.http.base_url))
    clients = {role: await daemon.client(role) for role in Role}
    try:
        for method, path, roles in routes:
            if (method, path) in PUBLIC or path.startswith(("/docs", "/openapi", "/redoc")):
                assert not roles, f"{method} {path} is listed public but has a guard"
                continue
            assert roles, f"{method} {path} has no role guard and is not listed as public"
            r = await anonymous.request(method, _url(path))
            assert r.status_code == 401, (method, path, r.status_code)
            assert "role" in r.json()["detail"]
            for role, client in clients.items():
                r = await client.request(method, _url(path))
                if role in roles:
                    assert r.status_code not in (401, 403), (method, path, role, r.text)
                else:
                    assert r.status_code == 403, (method, path, role, r.status_code)
                    assert "needs the" in r.json()["detail"]
    finally:
        await anonymous.aclose()
        for c in clients.values():
            await c.aclose()


# telling the winner and the floor (docs/notices.md): who may call what
NOTICE_ROUTES = {
    ("GET", "/sms/outbox"): {Role.DESK, Role.ADMIN},
    ("POST", "/sms/outbox/{entry}/retry"): {Role.DESK, Role.ADMIN},
    ("GET", "/promotions/{promotion}/draws/{draw}/announcements"): {
        Role.CREW,
        Role.DESK,
        Role.ADMIN,
    },
    ("GET", "/promotions/{promotion}/jackpots/{session}/announcements"): {
        Role.CREW,
        Role.DESK,
        Role.ADMIN,
    },
    ("GET", "/letters/{number}/print"): {Role.DESK, Role.ADMIN},
}


async def test_notice_routes_are_in_the_table_with_their_roles(daemon: Daemon) -> None:
    table = {(method, path): roles for method, path, roles in _routes(daemon)}
    for route, roles in NOTICE_ROUTES.items():
        assert table.get(route) == roles, route
    anonymous = httpx.AsyncClient(base_url=str(daemon.http.base_url))
    kiosk, signage = await daemon.client(Role.KIOSK), await daemon.client(Role.SIGNAGE, "main")
    try:
        for method, path in NOTICE_ROUTES:
            r = await anonymous.request(method, _url(path))
            assert r.status_code == 401, (method, path)
            for client in (kiosk, signage):
                r = await client.request(method, _url(path))
                assert r.status_code == 403, (method, path)
    finally:
        for c in (anonymous, kiosk, signage):
            await c.aclose()


async def test_expired_revoked_and_forged_tokens_are_refused(daemon: Daemon) -> None:
    tokens = daemon.service.tokens
    now = daemon.service.clock.now()
    short = await tokens.issue(
        role=Role.DESK, name="short", now=now, valid_for=dt.timedelta(hours=1)
    )
    revoked = await tokens.issue(
        role=Role.DESK, name="gone", now=now, valid_for=dt.timedelta(days=1)
    )
    await tokens.revoke(revoked.principal.token_id, now)
    base = str(daemon.http.base_url)
    daemon.service.clock.advance(2 * 3600)  # type: ignore[attr-defined]
    forged = short.token[:-4] + "AAAA"
    for token, why in (
        (short.token, "expired"),
        (revoked.token, "revoked"),
        (forged, "unknown token"),
        ("not-a-token", "malformed"),
    ):
        async with httpx.AsyncClient(base_url=base) as c:
            r = await c.get("/deadletters", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401
        assert why in r.json()["detail"]
    listed = await tokens.list()
    assert all("digest" not in row for row in listed)


# the casino app's back end (docs/app-api.md): its routes, and only those
APP_ROUTES = {
    ("GET", "/app/members/{card}"),
    ("POST", "/app/members/{card}/activations"),
    ("GET", "/app/promotions/{promotion}/draws/{draw}/leaderboards/{side}"),
}


async def test_the_app_role_reads_its_own_routes_only(daemon: Daemon) -> None:
    table = {(method, path): roles for method, path, roles in _routes(daemon)}
    for route in APP_ROUTES:
        assert table.get(route) == {Role.APP, Role.ADMIN}, route
    others = [route for route, roles in table.items() if Role.APP in roles]
    assert set(others) == APP_ROUTES, others  # no other route admits an app token
