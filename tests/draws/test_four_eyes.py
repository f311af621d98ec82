"""Four eyes after the freeze (docs/draws.md, "Changes after the freeze"): an exclusion or
a proxy after a draw's pools froze, and an early close of its entry bin, need a written
reason and a second staff member's approval; each is recorded before the pick it
affects, replays from the ledger and appears in the draw report with both names.

Through the application of a daemon whose scheduler is not running, against real Redis.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from zoneinfo import ZoneInfo

import pytest

from bonusd.access.auth import Role
from bonusd.audit.chain import Kind
from bonusd.draws.approvals import ApprovalError, ChangeKind, Decision
from bonusd.draws.book import SCHEDULER, DrawBook, DrawPlan
from bonusd.draws.evidence import draw_report
from bonusd.draws.fairness import CandidateStream
from bonusd.promotions import load_promotion
from tests.draws.helpers import CLOSES, DESK, GH, HALFWAY, HW, PID, SUPERVISOR, HttpDesk
from tests.redis_snapshot import differences

BASE = f"/promotions/{PID}/draws/{HW}"
REASON = "self-exclusion form handed in at the desk"


async def frozen(desk: HttpDesk) -> None:
    desk.clock.set(CLOSES)
    await desk.entry_pool()
    r = await desk.post(Role.DESK, f"{BASE}/close-bin")
    assert r.status_code == 200, r.text


async def first_winner(desk: HttpDesk) -> str:
    """The card the round's stream picks first: what an insider holding the seed knows."""
    book = await desk.service.draws.book(PID, HW)
    rnd = book.draw.round("pooled", 1)
    assert rnd.pool is not None
    pool = rnd.pool
    _, ticket = CandidateStream(rnd.seed, pool.draw_id, pool.tombola, pool.commitment).below(
        pool.total
    )
    return pool.owner(ticket)


async def ledger_kinds(desk: HttpDesk) -> list[str]:
    return [r.kind for r in await desk.service.audit.ledger(HALFWAY)]


async def test_an_exclusion_after_the_freeze_is_refused_without_a_second_pair_of_eyes(
    desk: HttpDesk,
) -> None:
    await frozen(desk)
    card = await first_winner(desk)
    before = await desk.keyspace()
    r = await desk.post(Role.DESK, f"{BASE}/exclusions", {"card": card, "note": REASON})
    assert r.status_code == 409, r.text
    assert "needs a written reason and a second staff member's approval" in r.json()["detail"]
    assert f"{BASE}/changes" in r.json()["detail"]
    # a request without a real reason is refused too
    short = await desk.post(Role.DESK, f"{BASE}/changes", {"change": "exclusion", "card": card, "reason": "x"})  # fmt: skip
    assert short.status_code == 422
    assert differences(before, await desk.keyspace()) == []
    asked = await desk.post(
        Role.DESK, f"{BASE}/changes", {"change": "exclusion", "card": card, "reason": REASON}
    )
    assert asked.status_code == 200, asked.text
    assert asked.json()["changes"][0]["state"] == "waiting"
    # the one who asked cannot approve; crew cannot either; nothing is excluded yet
    mine = await desk.post(Role.DESK, f"{BASE}/changes/1/approve")
    assert mine.status_code == 409 and "four eyes" in mine.json()["detail"]
    crew = await desk.post(Role.CREW, f"{BASE}/changes/1/approve")
    assert crew.status_code == 403
    missing = await desk.post_as(desk.second_desk, f"{BASE}/changes/9/approve")
    assert missing.status_code == 404
    assert card not in (await desk.service.draws.book(PID, HW)).draw.excluded
    assert (await ledger_kinds(desk)).count(Kind.EXCLUSION) == 0


async def test_an_approved_exclusion_passes_the_member_over_and_is_reported_with_both_names(
    desk: HttpDesk,
) -> None:
    await frozen(desk)
    card = await first_winner(desk)
    body = {"change": "exclusion", "card": card, "reason": REASON}
    assert (await desk.post(Role.DESK, f"{BASE}/changes", body)).status_code == 200
    ok = await desk.post_as(desk.second_desk, f"{BASE}/changes/1/approve")
    assert ok.status_code == 200, ok.text
    row = ok.json()["changes"][0]
    assert row["state"] == "approved" and row["decided_by"] == "desk two (desk)"
    assert row["requested_by"] == "desk one (desk)"
    # decided twice: refused
    again = await desk.post_as(desk.second_desk, f"{BASE}/changes/1/refuse")
    assert again.status_code == 409 and "was approved" in again.json()["detail"]
    ledger = await desk.service.audit.ledger(HALFWAY)
    tail = ledger[-3:]
    assert [r.kind for r in tail] == [Kind.REQUEST, Kind.APPROVAL, Kind.EXCLUSION]
    assert tail[0].actor == "desk one (desk)" and tail[1].actor == "desk two (desk)"
    assert tail[2].payload["requested_by"] == "desk one (desk)"
    assert tail[2].payload["approved_by"] == "desk two (desk)"
    assert tail[2].payload["request"] == 1 and tail[2].payload["note"] == REASON
    # the round: the member the stream would have picked first is passed over, excluded
    run = await desk.post(Role.DESK, f"{BASE}/run", {"round": 1})
    assert run.status_code == 200, run.text
    picks = [r for r in await desk.service.audit.ledger(HALFWAY) if r.kind == Kind.PICK]
    assert picks[0].payload["passed_over"][0]["card"] == card
    assert picks[0].payload["passed_over"][0]["reason"] == "excluded"
    assert card not in {p.payload["card"] for p in picks}
    # a restarted daemon replays the requests, approvals and exclusion to the same book
    desk.service.draws._books.clear()
    book = await desk.service.draws.book(PID, HW)
    assert card in book.draw.excluded and book.approvals.decisions[1][1].name == "desk two"
    records = await desk.service.audit.records()
    report = draw_report(records, HALFWAY).render()
    line = next(x for x in report.splitlines() if f"card {card} excluded after the freeze" in x)
    assert "requested by desk one (desk)" in line and "approved by desk two (desk)" in line
    assert REASON in line
    assert report.index(line) < report.index("OVERRIDES")  # listed under EXCEPTIONS


async def test_a_refused_request_changes_nothing_but_is_recorded(desk: HttpDesk) -> None:
    await frozen(desk)
    body = {"change": "exclusion", "card": await first_winner(desk), "reason": REASON}
    assert (await desk.post(Role.DESK, f"{BASE}/changes", body)).status_code == 200
    no = await desk.post_as(desk.second_desk, f"{BASE}/changes/1/refuse")
    assert no.status_code == 200 and no.json()["changes"][0]["state"] == "refused"
    kinds = await ledger_kinds(desk)
    assert kinds[-2:] == [Kind.REQUEST, Kind.APPROVAL] and Kind.EXCLUSION not in kinds
    listed = await desk.get(Role.DESK, f"{BASE}/changes")
    assert listed.status_code == 200 and listed.json()["frozen"] is True


def test_a_proxy_after_the_freeze_needs_approval_too() -> None:
    """A draw whose bin closes at 18:00 and whose proxy forms close at 18:45 (the book
    alone, pure): a proxy at 18:30 goes through a request and its approval."""
    halfway = load_promotion(GH).draw(HW)
    day = halfway.date
    plan = replace(DrawPlan.of(load_promotion(GH), halfway), bin_closes=local(day, 18))
    book = DrawBook(plan)
    for key in plan.keys:
        book.commit_round(key, bytes(32), local(day, 9))
    book.close_bin({"pooled": {"C01": 2, "C02": 3}}, [], SCHEDULER, local(day, 18))
    at = local(day, 18, 30)
    with pytest.raises(ApprovalError, match="a proxy now needs"):
        book.register_proxy("C01", "ID 800101", "Sipho M", DESK, at)
    fields = {"card": "C01", "proxy_id": "ID 800101", "name": "Sipho M"}
    book.request_change(ChangeKind.PROXY, "the member is in hospital tonight", DESK, at, **fields)
    with pytest.raises(ApprovalError, match="four eyes"):
        book.decide(1, Decision.APPROVED, DESK, at)
    late = local(day, 18, 50)  # the forms closed at 18:45: refused when asked, not left waiting
    with pytest.raises(ApprovalError, match="proxy forms are taken until"):
        book.request_change(ChangeKind.PROXY, "the member is in hospital", DESK, late, **fields)
    made = book.decide(1, Decision.APPROVED, SUPERVISOR, at)
    assert [e.kind for e in made] == [Kind.APPROVAL, Kind.PROXY]
    assert made[1].payload["approved_by"] == "desk-2 (desk)"
    assert [p.proxy_id for p in book.proxies.proxies.values()] == ["ID 800101"]


def local(day: dt.date, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour, minute), ZoneInfo("Africa/Johannesburg"))


async def test_an_early_close_needs_an_admin_a_reason_and_a_second_approval(
    desk: HttpDesk,
) -> None:
    body = {"change": "early_close", "reason": "fire drill: the floor closes at 18h55"}
    await desk.entry_pool()
    before = await desk.keyspace()
    by_desk = await desk.post(Role.DESK, f"{BASE}/changes", body)
    assert by_desk.status_code == 403 and "admin" in by_desk.json()["detail"]
    assert differences(before, await desk.keyspace()) == []
    asked = await desk.post(Role.ADMIN, f"{BASE}/changes", body)
    assert asked.status_code == 200, asked.text
    own = await desk.post(Role.ADMIN, f"{BASE}/changes/1/approve")
    assert own.status_code == 409 and "four eyes" in own.json()["detail"]
    # still refused for the desk's plain run: the bin is open until approval
    assert (await desk.post(Role.DESK, f"{BASE}/run", {"round": 1})).status_code == 409
    ok = await desk.post_as(desk.second_desk, f"{BASE}/changes/1/approve")
    assert ok.status_code == 200, ok.text
    ledger = await desk.service.audit.ledger(HALFWAY)
    kinds = [r.kind for r in ledger]
    early = kinds.index(Kind.EXCEPTION)
    assert kinds[early - 2 : early] == [Kind.REQUEST, Kind.APPROVAL]
    assert kinds[early + 1 :].count(Kind.POOL) == 3 and Kind.POOL not in kinds[:early]
    note = ledger[early].payload
    assert note["change"] == "early_close" and note["approved_by"] == "desk two (desk)"
    assert note["requested_by"] == "admin one (admin)"
    assert "closed early, before its scheduled close at 2026-11-07T19:00:00+02:00" in note["note"]
    assert ledger[early].time.startswith("2026-11-07T16:52:00")  # 18:52 local, 8 minutes early
    # a fresh daemon replays the early close; the round now runs (before its time)
    desk.service.draws._books.clear()
    assert (await desk.service.draws.book(PID, HW)).closed_early
    assert (await desk.post(Role.DESK, f"{BASE}/run", {"round": 1})).status_code == 200


async def test_an_early_close_request_after_the_scheduled_close_is_refused(
    desk: HttpDesk,
) -> None:
    desk.clock.set(CLOSES + dt.timedelta(seconds=1))
    body = {"change": "early_close", "reason": "fire drill: the floor closes at 18h55"}
    r = await desk.post(Role.ADMIN, f"{BASE}/changes", body)
    assert r.status_code == 409 and "scheduled close has come" in r.json()["detail"]


async def test_an_exclusion_approved_after_the_pick_leaves_the_pick_standing(
    desk: HttpDesk,
) -> None:
    """The decision (docs/draws.md): an approved exclusion passes the member over from the
    next pick on; a winner picked before it stays picked, and the claim decides payment."""
    await frozen(desk)
    run = await desk.post(Role.DESK, f"{BASE}/run", {"round": 1})
    assert run.status_code == 200, run.text
    winner = run.json()["claims"][0]["card"]
    body = {"change": "exclusion", "card": winner, "reason": REASON}
    assert (await desk.post(Role.DESK, f"{BASE}/changes", body)).status_code == 200
    assert (await desk.post_as(desk.second_desk, f"{BASE}/changes/1/approve")).status_code == 200
    book = await desk.service.draws.book(PID, HW)
    assert winner in book.draw.excluded
    assert book.claims[1].card == winner and str(book.claims[1].state) == "announced"
    picks = [r for r in await desk.service.audit.ledger(HALFWAY) if r.kind == Kind.PICK]
    assert len(picks) == 5 and picks[0].payload["card"] == winner  # nothing rewritten
