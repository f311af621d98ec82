"""The eHost kiosk over HTTP against a real daemon (Redis, Mosquitto): a card at a kiosk,
its PIN and the lockout, the standings, activate and print, reprints, bad cards, a visit
taken to another kiosk, a reprint storm, and the receipt checked at the winner's claim
(valid, reprint n of m, forged, another member's) and recorded in the draw's ledger.

The Golden Horse halfway draw (tests/promotions/helpers.py): Johan (1002) earns 32
tickets, Thandi (1001) 27 and has a kiosk PIN, Sipho (1003) is excluded; activation opens
on 07 Nov at 08:00 and the bin closes at 19:00."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import secrets
from collections.abc import AsyncIterator

import httpx
import pytest

from bonusd.access.auth import Role
from bonusd.access.pins import hash_pin
from bonusd.audit.chain import Kind
from bonusd.clocks.clock import ManualClock
from bonusd.kiosk.receipt import qr_payload
from bonusd.settings import Settings
from tests.daemon_helpers import SAST, Daemon, running
from tests.promotions.helpers import GH, at
from tests.telemetry_helpers import Publisher, event, game

PIN = "2468"
HALFWAY = f"/promotions/{GH}/draws/halfway"
DRAW_DAY = dt.datetime(2026, 11, 7, 12, 0, tzinfo=SAST)


def members() -> str:
    return (
        "card,name,tier,excluded,exclusion_reason,pin_hash\n"
        f'1001,Thandi Mokoena,Q,false,,"{hash_pin(PIN)}"\n'
        "1002,Johan Botha,J,false,,\n"
        "1003,Sipho Ndlovu,A,true,self-exclusion,\n"
    )


@pytest.fixture
async def floor(gh_settings: Settings, pub: Publisher) -> AsyncIterator[Daemon]:
    clock = ManualClock(at(10, 9))
    async with running(gh_settings, clock) as d:
        answer = await d.http.post(
            "/members/import", content=members(), headers={"content-type": "text/csv"}
        )
        assert answer.status_code == 200, answer.text
        sent = pub.egm("EGM-1", event("card_in", "1001", at(3, 17, 59)))
        sent += pub.egm("EGM-1", *(game("1001", at(3, 18, i), 25000, 1000) for i in range(5)))
        sent += pub.egm("EGM-1", *(game("1001", at(4, 12, i), 30000, 1500) for i in range(4)))
        sent += pub.egm("EGM-2", *(game("1002", at(6, 20, i), 300000, 10000) for i in range(3)))
        sent += pub.egm("EGM-3", *(game("1003", at(7, 20, i), 900000, 25000) for i in range(4)))
        await d.wait_committed(sent)
        clock.set(DRAW_DAY)
        yield d


async def _visit(kiosk: httpx.AsyncClient, card: str) -> tuple[dict[str, str], dict[str, object]]:
    opened = await kiosk.post("/kiosk/visits", json={"card": card})
    assert opened.status_code == 201, opened.text
    body = opened.json()
    return {"X-Kiosk-Visit": body["visit"]}, body


async def test_a_member_activates_prints_and_reprints(floor: Daemon) -> None:
    kiosk = await floor.client(Role.KIOSK)
    headers, opened = await _visit(kiosk, "1002")
    assert opened["needs_pin"] is False
    view = (await kiosk.get("/kiosk/visit", headers=headers)).json()
    assert view["neutral"] is False
    halfway = next(d for d in view["draws"] if d["draw"] == "halfway")
    assert halfway["tickets"] == 32
    assert halfway["activation"]["activated"] is False
    assert halfway["receipt"] is None
    assert "1002" not in str(view)  # the card number is not echoed on the screen

    body = {"promotion": GH, "draw": "halfway"}
    first = await kiosk.post("/kiosk/visit/receipts", json=body, headers=headers)
    assert first.status_code == 201, first.text
    receipt = first.json()
    assert (receipt["number"], receipt["reprint"], receipt["prints"]) == (1, 0, 1)
    assert receipt["tickets"] == 32 and receipt["card_last4"] == ""  # a 4-digit card: all hidden
    assert receipt["masked_name"] == "J. B****"
    assert receipt["printed_to"] == "browser"
    assert receipt["qr_svg"].startswith("data:image/svg+xml;base64,")
    assert receipt["code"] in receipt["lines"][-1] or any(
        receipt["code"] in x for x in receipt["lines"]
    )
    assert "REPRINT" not in "\n".join(receipt["lines"])
    standing = await floor.get(f"{HALFWAY}/standings/1002")
    assert standing["activated"] is True  # printing the receipt activated the entries

    again = (await kiosk.post("/kiosk/visit/receipts", json=body, headers=headers)).json()
    assert (again["number"], again["reprint"], again["prints"]) == (1, 1, 2)
    assert any("REPRINT 1" in line for line in again["lines"])
    assert again["code"] != receipt["code"]  # each print carries its own code
    view = (await kiosk.get("/kiosk/visit", headers=headers)).json()
    halfway = next(d for d in view["draws"] if d["draw"] == "halfway")
    assert halfway["receipt"] == {"number": 1, "prints": 2}

    desk = await floor.client(Role.DESK)
    looked = (await desk.get("/receipts/1")).json()
    assert [p["reprint"] for p in looked["prints"]] == [0, 1]
    assert looked["card"] == "1002"
    assert (await desk.get("/receipts/2")).status_code == 404

    assert (await kiosk.delete("/kiosk/visit", headers=headers)).json() == {"ended": True}
    assert (await kiosk.delete("/kiosk/visit", headers=headers)).json() == {"ended": False}
    assert (await kiosk.get("/kiosk/visit", headers=headers)).status_code == 401
    for client in (kiosk, desk):
        await client.aclose()


async def test_pin_wrong_five_times_locks_the_card(floor: Daemon) -> None:
    kiosk = await floor.client(Role.KIOSK)
    headers, opened = await _visit(kiosk, "1001")
    assert opened["needs_pin"] is True
    assert (await kiosk.get("/kiosk/visit", headers=headers)).status_code == 403
    body = {"promotion": GH, "draw": "halfway"}
    assert (
        await kiosk.post("/kiosk/visit/receipts", json=body, headers=headers)
    ).status_code == 403
    for left in (4, 3, 2, 1):
        wrong = await kiosk.post("/kiosk/visit/pin", json={"pin": "1111"}, headers=headers)
        assert wrong.status_code == 401
        assert f"{left} {'try' if left == 1 else 'tries'} left" in wrong.json()["detail"]
    locked = await kiosk.post("/kiosk/visit/pin", json={"pin": "1111"}, headers=headers)
    assert locked.status_code == 423, locked.text
    assert "locked at the kiosks" in locked.json()["detail"]
    assert int(locked.headers["Retry-After"]) > 0
    again = await kiosk.post("/kiosk/visits", json={"card": "1001"})
    assert again.status_code == 423  # even with the right PIN now: the lock holds

    floor.service.clock.advance(15 * 60 + 1)  # type: ignore[attr-defined]
    headers, _ = await _visit(kiosk, "1001")
    right = await kiosk.post("/kiosk/visit/pin", json={"pin": PIN}, headers=headers)
    assert right.status_code == 200, right.text
    view = (await kiosk.get("/kiosk/visit", headers=headers)).json()
    assert view["member"]["masked_name"] == "T. M****"
    await kiosk.aclose()


async def test_the_desk_lifts_a_pin_lock_with_a_reason_in_the_trail(floor: Daemon) -> None:
    kiosk, desk, crew = [await floor.client(role) for role in (Role.KIOSK, Role.DESK, Role.CREW)]
    headers, _ = await _visit(kiosk, "1001")
    for _ in range(5):
        await kiosk.post("/kiosk/visit/pin", json={"pin": "1111"}, headers=headers)
    assert (await kiosk.post("/kiosk/visits", json={"card": "1001"})).status_code == 423
    shown = (await desk.get("/members/1001")).json()
    assert shown["kiosk_pin_locked_s"] > 0  # the desk sees the lock
    assert (await desk.get("/members/1001")).json()["kiosk_pin_locked_s"] > 0  # (a GET: still)
    url = "/members/1001/kiosk-pin/unlock"
    why = {"reason": "ID book checked at the desk"}
    assert (await crew.post(url, json=why)).status_code == 403
    assert (await kiosk.post(url, json=why)).status_code == 403
    for bad in ({"reason": "ok"}, {"reason": "ID checked\x07 at desk"}, {}):
        assert (await desk.post(url, json=bad)).status_code == 422, bad
    assert (await desk.post("/members/9999/kiosk-pin/unlock", json=why)).status_code == 404
    lifted = await desk.post(url, json=why)
    assert lifted.status_code == 200 and lifted.json() == {"card": "1001", "was_locked": True}
    assert (await desk.get("/members/1001")).json()["kiosk_pin_locked_s"] == 0
    headers, _ = await _visit(kiosk, "1001")  # a new visit, and the right PIN opens it
    right = await kiosk.post("/kiosk/visit/pin", json={"pin": PIN}, headers=headers)
    assert right.status_code == 200, right.text
    (record,) = [r for r in await floor.service.audit.records() if r.kind == Kind.PIN_UNLOCK]
    assert record.payload == {"card": "1001", "was_locked": True, "reason": why["reason"]}
    assert record.actor.startswith("test desk")
    for client in (kiosk, desk, crew):
        await client.aclose()


async def test_excluded_unknown_and_bad_cards(floor: Daemon) -> None:
    kiosk = await floor.client(Role.KIOSK)
    views = []
    for card in ("1003", "9999"):  # excluded, and no member at all: the same neutral screen
        headers, opened = await _visit(kiosk, card)
        assert opened["needs_pin"] is False
        view = (await kiosk.get("/kiosk/visit", headers=headers)).json()
        assert view["neutral"] is True and view["draws"] == [] and view["member"] is None
        views.append({k: v for k, v in view.items() if k != "as_of"})
        refused = await kiosk.post(
            "/kiosk/visit/receipts", json={"promotion": GH, "draw": "halfway"}, headers=headers
        )
        assert refused.status_code == 409
        assert "exclu" not in refused.text.lower()
    assert views[0] == views[1]
    for bad in ("12ab", "1" * 200, "12\x0034", "", " 1002", "1002\n"):
        answer = await kiosk.post("/kiosk/visits", json={"card": bad})
        assert answer.status_code == 422, (bad, answer.text)
    assert (await kiosk.post("/kiosk/visits", json={"card": "1002", "x": 1})).status_code == 422
    await kiosk.aclose()


async def test_a_visit_belongs_to_its_kiosk_and_reprints_are_rate_limited(floor: Daemon) -> None:
    first, second = await floor.client(Role.KIOSK), await floor.client(Role.KIOSK)
    headers, _ = await _visit(first, "1002")
    assert (await second.get("/kiosk/visit", headers=headers)).status_code == 401
    crew = await floor.client(Role.CREW)
    assert (await crew.get("/kiosk/visit", headers=headers)).status_code == 403
    body = {"promotion": GH, "draw": "halfway"}
    codes = [
        (await first.post("/kiosk/visit/receipts", json=body, headers=headers)).status_code
        for _ in range(7)
    ]
    assert codes[:5] == [201] * 5 and codes[5:] == [429, 429]
    desk = await floor.client(Role.DESK)
    assert len((await desk.get("/receipts/1")).json()["prints"]) == 5  # refused: not printed
    clock = floor.service.clock
    clock.advance(119)  # type: ignore[attr-defined]
    assert (await first.get("/kiosk/visit", headers=headers)).status_code == 200  # a read...
    clock.advance(2)  # type: ignore[attr-defined]
    gone = await first.get("/kiosk/visit", headers=headers)  # ...does not keep it open
    assert gone.status_code == 401 and "insert your card again" in gone.json()["detail"]
    for client in (first, second, crew, desk):
        await client.aclose()


async def _print(floor: Daemon, card: str, draw: str = "halfway") -> dict[str, object]:
    kiosk = await floor.client(Role.KIOSK)
    headers, _ = await _visit(kiosk, card)
    if card == "1001":
        await kiosk.post("/kiosk/visit/pin", json={"pin": PIN}, headers=headers)
    body = {"promotion": GH, "draw": draw}
    printed = await kiosk.post("/kiosk/visit/receipts", json=body, headers=headers)
    assert printed.status_code == 201, printed.text
    await kiosk.aclose()
    return dict(printed.json())


async def test_the_crew_checks_the_winners_receipt_at_the_claim(floor: Daemon) -> None:
    johan, thandi = await _print(floor, "1002"), await _print(floor, "1001")
    reprint = await _print(floor, "1002")
    floor.service.clock.set(dt.datetime(2026, 11, 7, 19, 0, 1, tzinfo=SAST))  # type: ignore[attr-defined]
    desk, crew = await floor.client(Role.DESK), await floor.client(Role.CREW)
    await floor.service.draws.close_bin(GH, "halfway")
    ran = await desk.post(f"{HALFWAY}/run", json={"round": 1})
    assert ran.status_code == 200, ran.text
    claim = ran.json()["claims"][0]
    winner = claim["card"]
    mine, other = (johan, thandi) if winner == "1002" else (thandi, johan)
    url = f"{HALFWAY}/claims/{claim['claim']}/receipt-check"

    ok = (await crew.post(url, json={"code": mine["code"]})).json()
    assert ok["verdict"] == "valid", ok
    qr = (await crew.post(url, json={"code": mine["qr"]})).json()
    assert qr["verdict"] == "valid"
    assert (await crew.post(url, json={"code": other["code"]})).json()["verdict"] == "other_member"
    if winner == "1002":
        second = (await crew.post(url, json={"code": reprint["code"]})).json()
        assert second["verdict"] == "valid" and "reprint 1 of 2" in second["message"]
    code = str(mine["code"])
    flipped = code[:-1] + ("A" if code[-1] != "A" else "B")
    assert (await crew.post(url, json={"code": flipped})).json()["verdict"] == "forged"
    stored = await floor.service.app.state.ctx.kiosk.store.receipt(mine["number"])  # type: ignore[union-attr]
    elsewhere = dataclasses.replace(stored, site="emperors")
    other_site = qr_payload(secrets.token_bytes(32), elsewhere, 0)
    assert (await crew.post(url, json={"code": other_site})).json()["verdict"] == "other_site"
    forged_qr = qr_payload(secrets.token_bytes(32), stored, 0)  # the right fields, a made-up key
    assert (await crew.post(url, json={"code": forged_qr})).json()["verdict"] == "forged"
    truncated = await crew.post(url, json={"code": code[:-3]})
    assert truncated.status_code == 422 or truncated.json()["verdict"] == "forged"
    for garbage in ("", "x" * 600, "R1-\x00", "hello"):
        answer = await crew.post(url, json={"code": garbage})
        assert answer.status_code == 422, (garbage, answer.text)
    kiosk = await floor.client(Role.KIOSK)
    assert (await kiosk.post(url, json={"code": code})).status_code == 403

    ledger = await floor.service.audit.ledger(f"{GH}.halfway")
    checks = [rec for rec in ledger if rec.kind == "receipt_check"]
    verdicts = [rec.payload["verdict"] for rec in checks]
    assert verdicts[:3] == ["valid", "valid", "other_member"] and verdicts[-1] == "forged"
    assert all(rec.payload["card"] == winner for rec in checks)
    report = (await desk.get(f"{HALFWAY}/report")).text
    checks_section = report.split("RECEIPT CHECKS")[1].split("EXCEPTIONS")[0]
    assert checks_section.count("valid") >= 2 and "forged" in checks_section
    assert "forged" in report.split("EXCEPTIONS")[1]  # a failed check is an exception too
    looked = (await desk.get(f"/receipts/{mine['number']}")).json()
    assert [c["verdict"] for c in looked["checks"]][:2] == ["valid", "valid"]
    for client in (desk, crew, kiosk):
        await client.aclose()


def _oct(day: int, hour: int, minute: int) -> dt.datetime:
    return dt.datetime(2026, 10, day, hour, minute, tzinfo=SAST)


async def test_a_final_receipt_lists_the_members_drum_tickets(
    gh_settings: Settings, pub: Publisher
) -> None:
    """The Final is a physical tombola: printed before the bin closes the receipt says
    when the drum numbers come; reprinted after, it lists the member's ticket numbers in
    the slots drum, exactly the desk's printable ticket list for that card."""
    clock = ManualClock(_oct(10, 9, 0))
    async with running(gh_settings, clock) as d:
        answer = await d.http.post(
            "/members/import", content=members(), headers={"content-type": "text/csv"}
        )
        assert answer.status_code == 200, answer.text
        sent = pub.egm("EGM-1", *(game("1002", _oct(6, 20, i), 300000, 10000) for i in range(11)))
        sent += pub.egm("EGM-2", *(game("1001", _oct(7, 20, i), 300000, 10000) for i in range(16)))
        await d.wait_committed(sent)
        final = f"/promotions/{GH}/draws/final"
        clock.set(dt.datetime(2026, 12, 12, 12, 0, tzinfo=SAST))
        before = await _print(d, "1002", "final")
        assert before["tombola_tickets"] == []
        printed = " ".join(" ".join(before["lines"]).split())  # wrapped at 42 columns
        assert "reprint after the bin closes at 20:00" in printed
        await _print(d, "1001", "final")  # the slots board's number one: seated, not in the drum

        clock.set(dt.datetime(2026, 12, 12, 20, 0, 1, tzinfo=SAST))
        await d.service.draws.close_bin(GH, "final")
        after = await _print(d, "1002", "final")
        assert after["reprint"] == 1 and after["number"] == before["number"]
        desk = await d.client(Role.DESK)
        listed = (await desk.get(f"{final}/tickets/slots/1.csv")).text.splitlines()[2:]
        numbers = [int(row.split(",")[0]) for row in listed if row.endswith(",1002")]
        assert numbers and len(numbers) == after["tickets"]
        assert after["tombola_tickets"] == [
            {"tombola": "slots", "ranges": [[min(numbers), max(numbers)]]}
        ]
        assert any(f"{min(numbers)}" in x and "slots tickets" in x for x in after["lines"])
        await desk.aclose()


async def test_activation_after_the_bin_closed_is_refused_with_the_reason(floor: Daemon) -> None:
    floor.service.clock.set(dt.datetime(2026, 11, 7, 19, 0, 1, tzinfo=SAST))  # type: ignore[attr-defined]
    kiosk = await floor.client(Role.KIOSK)
    headers, _ = await _visit(kiosk, "1002")
    body = {"promotion": GH, "draw": "halfway"}
    late = await kiosk.post("/kiosk/visit/receipts", json=body, headers=headers)
    assert late.status_code == 409, late.text
    assert late.json()["detail"] == "the entry bin closed at 19:00 on 07 Nov 2026"
    desk = await floor.client(Role.DESK)
    assert (await desk.get("/receipts/1")).status_code == 404  # nothing numbered, nothing kept
    for client in (kiosk, desk):
        await client.aclose()


async def test_a_wrong_pin_storm_gets_five_checks_then_the_lock(floor: Daemon) -> None:
    """Twenty wrong PINs sent at once: five are checked, the rest meet the lock (each try is
    counted before it is checked), so guessing in parallel gains nothing; the right PIN
    after them meets the lock too."""
    kiosk = await floor.client(Role.KIOSK)
    try:
        headers, _ = await _visit(kiosk, "1001")
        guesses = [f"{n:04d}" for n in range(1000, 1020)]
        answers = await asyncio.gather(
            *(kiosk.post("/kiosk/visit/pin", json={"pin": pin}, headers=headers) for pin in guesses)
        )
        words = [a.json()["detail"] for a in answers]
        checked = [w for w in words if w.startswith("wrong PIN")]
        assert len(checked) == 4, words  # four wrong PINs checked, then the fifth locks
        locked = [w for w in words if "locked at the kiosks" in w]
        ended = [w for w in words if "visit has ended" in w]  # the lock ended the visit
        assert locked and len(checked) + len(locked) + len(ended) == len(words), words
        right = await kiosk.post("/kiosk/visit/pin", json={"pin": PIN}, headers=headers)
        assert right.status_code in (401, 423)  # the visit ended with the lock, or is locked
        assert (await kiosk.post("/kiosk/visits", json={"card": "1001"})).status_code == 423
    finally:
        await kiosk.aclose()
