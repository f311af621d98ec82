"""Paired floor screens and machine credentials over HTTP and the live push (bonusd/api/
screens.py, bonusd/access/pairing.py, bonusd/access/machines.py, bonusd/push/presence.py),
on a real daemon: a screen pairs by code without a token in any URL and collects its
credential once; guessed and expired codes are refused; the desk sees its screens'
connection state, moves one to another area mid-event (its stream switches) and revokes
one (its socket closes at once); every machine credential is listed with its last use
and can be revoked, staff sessions cannot be through it."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bonusd.access.auth import Role
from bonusd.push import hub as hub_module
from bonusd.push.presence import BEAT_TICKS, MOVED
from tests.daemon_helpers import Daemon
from tests.push.helpers import closed_with, connect, until

HEADLESS = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 HeadlessChrome/120.0.0.0"


@pytest.fixture
async def anonymous(daemon: Daemon) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=str(daemon.http.base_url), timeout=10) as client:
        yield client


@pytest.fixture
async def desk(daemon: Daemon) -> AsyncIterator[httpx.AsyncClient]:
    client = await daemon.client(Role.DESK)
    yield client
    await client.aclose()


@pytest.fixture
def quick_ticks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub's wall tick (the cadence of the screens' markers, a second) at a tenth: the
    desk's view follows the same beat, sooner. Ask for it before the daemon."""
    monkeypatch.setattr(hub_module, "TICK_S", 0.1)


async def pair_screen(
    anonymous: httpx.AsyncClient, desk: httpx.AsyncClient, area: str = "main", name: str = "Bar 3"
) -> dict[str, Any]:
    """A screen through the whole pairing: what its last claim answered."""
    started = await anonymous.post("/screens/pairing", json={"width": 1920, "height": 1080})
    assert started.status_code == 201, started.text
    secret = started.json()["secret"]
    waiting = await anonymous.post("/screens/pairing/claim", json={"secret": secret})
    assert waiting.status_code == 202 and waiting.json()["state"] == "waiting"
    body = {"code": started.json()["code"], "area": area, "name": name}
    approved = await desk.post("/screens/pair", json=body)
    assert approved.status_code == 200, approved.text
    paired = await anonymous.post("/screens/pairing/claim", json={"secret": secret})
    assert paired.status_code == 200, paired.text
    return {**paired.json(), "secret": secret}


def _screen(listing: dict[str, Any], screen_id: str) -> dict[str, Any]:
    return next(s for s in listing["screens"] if s["id"] == screen_id)


async def _listed(desk: httpx.AsyncClient, screen_id: str) -> dict[str, Any]:
    r = await desk.get("/screens")
    assert r.status_code == 200, r.text
    return _screen(r.json(), screen_id)


async def _connection(desk: httpx.AsyncClient, screen_id: str, wanted: str) -> dict[str, Any]:
    async with asyncio.timeout(10):  # the hub's beat marks it within a tick
        while (found := await _listed(desk, screen_id))["connection"] != wanted:
            await asyncio.sleep(0.1)
    return found


async def test_a_screen_pairs_by_code_and_collects_its_credential_once(
    daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    started = await anonymous.post("/screens/pairing", json={"width": 1080, "height": 1920})
    assert started.status_code == 201
    body = started.json()
    assert len(body["code"]) == 7 and body["code"][3] == "-" and body["expires_in_s"] == 600
    assert body["secret"].startswith("sp_")
    r = await desk.get("/screens")
    assert r.json()["waiting"] == 1 and r.json()["screens"] == []

    pair = {"code": body["code"].lower().replace("-", " "), "area": "main", "name": "Bar 3"}
    approved = await desk.post("/screens/pair", json=pair)
    assert approved.status_code == 200
    expected = {"code": body["code"], "area": "main", "name": "Bar 3", "expires_in_s": 600}
    assert approved.json() == expected
    paired = await anonymous.post("/screens/pairing/claim", json={"secret": body["secret"]})
    assert paired.status_code == 200
    got = paired.json()
    assert got["state"] == "paired" and got["token"].startswith("bd_")
    assert got["screen"]["area"] == "main" and got["screen"]["name"] == "Bar 3"
    again = await anonymous.post("/screens/pairing/claim", json={"secret": body["secret"]})
    assert again.status_code == 401  # given once

    screen_headers = {"Authorization": f"Bearer {got['token']}", "User-Agent": HEADLESS}
    hello = await anonymous.post(
        "/screens/hello", json={"width": 1080, "height": 1920}, headers=screen_headers
    )
    assert hello.status_code == 200 and hello.json() == got["screen"]
    listed = await _listed(desk, got["screen"]["id"])
    assert listed["kind"] == "screen" and listed["connection"] == "offline"
    assert (listed["width"], listed["height"]) == (1080, 1920)
    assert listed["agent"] == "HeadlessChrome 120 · Linux" and listed["version"]
    assert listed["paired_by"] == "test desk (token " + listed["paired_by"].split("token ")[1]
    assert listed["address"] == "127.0.0.1" and listed["last_used"]


async def test_guessed_codes_are_refused_then_limited(
    daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    started = await anonymous.post("/screens/pairing", json={"width": 1920, "height": 1080})
    code = started.json()["code"]
    wrong = "ZZZ-ZZZ" if code != "ZZZ-ZZZ" else "YYY-YYY"
    for _ in range(10):
        r = await desk.post("/screens/pair", json={"code": wrong, "area": "main", "name": "X"})
        assert r.status_code == 404 and "no screen is showing code" in r.json()["detail"]
    r = await desk.post("/screens/pair", json={"code": code, "area": "main", "name": "X"})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    claim = await anonymous.post(
        "/screens/pairing/claim", json={"secret": started.json()["secret"]}
    )
    assert claim.status_code == 202  # the screen still waits, for a desk that reads it right


async def test_an_expired_code_cannot_be_paired_and_the_screen_starts_again(
    daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    started = await anonymous.post("/screens/pairing", json={"width": 1920, "height": 1080})
    daemon.service.clock.advance(600)  # type: ignore[attr-defined]
    r = await desk.post(
        "/screens/pair", json={"code": started.json()["code"], "area": "main", "name": "X"}
    )
    assert r.status_code == 404
    claim = await anonymous.post(
        "/screens/pairing/claim", json={"secret": started.json()["secret"]}
    )
    assert claim.status_code == 410 and "expired" in claim.json()["detail"]


async def test_bad_names_and_areas_are_refused(
    daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    started = await anonymous.post("/screens/pairing", json={"width": 1920, "height": 1080})
    code = started.json()["code"]
    for area, name in (("main", "Bar\u202e3"), ("main", "Bar\x1b[2J"), ("MAIN", "Bar 3")):
        r = await desk.post("/screens/pair", json={"code": code, "area": area, "name": name})
        assert r.status_code == 422, (area, name)
    for body in ({"width": 0, "height": 1080}, {"width": 1920}, {"width": 1, "height": 1, "x": 1}):
        assert (await anonymous.post("/screens/pairing", json=body)).status_code == 422


async def test_a_screen_moved_mid_event_switches_its_stream(
    quick_ticks: None, daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    paired = await pair_screen(anonymous, desk)
    screen_id, site = paired["screen"]["id"], daemon.service.settings.site
    ws = await connect(daemon, "/ws/signage", {"token": paired["token"]})
    first = await until(ws, lambda m: m["type"] == "snapshot")
    assert first[-1]["stream"] == f"signage:{site}:main"
    await _connection(desk, screen_id, "connected")

    moved = await desk.post(f"/screens/{screen_id}/move", json={"area": "bar"})
    assert moved.status_code == 200, moved.text
    assert moved.json()["area"] == "bar" and moved.json()["moved_by"].startswith("test desk")
    code, reason = await closed_with(ws)
    assert code == MOVED and "moved" in reason
    again = await connect(daemon, "/ws/signage", {"token": paired["token"]})  # same credential
    try:
        snapshot = await until(again, lambda m: m["type"] == "snapshot")
        assert snapshot[-1]["stream"] == f"signage:{site}:bar"
    finally:
        await again.close()
    old = await connect(daemon, "/ws/signage", {"token": paired["token"]}, area="main")
    assert (await closed_with(old))[0] == 4403  # its old area is no longer its own
    assert (await desk.post(f"/screens/{screen_id}/move", json={"area": "Bar!"})).status_code == 422


async def test_a_move_nobody_heard_is_caught_by_the_beat(
    daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    """The area changed in Redis without the notification (a daemon not listening): the
    hub's next full beat closes the socket on the wrong stream."""
    paired = await pair_screen(anonymous, desk)
    ws = await connect(daemon, "/ws/signage", {"token": paired["token"]})
    await until(ws, lambda m: m["type"] == "snapshot")
    keys = daemon.service.keys
    await daemon.service.redis.hset(keys.token(paired["screen"]["id"]), "area", "bar")
    # the hub's tick count brought to the eve of a full beat (one every BEAT_TICKS wall
    # seconds): the next tick's beat is the full one that must catch the move
    hub = daemon.service.push
    hub.ticks += (-hub.ticks - 1) % BEAT_TICKS
    code, _ = await closed_with(ws)  # within a tick
    assert code == MOVED


async def test_revoking_a_screen_closes_its_socket_at_once(
    daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    paired = await pair_screen(anonymous, desk)
    screen_id = paired["screen"]["id"]
    ws = await connect(daemon, "/ws/signage", {"token": paired["token"]})
    await until(ws, lambda m: m["type"] == "snapshot")
    revoked = await desk.post(f"/screens/{screen_id}/revoke")
    assert revoked.status_code == 200
    assert revoked.json()["connection"] == "revoked"
    assert revoked.json()["revoked_by"].startswith("test desk")
    code, reason = await closed_with(ws)
    assert code == 4401 and "revoked" in reason
    retry = await connect(daemon, "/ws/signage", {"token": paired["token"]})
    assert (await closed_with(retry))[0] == 4401
    assert (await desk.post(f"/screens/{screen_id}/revoke")).status_code == 409
    assert (await desk.post(f"/screens/{screen_id}/move", json={"area": "bar"})).status_code == 409


async def test_the_desk_sees_a_screen_connect_and_leave(
    quick_ticks: None, daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    paired = await pair_screen(anonymous, desk)
    screen_id = paired["screen"]["id"]
    assert (await _listed(desk, screen_id))["connection"] == "offline"
    ws = await connect(daemon, "/ws/signage", {"token": paired["token"]})
    await until(ws, lambda m: m["type"] == "snapshot")
    connected = await _connection(desk, screen_id, "connected")
    assert connected["last_used"]
    await ws.close()
    await _connection(desk, screen_id, "offline")


async def test_every_machine_credential_is_listed_with_its_last_use_and_revocable(
    daemon: Daemon, anonymous: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    tokens, now = daemon.service.tokens, daemon.service.clock.now()
    year = dt.timedelta(days=365)
    kiosk = await tokens.issue(role=Role.KIOSK, name="Kiosk entrance", now=now, valid_for=year)
    app = await tokens.issue(role=Role.APP, name="App server 1", now=now, valid_for=year)
    script = await tokens.issue(role=Role.CREW, name="nightly export", now=now, valid_for=year)
    session = await tokens.issue(
        role=Role.DESK, name="Naledi Mahlangu (staff 1042)", now=now, valid_for=year, staff="1042"
    )
    paired = await pair_screen(anonymous, desk)
    used = await anonymous.get("/promotions", headers={"Authorization": f"Bearer {kiosk.token}"})
    assert used.status_code == 200

    r = await desk.get("/credentials")
    assert r.status_code == 200
    listed = {c["id"]: c for c in r.json()["credentials"]}
    kiosk_id, app_id = kiosk.principal.token_id, app.principal.token_id
    assert listed[kiosk_id]["kind"] == "kiosk" and listed[kiosk_id]["last_used"]
    assert listed[app_id]["kind"] == "app server" and listed[app_id]["last_used"] is None
    assert listed[script.principal.token_id]["kind"] == "script"
    assert listed[paired["screen"]["id"]]["kind"] == "screen"
    assert session.principal.token_id not in listed  # a person's, on the staff list
    assert all(c["state"] == "active" for c in listed.values())

    revoked = await desk.post(f"/credentials/{kiosk_id}/revoke")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    after = await anonymous.get("/promotions", headers={"Authorization": f"Bearer {kiosk.token}"})
    assert after.status_code == 401
    assert (await desk.post(f"/credentials/{kiosk_id}/revoke")).status_code == 409
    staff = await desk.post(f"/credentials/{session.principal.token_id}/revoke")
    assert staff.status_code == 404 and "sign-in session" in staff.json()["detail"]
    assert (await desk.post("/credentials/0123456789ab/revoke")).status_code == 404
    not_a_screen = await desk.post(f"/screens/{app_id}/revoke")
    assert not_a_screen.status_code == 404


async def test_a_revoked_credential_closes_the_machines_sockets(
    daemon: Daemon, desk: httpx.AsyncClient
) -> None:
    """A crew script's socket (any machine's) closes the moment the desk revokes it."""
    now = daemon.service.clock.now()
    script = await daemon.service.tokens.issue(
        role=Role.CREW, name="alert relay", now=now, valid_for=dt.timedelta(days=1)
    )
    ws = await connect(daemon, "/ws/crew", {"token": script.token})
    await until(ws, lambda m: m["type"] == "snapshot")
    r = await desk.post(f"/credentials/{script.principal.token_id}/revoke")
    assert r.status_code == 200
    assert (await closed_with(ws))[0] == 4401
