"""Staff sign-in over HTTP and the live push (bonusd/api/signin.py, docs/security.md "Staff
sign-in"), on a running daemon: the session travels only in an HttpOnly, SameSite=Strict
cookie (Secure over TLS); a cookie-borne request that changes state needs this host's
Origin (CSRF), sign-in too; the session is refused after sign-out (a replayed cookie),
after inactivity and when the account is disabled, whose open websocket closes at once;
wrong-PIN storms lock the staff number and the address; the admin's account routes."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from bonusd.access.auth import Role
from bonusd.access.sessions import COOKIE
from bonusd.audit.chain import Kind
from tests.daemon_helpers import Daemon
from tests.staff_helpers import PIN, add_staff, as_page, origin_of, session_cookie, sign_in


@pytest.fixture
async def staffed(daemon: Daemon) -> Daemon:
    await add_staff(daemon.service, "1042", "Naledi Mahlangu", "desk")
    await add_staff(daemon.service, "2001", "Sipho Dube", "crew")
    await add_staff(daemon.service, "9001", "Ruth Admin", "admin")
    return daemon


@pytest.fixture
async def anonymous(staffed: Daemon) -> httpx.AsyncClient:
    async with httpx.AsyncClient(base_url=str(staffed.http.base_url), timeout=10) as http:
        yield http  # type: ignore[misc]


async def test_the_session_is_only_in_an_httponly_strict_cookie(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    r = await anonymous.post(
        "/staff/sign-in",
        json={"staff": "1042", "pin": PIN},
        headers={"Origin": origin_of(anonymous)},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["name"] == "Naledi Mahlangu (staff 1042)" and body["role"] == "desk"
    assert body["staff"] == "1042" and body["idle_s"] == 900
    cookie = session_cookie(r)
    anonymous.cookies.clear()
    assert cookie.startswith("bd_") and cookie not in r.text  # never in the body
    (header,) = r.headers.get_list("set-cookie")
    flags = {part.strip().split("=")[0].lower() for part in header.split(";")[1:]}
    assert {"httponly", "path", "max-age", "samesite"} <= flags and "secure" not in flags
    assert "samesite=strict" in header.lower() and "max-age=43200" in header.lower()
    me = await anonymous.get("/staff/me", headers={"Cookie": f"{COOKIE}={cookie}"})
    assert me.json()["name"] == "Naledi Mahlangu (staff 1042)", me.text
    # the desk's routes admit the session; a crew session is refused the desk's
    assert (
        await anonymous.get("/promotions/changes", headers=as_page(anonymous, cookie))
    ).status_code == 200
    crew = await sign_in(anonymous, "2001")
    refused = await anonymous.get("/promotions/changes", headers=as_page(anonymous, crew))
    assert refused.status_code == 403 and "needs the" in refused.json()["detail"]


async def test_over_tls_the_cookie_is_secure(staffed: Daemon) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=staffed.service.app),
        base_url="https://bonus.casino.example",
    ) as tls:
        r = await tls.post(
            "/staff/sign-in",
            json={"staff": "2001", "pin": PIN},
            headers={"Origin": "https://bonus.casino.example"},
        )
    assert r.status_code == 200, r.text
    (header,) = r.headers.get_list("set-cookie")
    assert "; secure" in header.lower()


@pytest.mark.parametrize("origin", [None, "https://evil.example", "null"])
async def test_cross_site_requests_with_the_cookie_are_refused(
    staffed: Daemon, anonymous: httpx.AsyncClient, origin: str | None
) -> None:
    cookie = await sign_in(anonymous, "1042")
    headers = {"Cookie": f"{COOKIE}={cookie}"} | ({"Origin": origin} if origin else {})
    for path in ("/staff/session/keepalive", "/staff/sign-out", "/sms/outbox/1/retry"):
        r = await anonymous.post(path, headers=headers)
        assert r.status_code == 403, (path, r.text)
    # sign-in CSRF: a foreign page cannot sign this browser in either
    foreign = {} if origin is None else {"Origin": origin}
    r = await anonymous.post("/staff/sign-in", json={"staff": "2001", "pin": PIN}, headers=foreign)
    assert r.status_code == 403 and not session_cookie(r)
    # the session itself is untouched: a same-site request still works, a GET too
    assert (
        await anonymous.post("/staff/session/keepalive", headers=as_page(anonymous, cookie))
    ).status_code == 200
    assert (
        await anonymous.get("/staff/me", headers={"Cookie": f"{COOKIE}={cookie}"})
    ).status_code == 200


async def test_a_cookie_replayed_after_sign_out_is_refused_everywhere(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    cookie = await sign_in(anonymous, "2001")
    out = await anonymous.post("/staff/sign-out", headers=as_page(anonymous, cookie))
    assert out.json() == {"signed_out": True}
    cleared = out.headers["set-cookie"].lower()
    assert cleared.startswith(f"{COOKIE}=") and "max-age=0" in cleared
    replay = await anonymous.get("/staff/me", headers=as_page(anonymous, cookie))
    assert replay.status_code == 401 and "signed out" in replay.json()["detail"]
    code, _ = await _crew_socket(staffed, anonymous, cookie)
    assert code == 4401
    again = await anonymous.post("/staff/sign-out", headers=as_page(anonymous, cookie))
    assert again.json() == {"signed_out": False}


async def test_inactivity_ends_the_session_unless_the_page_reports_activity(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    clock = staffed.service.clock
    cookie = await sign_in(anonymous, "2001")
    for _ in range(3):
        clock.advance(14 * 60)  # type: ignore[attr-defined]
        kept = await anonymous.post("/staff/session/keepalive", headers=as_page(anonymous, cookie))
        assert kept.status_code == 200, kept.text
    clock.advance(15 * 60)  # type: ignore[attr-defined]
    ended = await anonymous.get("/staff/me", headers=as_page(anonymous, cookie))
    assert ended.status_code == 401 and "inactivity" in ended.json()["detail"]
    # a bearer token is a machine's: nothing to keep alive
    crew = await staffed.client(Role.CREW)
    try:
        assert (await crew.post("/staff/session/keepalive")).status_code == 409
    finally:
        await crew.aclose()


async def test_a_disabled_members_open_socket_closes_at_once(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    cookie = await sign_in(anonymous, "2001")
    url = str(staffed.http.base_url).replace("http://", "ws://").rstrip("/") + "/ws/crew"
    headers = as_page(anonymous, cookie)
    async with websockets.connect(url, additional_headers=headers, open_timeout=10) as ws:
        await ws.send("{}")
        snapshot = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert snapshot["type"] == "snapshot"
        r = await staffed.http.post("/staff/2001/disable")
        assert r.status_code == 200 and r.json()["sessions_ended"] == 1, r.text
        closed = await asyncio.wait_for(_closing(ws), 1)  # within a second
    assert closed.rcvd is not None and closed.rcvd.code == 4401
    refused = await anonymous.get("/staff/me", headers=headers)
    assert refused.status_code == 401 and "account disabled" in refused.json()["detail"]
    again = await anonymous.post(
        "/staff/sign-in",
        json={"staff": "2001", "pin": PIN},
        headers={"Origin": origin_of(anonymous)},
    )
    assert again.status_code == 403 and "disabled" in again.json()["detail"]


async def _closing(ws: websockets.ClientConnection) -> websockets.ConnectionClosed:
    """Read until the daemon closes the socket; how it closed."""
    try:
        while True:
            await ws.recv()
    except websockets.ConnectionClosed as exc:
        return exc


async def _crew_socket(
    d: Daemon, http: httpx.AsyncClient, cookie: str, origin: str = ""
) -> tuple[int, str]:
    """Open /ws/crew with the session cookie: the close code and reason, or (0, type) of
    the first message when it is let in."""
    url = str(d.http.base_url).replace("http://", "ws://").rstrip("/") + "/ws/crew"
    headers = {"Cookie": f"{COOKIE}={cookie}", "Origin": origin or origin_of(http)}
    async with websockets.connect(url, additional_headers=headers, open_timeout=10) as ws:
        await ws.send("{}")
        first = await asyncio.wait_for(_first_or_close(ws), 10)
    if isinstance(first, websockets.ConnectionClosed):
        assert first.rcvd is not None
        return first.rcvd.code, first.rcvd.reason
    return 0, first


async def _first_or_close(ws: websockets.ClientConnection) -> str | websockets.ConnectionClosed:
    try:
        return str(json.loads(await ws.recv())["type"])
    except websockets.ConnectionClosed as exc:
        return exc


async def test_a_socket_from_another_site_gets_no_session(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    cookie = await sign_in(anonymous, "2001")
    assert await _crew_socket(staffed, anonymous, cookie) == (0, "snapshot")
    code, reason = await _crew_socket(staffed, anonymous, cookie, "https://evil.example")
    assert code == 4401 and "token" in reason


async def test_wrong_pin_storms_lock_the_number_and_the_address(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    headers = {"Origin": origin_of(anonymous)}

    async def attempt(number: str, pin: str) -> httpx.Response:
        return await anonymous.post(
            "/staff/sign-in", json={"staff": number, "pin": pin}, headers=headers
        )

    answers = await asyncio.gather(*(attempt("1042", f"{n:06d}") for n in range(12)))
    statuses = sorted(r.status_code for r in answers)
    assert statuses == [401] * 4 + [423] * 8, statuses
    locked = next(r for r in answers if r.status_code == 423)
    assert int(locked.headers["Retry-After"]) == 900 and "locked" in locked.json()["detail"]
    assert (await attempt("1042", PIN)).status_code == 423  # the right PIN waits too
    # the same address trying other numbers is locked at 20 wrong PINs (12 + 1 so far)
    spread = [await attempt(f"{n}", "000000") for n in range(3000, 3008)]
    assert [r.status_code for r in spread] == [401] * 6 + [423] * 2
    assert "this device" in spread[-1].json()["detail"]
    assert all(PIN not in r.text for r in answers)
    staffed.service.clock.advance(900)  # type: ignore[attr-defined]
    await sign_in(anonymous, "1042")


async def test_the_admin_manages_accounts_and_a_pin_reset_ends_sessions(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    admin = as_page(anonymous, await sign_in(anonymous, "9001"))
    listed = await anonymous.get("/staff", headers=admin)
    assert [s["staff"] for s in listed.json()["staff"]] == ["1042", "2001", "9001"]
    assert "pin" not in listed.text and "argon2" not in listed.text
    new = {"staff": "3003", "name": "Lindiwe Khoza", "role": "crew", "pin": "13572468"}
    assert (await anonymous.post("/staff", json=new, headers=admin)).status_code == 201
    assert (await anonymous.post("/staff", json=new, headers=admin)).status_code == 409
    for bad in (
        {**new, "staff": "3004", "name": "Lindiwe\u202eKhoza"},
        {**new, "staff": "3004", "name": "Lindiwe\x00Khoza"},
        {**new, "staff": "30 04"},
        {**new, "staff": "3004", "role": "kiosk"},
        {**new, "staff": "3004", "pin": "1234"},
    ):
        r = await anonymous.post("/staff", json=bad, headers=admin)
        assert r.status_code == 422, (bad, r.text)
        assert "13572468" not in r.text and '"1234"' not in r.text
    own = await anonymous.post("/staff/9001/disable", headers=admin)
    assert own.status_code == 409
    crew = await sign_in(anonymous, "3003", "13572468")
    reset = await anonymous.post("/staff/3003/reset-pin", json={"pin": "86420864"}, headers=admin)
    assert reset.status_code == 200 and reset.json()["sessions_ended"] == 1, reset.text
    gone = await anonymous.get("/staff/me", headers=as_page(anonymous, crew))
    assert gone.status_code == 401 and "PIN reset" in gone.json()["detail"]
    await sign_in(anonymous, "3003", "86420864")
    records = await staffed.service.audit.records()
    changed = [
        (r.payload["staff"], r.payload["change"], r.actor) for r in records if r.kind == Kind.STAFF
    ]
    admin_name = next(s["name"] for s in listed.json()["staff"] if s["staff"] == "9001")
    by = f"{admin_name} (staff 9001)"
    assert changed == [("3003", "added", by), ("3003", "pin reset", by)]  # refusals: none
    assert not any(pin in r.to_json() for r in records for pin in ("13572468", "86420864"))
    # a desk session may not manage staff
    desk = as_page(anonymous, await sign_in(anonymous, "1042"))
    assert (await anonymous.get("/staff", headers=desk)).status_code == 403


async def test_a_sign_in_on_a_handheld_ends_the_previous_persons_session(
    staffed: Daemon, anonymous: httpx.AsyncClient
) -> None:
    first = await sign_in(anonymous, "2001")
    r = await anonymous.post(
        "/staff/sign-in",
        json={"staff": "1042", "pin": PIN},
        headers=as_page(anonymous, first),
    )
    assert r.status_code == 200, r.text
    anonymous.cookies.clear()
    old = await anonymous.get("/staff/me", headers=as_page(anonymous, first))
    assert old.status_code == 401 and "signed out" in old.json()["detail"]
    new = await anonymous.get("/staff/me", headers=as_page(anonymous, session_cookie(r)))
    assert new.json()["staff"] == "1042"
