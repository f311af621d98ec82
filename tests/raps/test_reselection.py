"""Bounded reselection (issue 16, item 4) against a real Redis: the crew's reselections of a
RAPS jackpot name their reason, come at least `reselect_spacing_s` after the selection
was announced to the crew and stop at `max_reselections`; the desk approves one more at a
time with a reason; the scheduler's reselections are not counted; all of it replays from
the ledger, and the crew view says how many are left and when the next is allowed."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from bonusd.audit.chain import Entry, Kind
from bonusd.draws.book import SCHEDULER, LedgerError
from bonusd.draws.claims import ClaimError, RoleError
from bonusd.push.crewview import crew_view
from bonusd.push.views import Inputs
from bonusd.raps.book import RapsBook
from bonusd.raps.reselection import SYSTEM_REASON, ReselectionRefused, Reselections
from bonusd.raps.rules import RapsClaimState
from tests.raps.helpers import CREW, DESK, J1, PID, SID, Site, kinds, start

SUBJECT = f"{PID}.{SID}"


async def not_owner(s: Site, claim: int, reason: str = "the card is her husband's") -> list:  # type: ignore[type-arg]
    """The crew at the device of claim `claim` finds the card is not the player's."""
    await s.desk.act(PID, SID, claim, "crew_arrived", CREW)
    return await s.desk.act(PID, SID, claim, "not_owner", CREW, reason=reason)


async def reselect_three_times(s: Site) -> None:
    """Jackpot 1 run, then three crew reselections a minute apart: claims 2, 3 and 4."""
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)
    for claim in (1, 2, 3):
        s.clock.advance(60)
        assert kinds(await not_owner(s, claim)) == ["claim", "claim", "redraw", "claim"]


async def ledger_length(s: Site) -> tuple[int, int]:
    return len(await s.desk.audit.ledger(SUBJECT)), len(await s.desk.audit.records())


def restart(s: Site) -> None:
    """A restarted daemon: no cached book, floor snapshot or pool."""
    s.desk._books.clear()
    s.desk._floors.clear()
    s.desk._draws.pools.clear()


async def test_the_fourth_crew_reselection_is_refused_and_writes_nothing(s: Site) -> None:
    await reselect_three_times(s)
    ledger = await s.desk.audit.ledger(SUBJECT)
    moves = [r for r in ledger if r.kind == "claim" and r.payload["action"] == "not_owner"]
    assert [r.payload["detail"] for r in moves] == [{"reason": "the card is her husband's"}] * 3
    assert {r.actor for r in moves} == {"lerato (crew)"}
    counts = [
        (r.payload["detail"]["reselection"], r.payload["detail"]["allowed"])
        for r in ledger
        if r.kind == "claim" and r.payload["action"] == "reselect"
    ]
    assert counts == [("1", "3"), ("2", "3"), ("3", "3")]
    s.clock.advance(3600)
    await s.desk.act(PID, SID, 4, "crew_arrived", CREW)
    before = await ledger_length(s)
    with pytest.raises(ReselectionRefused, match=r"made 3 of its 3 reselections.*desk's approval"):
        await s.desk.act(PID, SID, 4, "not_owner", CREW, reason="not his card")
    assert await ledger_length(s) == before
    book = await s.desk.book(PID, SID)
    assert book.claims[4].state is RapsClaimState.CREW_AT_DEVICE and len(book.claims) == 4
    assert book.jackpot(1).reselections.remaining == 0


async def test_a_second_not_owner_inside_the_spacing_waits_for_the_clock(s: Site) -> None:
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)  # the crew is alerted to claim 1 at 14:30
    s.clock.advance(10)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    with pytest.raises(ReselectionRefused, match=r"too soon to reselect.*in 20 s"):
        await s.desk.act(PID, SID, 1, "not_owner", CREW, reason="not hers")
    s.clock.advance(20)
    await s.desk.act(PID, SID, 1, "not_owner", CREW, reason="not hers")  # claim 2 alerted now
    s.clock.advance(29)
    await s.desk.act(PID, SID, 2, "crew_arrived", CREW)
    before = await ledger_length(s)
    with pytest.raises(ReselectionRefused, match=r"try again from .* in 1 s"):
        await s.desk.act(PID, SID, 2, "not_owner", CREW, reason="not his")
    assert await ledger_length(s) == before
    s.clock.advance(1)
    records = await s.desk.act(PID, SID, 2, "not_owner", CREW, reason="not his")
    assert kinds(records) == ["claim", "claim", "redraw", "claim"]
    assert records[1].payload["detail"] == {
        "reason": "not his",
        "reselection": "2",
        "allowed": "3",
    }


async def test_every_human_reselection_names_its_reason(s: Site) -> None:
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)
    s.clock.advance(60)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    for blank in ("", "   "):
        with pytest.raises(ClaimError, match="give the reason"):
            await s.desk.act(PID, SID, 1, "not_owner", CREW, reason=blank)
    await s.desk.act(PID, SID, 1, "not_at_device", CREW)
    await s.desk.act(PID, SID, 1, "announce", CREW)
    s.clock.advance(91)
    with pytest.raises(ClaimError, match="give the reason"):
        await s.desk.act(PID, SID, 1, "reselect", DESK)
    records = await s.desk.act(PID, SID, 1, "reselect", DESK, reason="did not present")
    assert records[0].actor == "desk-1 (desk)"
    assert records[0].payload["detail"] == {"reason": "did not present"}  # the desk's: not counted
    book = await s.desk.book(PID, SID)
    assert book.jackpot(1).reselections.made == 0


async def test_the_desk_approves_exactly_one_more_with_its_name_and_reason(s: Site) -> None:
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)
    s.clock.advance(60)
    await not_owner(s, 1)
    with pytest.raises(ClaimError, match="2 of its 3 reselections left"):
        await s.desk.approve_reselection(PID, SID, 1, DESK, "the crew asked")
    for claim in (2, 3):
        s.clock.advance(60)
        await not_owner(s, claim)
    s.clock.advance(60)
    await s.desk.act(PID, SID, 4, "crew_arrived", CREW)
    with pytest.raises(RoleError, match="only the desk approves"):
        await s.desk.approve_reselection(PID, SID, 1, CREW, "I approve myself")
    with pytest.raises(ClaimError, match="give the reason"):
        await s.desk.approve_reselection(PID, SID, 1, DESK, " ")
    records = await s.desk.approve_reselection(PID, SID, 1, DESK, "ID checked at the desk")
    assert kinds(records) == ["override"] and records[0].actor == "desk-1 (desk)"
    assert records[0].payload == {
        "draw_id": J1,
        "event": "reselection_approved",
        "reason": "ID checked at the desk",
        "made": 3,
        "allowed": 4,
    }
    with pytest.raises(ClaimError, match="1 of its 4 reselections left"):
        await s.desk.approve_reselection(PID, SID, 1, DESK, "once more")
    records = await s.desk.act(PID, SID, 4, "not_owner", CREW, reason="a borrowed card")
    assert records[1].payload["detail"]["reselection"] == "4"
    s.clock.advance(60)
    await s.desk.act(PID, SID, 5, "crew_arrived", CREW)
    with pytest.raises(ReselectionRefused, match="made 4 of its 4 reselections"):
        await s.desk.act(PID, SID, 5, "not_owner", CREW, reason="again")
    report = [r for r in await s.desk.audit.records() if r.kind == "override"]
    assert [(r.actor, r.payload["reason"]) for r in report] == [
        ("desk-1 (desk)", "ID checked at the desk")
    ]


async def test_the_schedulers_reselection_is_never_refused_nor_counted(s: Site) -> None:
    await reselect_three_times(s)
    for action in ("crew_arrived", "not_at_device", "announce"):
        await s.desk.act(PID, SID, 4, action, CREW)
    s.clock.advance(91)
    assert await s.desk.run_due(PID, SID) == 1
    book = await s.desk.book(PID, SID)
    assert book.claims[4].state is RapsClaimState.RESELECTED and len(book.claims) == 5
    move = book.claims[4].history[-1]
    assert move.actor == SCHEDULER and dict(move.detail) == {"reason": SYSTEM_REASON}
    assert (book.jackpot(1).reselections.made, book.jackpot(1).reselections.allowed) == (3, 3)


async def test_a_restart_replays_the_limit_the_spacing_and_the_approval(s: Site) -> None:
    await reselect_three_times(s)
    s.clock.advance(60)
    await s.desk.approve_reselection(PID, SID, 1, DESK, "ID checked at the desk")
    await not_owner(s, 4)
    before = await s.desk.book(PID, SID)
    state = (before.jackpot(1).reselections, [(c.card, c.state) for c in before.claims.values()])
    restart(s)
    again = await s.desk.book(PID, SID)
    assert (again.jackpot(1).reselections, [(c.card, c.state) for c in again.claims.values()]) == (
        state
    )
    assert again.jackpot(1).reselections.approvals[0].actor == DESK
    # the chosen winner is verified: the jackpot's picks recompute from seed and pool
    await s.desk.act(PID, SID, 5, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 5, "verify_at_device", CREW)
    chain, result = await s.desk.verify(J1)
    assert chain.startswith("chain intact") and [v.picks_checked for v in result.values()] == [5]
    assert all(v.ok for v in result.values())


async def _edit_ledger(s: Site, which: list[int], edit: dict[str, object] | None) -> None:
    """Change records `which` of the session's ledger (None: remove them), and restart."""
    key = s.desk.audit.ledger_key(SUBJECT)
    rows = await s.redis.lrange(key, 0, -1)
    for n in which:
        if edit is None:
            await s.redis.lrem(key, 1, rows[n])
        else:
            row = json.loads(rows[n])
            row.update(edit)
            await s.redis.lset(key, n, json.dumps(row))
    restart(s)


async def test_replay_refuses_a_ledger_past_the_limit_or_inside_the_spacing(s: Site) -> None:
    await reselect_three_times(s)
    s.clock.advance(60)
    await s.desk.approve_reselection(PID, SID, 1, DESK, "ID checked at the desk")
    await not_owner(s, 4)
    ledger = await s.desk.audit.ledger(SUBJECT)
    key = s.desk.audit.ledger_key(SUBJECT)
    rows = await s.redis.lrange(key, 0, -1)
    approval = next(n for n, r in enumerate(ledger) if r.kind == "override")
    await _edit_ledger(s, [approval], None)  # the fourth reselection without its approval
    with pytest.raises(LedgerError, match=r"cannot be replayed: jackpot .* made 3 of its 3"):
        await s.desk.book(PID, SID)
    await s.redis.delete(key)
    await s.redis.rpush(key, *rows)
    restart(s)
    await s.desk.book(PID, SID)  # as written: replays
    # claim 2's crew at the device and "not the owner" 15 s after its alert, not 30
    steps = [
        n
        for n, r in enumerate(ledger)
        if r.payload.get("claim") == "RAPS claim 2"
        and r.payload["action"] in ("crew_arrived", "not_owner")
    ]
    then = dt.datetime.strptime(ledger[steps[0]].time, "%Y-%m-%dT%H:%M:%S.%fZ")
    early = (then - dt.timedelta(seconds=45)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    await _edit_ledger(s, steps, {"time": early})
    with pytest.raises(LedgerError, match="too soon to reselect"):
        await s.desk.book(PID, SID)


async def test_records_from_before_the_limit_replay_and_count(
    s: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's ledger: four crew reselections in 113 ms, written before reasons and
    the limit existed (no `reason`, no count): it replays as written, and the crew's
    allowance is used up."""
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)

    def as_before(entries: list[Entry]) -> list[Entry]:
        old = ("not_owner", "reselect")
        return [
            dataclasses.replace(e, payload=e.payload | {"detail": {}})
            if e.kind is Kind.CLAIM and e.payload["action"] in old
            else e
            for e in entries
        ]

    with monkeypatch.context() as old_code:  # no spacing and no limit yet
        old_code.setattr(Reselections, "check", lambda *_: None)
        for claim in (1, 2, 3, 4):
            s.clock.advance(0.028)
            await s.desk.act(PID, SID, claim, "crew_arrived", CREW)
            now = s.clock.now()

            def command(book: RapsBook, claim: int = claim, now: dt.datetime = now) -> list[Entry]:
                return as_before(book.act(claim, "not_owner", CREW, now, "x"))

            await s.desk.step(PID, SID, command)
    restart(s)
    book = await s.desk.book(PID, SID)
    assert len(book.claims) == 5 and book.jackpot(1).reselections.made == 4
    assert book.jackpot(1).reselections.remaining == 0
    moves = [m for c in book.claims.values() for m in c.history if m.action == "not_owner"]
    assert [dict(m.detail) for m in moves] == [{}] * 4
    assert moves[-1].at - book.claims[1].history[0].at == dt.timedelta(milliseconds=112)


async def test_the_crew_view_shows_the_reselections_left_and_the_wait(s: Site) -> None:
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)
    alerted = s.clock.now()

    async def alert() -> dict[str, object]:
        book = await s.desk.book(PID, SID)
        promotion = s.desk.promotions.promotion(PID)
        inputs = Inputs(
            now=s.clock.now(),
            zone=promotion.zone,
            site="s",
            promotions=(promotion,),
            sessions={book.subject: book},
        )
        (one,) = crew_view(inputs)["alerts"]
        return one

    s.clock.advance(15)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    first = await alert()
    ready = (alerted + dt.timedelta(seconds=30)).astimezone(s.desk.promotions.promotion(PID).zone)
    assert first["reselections"] == {"left": 3, "allowed": 3, "from": ready.isoformat()}
    assert "not_owner" not in first["actions"]  # too soon: the crew walks to the device first
    s.clock.advance(15)
    assert "not_owner" in (await alert())["actions"]
    await s.desk.act(PID, SID, 1, "not_owner", CREW, reason="not hers")
    second = await alert()
    assert second["claim"] == 2 and second["reselections"]["left"] == 2  # type: ignore[index]
    for claim in (2, 3):
        s.clock.advance(60)
        await not_owner(s, claim)
    s.clock.advance(600)
    await s.desk.act(PID, SID, 4, "crew_arrived", CREW)
    spent = await alert()
    assert spent["reselections"]["left"] == 0  # type: ignore[index]
    assert spent["actions"] == ["verify_at_device", "not_at_device"]
    await s.desk.approve_reselection(PID, SID, 1, DESK, "ID checked at the desk")
    approved = await alert()
    assert approved["reselections"]["left"] == 1 and approved["reselections"]["allowed"] == 4  # type: ignore[index]
    assert "not_owner" in approved["actions"]
