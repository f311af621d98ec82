"""No personal data in the logs: a real daemon, every logger at DEBUG, through ingest (MQTT),
kiosk activations, the bin closing, a draw with winners, a claim walked to its prize
letter and an SMS to each winner who opted in; then no member's full name, full card
number or mobile number appears anywhere in what was logged, as text or as the JSON lines
of BONUSD_LOG_FORMAT=json.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.infra.logformat import JsonLogFormatter
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT, SAST, running
from tests.staff_helpers import add_staff, as_page, sign_in
from tests.telemetry_helpers import Publisher, event, game

GH = "golden-horse-mega-points-chase"
BASE = f"/promotions/{GH}/draws/halfway"
PEOPLE = [
    ("6001009155501", "Nomvula Xabanisa", "+27825550101"),
    ("6001009155502", "Pieter van Wyngaardt", "+27825550102"),
    ("6001009155503", "Lindiwe Mthembuzana", "+27825550103"),
    ("6001009155504", "Ayesha Parbhoodeen", "+27825550104"),
    ("6001009155505", "Kagiso Sefularo", "+27825550105"),
    ("6001009155506", "Mandla Zondwayo", "+27825550106"),
]
MEMBERS = "card,name,tier,app_user,date_of_birth,sms_opt_in,mobile\n" + "".join(
    f"{card},{name},Q,false,1980-02-01,true,{mobile}\n" for card, name, mobile in PEOPLE
)
DEVICES = "device,kind,area\n" + "".join(f"EGM-{n},egm,main\n" for n in range(len(PEOPLE)))


def at(month: int, day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, minute, tzinfo=SAST)


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return settings.model_copy(update={"promotions": folder, "log_level": "DEBUG"})


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


def _leaks(text: str) -> list[str]:
    """Every full name, card number or mobile number (with or without +27) in `text`."""
    found = []
    for card, name, mobile in PEOPLE:
        for what, value in (("name", name), ("card", card), ("mobile", mobile.lstrip("+"))):
            if value in text:
                found.append(f"{what} {value}")
        if "0" + mobile[3:] in text:  # the national form, 082...
            found.append(f"mobile {mobile}")
    return found


async def test_a_draw_night_logs_no_names_cards_or_mobiles(
    gh_settings: Settings, pub: Publisher, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: the daemon's, uvicorn's, MQTT's
    clock = ManualClock(at(10, 10, 9))
    async with running(gh_settings, clock) as d:
        for path, body in (("/members/import", MEMBERS), ("/devices/import", DEVICES)):
            r = await d.http.post(path, content=body, headers={"content-type": "text/csv"})
            assert r.status_code == 200, r.text
        # ingest: each member plays 30,000 points on the slots (the side needs 20,000)
        sent = 0
        for n, (card, _, _) in enumerate(PEOPLE):
            sent += pub.egm(f"EGM-{n}", event("card_in", card, at(10, 6, 20)))
            sent += pub.egm(
                f"EGM-{n}", *(game(card, at(10, 6, 20, i + 1), 300_000, 10_000) for i in range(3))
            )
        await d.wait_committed(sent)

        kiosk, desk, crew = [await d.client(r) for r in (Role.KIOSK, Role.DESK, Role.CREW)]
        try:
            clock.set(at(11, 7, 12))  # activation is open
            for card, _, _ in PEOPLE:
                r = await kiosk.post(f"{BASE}/activations", json={"card": card, "channel": "kiosk"})
                assert r.status_code == 200, r.text

            clock.set(at(11, 7, 19) + dt.timedelta(seconds=1))  # the bin closes at 19:00

            # round 1 is at 19:00: the scheduler draws it on the daemon's clock
            async with asyncio.timeout(10):
                while not (book := (await desk.get(f"{BASE}/book")).json())["claims"]:
                    await asyncio.sleep(0.02)
            winners = [c["card"] for c in book["claims"]]
            assert winners and set(winners) <= {card for card, _, _ in PEOPLE}
            prizes = {"tombola": "pooled", "round": 1, "values_cents": [500_000] * 5}
            assert (await desk.post(f"{BASE}/prizes", json=prizes)).status_code == 200
            for step, body in (("present", None), ("verify", None), ("reveal", {"reveal": 2})):
                answer = await crew.post(f"{BASE}/claims/1/{step}", json=body)
                assert answer.status_code == 200, answer.text
            letter = await desk.post(f"{BASE}/claims/1/letter")
            assert letter.status_code == 200, letter.text
            async with asyncio.timeout(10):  # texts to the winners who opted in (outbox)
                while (await desk.get("/sms/outbox")).json()["counts"].get("queued", 0) < 1:
                    await asyncio.sleep(0.02)
            # and the personal data is there to leak: the desk sees the member record
            member = (await desk.get(f"/members/{winners[0]}")).json()
            assert member["member"]["mobile"].startswith("+27825550")
        finally:
            for c in (kiosk, desk, crew):
                await c.aclose()

    # the test's own HTTP client (httpx) logs the URLs it asks for, /members/{card} among
    # them; the daemon uses httpx only for an SMS webhook, which this test does not set
    records = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    logged = "\n".join(
        [r.getMessage() for r in records]
        + [r.exc_text or "" for r in records]
        + [str(r.args) for r in records if r.args]  # the raw arguments too
    )
    assert len(records) > 20, "the capture saw the daemon's logging"
    assert re.search(r"subscribed to .* as bonusd-", logged)
    assert _leaks(logged) == []

    # BONUSD_LOG_FORMAT=json writes the same records as JSON lines (bonusd/infra/logformat.py):
    # one object each, and nothing in them leaks either, raw or decoded
    lines = [JsonLogFormatter().format(r) for r in records]
    entries = [json.loads(line) for line in lines]
    assert [e["message"] for e in entries] == [r.getMessage() for r in records]
    decoded = "\n".join(str(value) for e in entries for value in e.values())
    assert _leaks("\n".join(lines)) == [] and _leaks(decoded) == []


# -- staff sign-in: no token, session or PIN in any log line (issue 19) ---------------------
STAFF_PINS = {"2001": "73915284", "1042": "48261937"}
WRONG_PINS = ("10293847", "56473829")


async def test_staff_sign_in_logs_no_token_session_or_pin(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Every way a staff session is made, used and ended, with every logger at DEBUG:
    right and wrong PINs up to the lock, the session over HTTP and the live push, keep-alive,
    a second sign-in on the same handheld, sign-out, a PIN reset and a disabled account;
    then neither a PIN, nor a session token or its secret, is in any log line, text or
    JSON. (Token ids, which are no secret, name sessions in the log for correlation.)"""
    caplog.set_level(logging.DEBUG)
    clock = ManualClock(at(10, 10, 9))
    secrets: list[str] = list(STAFF_PINS.values()) + list(WRONG_PINS)
    async with running(settings.model_copy(update={"log_level": "DEBUG"}), clock) as d:
        await add_staff(d.service, "2001", "Sipho Dube", "crew", STAFF_PINS["2001"])
        await add_staff(d.service, "1042", "Naledi Mahlangu", "admin", STAFF_PINS["1042"])
        async with httpx.AsyncClient(base_url=str(d.http.base_url), timeout=10) as http:
            origin = {"Origin": str(http.base_url).rstrip("/")}
            for pin in (*WRONG_PINS, *WRONG_PINS, WRONG_PINS[0], STAFF_PINS["2001"]):
                await http.post(
                    "/staff/sign-in", json={"staff": "2001", "pin": pin}, headers=origin
                )
            http.cookies.clear()
            clock.advance(900)  # the lock lifts
            crew = await sign_in(http, "2001", STAFF_PINS["2001"])
            admin = await sign_in(http, "1042", STAFF_PINS["1042"])
            secrets += [crew, admin]
            await http.get("/staff/me", headers=as_page(http, crew))
            await http.post("/staff/session/keepalive", headers=as_page(http, crew))
            ws = str(http.base_url).replace("http://", "ws://").rstrip("/") + "/ws/crew"
            async with websockets.connect(ws, additional_headers=as_page(http, crew)) as conn:
                await conn.send("{}")
                await conn.recv()
            again = await http.post(
                "/staff/sign-in",
                json={"staff": "2001", "pin": STAFF_PINS["2001"]},
                headers=as_page(http, crew),  # the handheld passed on: the old session ends
            )
            http.cookies.clear()
            secrets.append(again.cookies["bonusd_session"])
            await http.post(
                "/staff/sign-out", headers=as_page(http, again.cookies["bonusd_session"])
            )
            await http.get("/staff/me", headers=as_page(http, crew))  # a replayed cookie
            reset = {"pin": "66778899"}
            secrets.append(reset["pin"])
            await http.post("/staff/2001/reset-pin", json=reset, headers=as_page(http, admin))
            await http.post("/staff/2001/disable", headers=as_page(http, admin))
            await http.post("/staff/sign-out", headers=as_page(http, admin))
    # the test's own clients log what they send and receive (httpx, httpcore, the
    # websockets client's headers); the daemon's side does not
    ours = ("httpx", "httpcore", "websockets.client")
    records = [r for r in caplog.records if not r.name.startswith(ours)]
    logged = "\n".join(
        [r.getMessage() for r in records]
        + [r.exc_text or "" for r in records]
        + [str(r.args) for r in records if r.args]
        + [JsonLogFormatter().format(r) for r in records]
    )
    assert re.search(r"staff 2001 signed in \(crew\), session [0-9a-f]{12}", logged)
    assert "staff number 2001 locked after wrong PINs" in logged
    secrets += [token.split("_", 2)[2] for token in secrets if token.startswith("bd_")]
    found = [secret for secret in secrets if secret in logged]
    assert not found, f"in the log: {found}"
