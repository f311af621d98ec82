"""The draw runner against a real Redis: a Golden Horse draw from bin close to prize letter."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import cast

import pytest
import redis.asyncio as aioredis

from bonusd.audit.chain import AuditRecord, Json, Kind, from_jsonl
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.book import SCHEDULER, DrawBook, LedgerError
from bonusd.draws.claims import (
    Actor,
    ClaimError,
    DeadlineError,
    DrawClaimState,
    RegisterError,
    RevealError,
    RoleError,
    TransitionError,
)
from bonusd.draws.fairness import Pool, SkipReason, pick_sequence
from bonusd.draws.plan import DrawPlan
from bonusd.draws.rounds import DrawError, ManualTicketError
from bonusd.draws.runner import DrawRunner
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.store import PromotionStore
from tests.daemon_helpers import PROJECT
from tests.draws.helpers import (
    CREW,
    DESK,
    FIVE_PRIZES,
    GH,
    HALFWAY,
    HW,
    PID,
    POOLED1,
    Site,
    a_draw_from_commitment_to_letter,
    exclude_approved,
    of_kind,
    seeds,
)
from tests.seal_helpers import SEAL, opened_seed


@pytest.fixture
async def desk(site: str, redis_url: str) -> AsyncIterator[tuple[DrawRunner, ManualClock]]:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    promotion = load_promotion(GH)
    store = PromotionStore(r, keys, [promotion])
    draw = promotion.draw("halfway")
    clock = ManualClock(dt.datetime.combine(draw.date, dt.time(12, 0), promotion.zone))
    # the entry pool as the promotion engine freezes it at bin close (1,000 members)
    counts = {Tombola.POOLED: {f"C{n:05d}": 1 + n % 7 for n in range(1000)}}
    pool = EntryPool.freeze(
        promotion_id=PID, draw_id="halfway", closed_at=clock.now(), counts=counts
    )
    await r.set(store.keys.pool(PID, "halfway"), pool.canonical())
    yield (
        DrawRunner(
            redis=r, keys=keys, audit=AuditStore(r, keys), promotions=store, clock=clock, seal=SEAL
        ),
        clock,
    )
    await r.aclose()


# -- a small site: helpers shared by the tests below ---------------------------------------------


async def round_one(s: Site) -> DrawBook:
    """Seeds committed at noon, round 1 drawn at 19:00 and the round's prizes loaded."""
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    await s.desk.run_round(PID, HW, 1)
    await s.desk.load_prizes(PID, HW, POOLED1, FIVE_PRIZES, DESK)
    s.clock.advance(10)
    return await s.desk.book(PID, HW)


async def to_reveal(d: DrawRunner, claim_id: int, reveal: int) -> list[AuditRecord]:
    await d.act(PID, HW, claim_id, "present", CREW)
    await d.act(PID, HW, claim_id, "verify", CREW)
    return await d.act(PID, HW, claim_id, "pick_reveal", CREW, reveal=reveal)


async def settled_round_one(s: Site) -> None:
    await round_one(s)
    for claim_id in range(1, 6):
        await to_reveal(s.desk, claim_id, claim_id)
    assert len(of_kind(await s.ledger(), Kind.SEED_REVEAL)) == 1


async def rewrite(
    s: Site,
    key: str,
    match: Callable[[AuditRecord], bool],
    change: Callable[[dict[str, Json]], None],
) -> int:
    """ChangeKind the payload of the first matching record of a Redis list in place (the hash is
    left as it was, as a tamperer without the chain would); returns the record's seq."""
    rows = cast(list[str], await s.redis.lrange(key, 0, -1))
    for i, row in enumerate(rows):
        rec = from_jsonl(row)[0]
        if match(rec):
            payload = json.loads(json.dumps(rec.payload))
            change(payload)
            await s.redis.lset(key, i, replace(rec, payload=payload).to_json())
            return rec.seq
    raise AssertionError(f"no matching record in {key}")


# -- once per draw across rounds ------------------------------------------------------------------


async def test_three_rounds_never_pick_a_card_twice(small: Site) -> None:
    s = small
    await s.desk.commit_seeds(PID, HW)
    for number in (1, 2, 3):
        s.clock.set(s.at(HW, 18 + number))
        records = await s.desk.run_round(PID, HW, number)
        assert len(of_kind(records, Kind.PICK)) == 5
    picks = of_kind(await s.ledger(), Kind.PICK)
    cards = [p.payload["card"] for p in picks]
    assert len(picks) == 15 and len(set(cards)) == 15  # 15 different members out of 20
    assert [p.payload["round"] for p in picks] == [1] * 5 + [2] * 5 + [3] * 5
    passed = [(i, skipped) for i, p in enumerate(picks) for skipped in p.payload["passed_over"]]
    assert passed, "with 20 members, later rounds land on earlier winners"
    for i, skipped in passed:
        assert skipped["reason"] == SkipReason.ALREADY_PICKED
        assert skipped["card"] in cards[:i]  # only an earlier winner is passed over
    assert any(p.payload["round"] > 1 for p in picks if p.payload["passed_over"])
    book = await s.desk.book(PID, HW)
    assert sorted(c.card for c in book.claims.values()) == sorted(cards)
    # the passed-over tickets live in the records, not again in the desk's book
    assert not [p for rnd in book.draw.rounds.values() for p in rnd.picks if p.passed_over]
    # a restarted daemon agrees, pick for pick
    again = await s.new_desk().book(PID, HW)
    assert [c.card for c in again.claims.values()] == [c.card for c in book.claims.values()]


# -- the final: separate manual tombolas and leaderboard seats ------------------------------------

SLOTS = {"S01": 3, "S02": 2, "S03": 4, "S04": 1, "S05": 2, "S06": 3, "S07": 1, "BOTH": 2}
TABLES = {"T01": 2, "T02": 1, "T03": 3, "T04": 2, "BOTH": 1}


async def final_site(s: Site) -> None:
    s.clock.set(s.at("final", 12))
    # the leaders are in the entry pool's counts too; seated, they hold no tickets
    counts = {
        Tombola.SLOTS: {**SLOTS, "LEAD-S": 9},
        Tombola.TABLES: {**TABLES, "LEAD-T": 9},
    }
    await s.entry_pool("final", counts, [("slots", "LEAD-S"), ("tables", "LEAD-T")])
    s.clock.set(s.at("final", 20))  # the bin's scheduled close
    await s.desk.close_bin(PID, "final")


def tickets_of(lines: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for line in lines[1:]:
        number, card = line.split("\t")
        out.setdefault(card, []).append(int(number))
    return out


async def test_final_manual_tombolas_with_seats(small: Site) -> None:
    s = small
    await final_site(s)
    d = s.desk
    book = await d.book(PID, "final")
    assert {c: seat.board for c, seat in book.draw.seats.items()} == {
        "LEAD-S": "slots",
        "LEAD-T": "tables",
    }
    slots, tables = book.draw.ticket_list("slots", 1), book.draw.ticket_list("tables", 1)
    assert slots.pool_commitment != tables.pool_commitment
    lines = list(slots.lines())
    assert lines[0].startswith(f"# draw {PID}.final tombola slots round 1 tickets {slots.total}")
    owners = tickets_of(lines)
    assert slots.total == sum(SLOTS.values()) == len(lines) - 1
    assert {c: len(n) for c, n in owners.items()} == SLOTS  # numbered 1..total, seats left out
    assert sorted(n for ns in owners.values() for n in ns) == list(range(1, slots.total + 1))
    table_owners = tickets_of(list(tables.lines()))
    assert {c: len(n) for c, n in table_owners.items()} == TABLES
    with pytest.raises(DrawError, match="manual"):
        await d.run_round(PID, "final", 1)

    length = await s.ledger_len(f"{PID}.final")

    async def refused(tombola: str, number: int, match: str, printed: str | None = None) -> None:
        with pytest.raises(ManualTicketError, match=match):
            await d.accept_ticket(
                PID, "final", (tombola, 1), number, actor=DESK, printed_pool=printed
            )
        assert await s.ledger_len(f"{PID}.final") == length

    await refused("slots", slots.total + 1, f"does not exist .*tickets 1 to {slots.total}")
    await refused("slots", 0, "does not exist")
    # a ticket from the tables list read out as a slots ticket: another pool
    await refused("slots", 1, "does not belong to this draw", printed=tables.pool_commitment)
    await refused("slots", 1, "does not belong to this draw", printed="0" * 64)

    # accepted: BOTH in slots, with the printed list of the right pool
    recs = await d.accept_ticket(
        PID,
        "final",
        ("slots", 1),
        owners["BOTH"][0],
        actor=DESK,
        printed_pool=slots.pool_commitment,
    )
    assert [r.kind for r in recs] == ["pick", "claim"]
    assert recs[0].payload["manual"] is True and recs[0].payload["card"] == "BOTH"
    assert recs[1].payload["action"] == "created" and recs[1].payload["card"] == "BOTH"
    length = await s.ledger_len(f"{PID}.final")
    # the owner already picked: another slots ticket of theirs, and their tables ticket
    await refused("slots", owners["BOTH"][1], "belongs to card BOTH, already picked in slots")
    await refused("tables", table_owners["BOTH"][0], "belongs to card BOTH, already picked")
    # excluded by the desk after the pool froze
    await exclude_approved(d, "final", "S03", "self-excluded at the desk")
    length = await s.ledger_len(f"{PID}.final")
    for number in owners["S03"]:
        await refused("slots", number, "belongs to card S03, who is excluded")

    await d.accept_ticket(PID, "final", ("slots", 1), owners["S01"][2], actor=DESK)
    await d.accept_ticket(PID, "final", ("tables", 1), table_owners["T03"][1], actor=DESK)
    book = await d.book(PID, "final")
    assert [(c.card, book.claim_round[i][0]) for i, c in book.claims.items()] == [
        ("BOTH", ("slots", 1)),
        ("S01", ("slots", 1)),
        ("T03", ("tables", 1)),
    ]
    assert all(c.state is DrawClaimState.ANNOUNCED for c in book.claims.values())
    assert [p.number for p in book.draw.round("slots", 1).manual_picks] == [1, 2]
    # a restarted daemon replays the same manual picks
    again = await s.new_desk().book(PID, "final")
    assert [c.card for c in again.claims.values()] == ["BOTH", "S01", "T03"]
    assert "S03" in again.draw.excluded


async def test_a_hand_drawn_ticket_of_a_member_excluded_in_the_registry_is_refused(
    small: Site,
) -> None:
    """The casino's exclusion arrives as the member-index flag after the pool froze, with no
    desk action: as for an electronic pick, the ticket's owner is recorded as excluded and
    the ticket refused (draw another)."""
    s = small
    await final_site(s)
    d = s.desk
    owners = tickets_of(list((await d.book(PID, "final")).draw.ticket_list("slots", 1).lines()))
    await s.flag_excluded("S06")
    with pytest.raises(ManualTicketError, match="belongs to card S06, who is excluded"):
        await d.accept_ticket(PID, "final", ("slots", 1), owners["S06"][0], actor=DESK)
    ledger = await s.ledger(f"{PID}.final")
    assert [r.payload["card"] for r in of_kind(ledger, Kind.EXCLUSION)] == ["S06"]
    assert not of_kind(ledger, Kind.PICK) and not of_kind(ledger, Kind.CLAIM)
    recs = await d.accept_ticket(PID, "final", ("slots", 1), owners["S07"][0], actor=DESK)
    assert of_kind(recs, Kind.PICK)[0].payload["card"] == "S07"


async def test_a_seated_member_never_holds_a_ticket_and_a_late_seat_is_refused(
    small: Site,
) -> None:
    s = small
    await final_site(s)
    d = s.desk
    book = await d.book(PID, "final")
    for tombola in ("slots", "tables"):
        ranges = book.draw.ticket_list(tombola, 1).ranges
        assert {card for _, _, card in ranges}.isdisjoint({"LEAD-S", "LEAD-T"})
    # Through the desk a seat is always taken before the pools freeze, so the seat check of
    # a hand-drawn ticket is defence in depth: exercise it on a book replayed from the same
    # ledger, with a member seated (hypothetically) only after the pool froze.
    replayed = DrawBook(book.plan)
    ledger = await s.ledger(f"{PID}.final")
    names = {k: s.keys.seed(book.subject, k[0], str(k[1])) for k in book.plan.keys}
    stored = {k: await opened_seed(s.redis, name) for k, name in names.items()}
    pools = {
        c: await d.pool_file(c)
        for c in (r.payload["pool_commitment"] for r in of_kind(ledger, Kind.POOL))
    }
    for rec in ledger:
        replayed.apply(rec, seeds=stored, pools=pools.__getitem__)
    assert replayed.version == book.version
    owners = tickets_of(list(replayed.draw.ticket_list("slots", 1).lines()))
    replayed.draw.seat("S05", "slots", per_board=2)
    with pytest.raises(ManualTicketError, match="belongs to card S05, seated as slots number one"):
        replayed.accept_ticket(("slots", 1), owners["S05"][0], None, DESK, s.clock.now())


# -- proxies --------------------------------------------------------------------------------------


async def test_proxies_registered_by_the_desk_until_the_cutoff(small: Site) -> None:
    s = small
    d = s.desk
    members = [f"C{n:02d}" for n in range(20)]
    s.clock.set(s.at(HW, 7, 59))
    with pytest.raises(RegisterError, match="forms are taken from"):
        await d.register_proxy(PID, HW, "C00", proxy_id="P-C00", name="early", actor=DESK)
    s.clock.set(s.at(HW, 12))
    with pytest.raises(RoleError, match="only the desk records proxies"):
        await d.register_proxy(PID, HW, "C00", proxy_id="P-C00", name="crew", actor=CREW)
    for card in members[:-1]:
        await d.register_proxy(PID, HW, card, proxy_id=f"P-{card}", name=f"for {card}", actor=DESK)
    with pytest.raises(RegisterError, match="may represent only one participant"):
        await d.register_proxy(PID, HW, members[-1], proxy_id="P-C00", name="twice", actor=DESK)
    with pytest.raises(RegisterError, match="already has a proxy"):
        await d.register_proxy(PID, HW, "C00", proxy_id="P-other", name="second", actor=DESK)
    s.clock.set(s.at(HW, 18, 44, 59))  # the last second before the 15-minute cutoff
    await d.register_proxy(
        PID, HW, members[-1], proxy_id=f"P-{members[-1]}", name="late", actor=DESK
    )
    s.clock.set(s.at(HW, 18, 45))
    with pytest.raises(RegisterError, match="15 minutes before the draw"):
        await d.register_proxy(PID, HW, "C99", proxy_id="P-C99", name="too late", actor=DESK)
    book = await d.book(PID, HW)
    assert sorted(book.proxies.proxies) == members
    assert len(of_kind(await s.ledger(), Kind.PROXY)) == 20

    # the round: every member has a proxy, so the first winner's presents
    await d.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    await d.run_round(PID, HW, 1)
    await d.load_prizes(PID, HW, POOLED1, FIVE_PRIZES, DESK)
    s.clock.advance(20)
    book = await d.book(PID, HW)
    winner = book.claims[1].card
    other = next(c for c in members if c != winner)
    length = await s.ledger_len()
    for wrong in ("P-nobody", f"P-{other}"):  # unknown, or another participant's proxy
        with pytest.raises(RegisterError, match=f"{wrong} is not the registered proxy"):
            await d.act(PID, HW, 1, "present", CREW, proxy_id=wrong)
    assert await s.ledger_len() == length
    recs = await d.act(PID, HW, 1, "present", CREW, proxy_id=f"P-{winner}")
    assert recs[0].payload["detail"] == {"presenter": f"P-{winner}"}
    await d.act(PID, HW, 1, "verify", CREW)
    await d.act(PID, HW, 1, "pick_reveal", CREW, reveal=1)
    recs = await d.act(PID, HW, 1, "issue_letter", DESK)
    (letter,) = of_kind(recs, Kind.LETTER)
    assert letter.payload["winner"] == winner  # the letter is in the winner's name
    assert letter.payload["presenter"] == f"P-{winner}"
    assert (await d.letter(letter.payload["number"])) == (PID, HW)
    # replayed by another daemon: the same presenter and letter
    again = await s.new_desk().book(PID, HW)
    assert again.claims[1].presenter == f"P-{winner}"
    claim_letter = again.claims[1].letter
    assert claim_letter is not None and claim_letter.winner == winner


# -- reveals --------------------------------------------------------------------------------------


async def test_each_reveal_is_picked_once(small: Site) -> None:
    s = small
    d = s.desk
    await d.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    await d.run_round(PID, HW, 1)
    s.clock.advance(10)
    for claim_id in (1, 2, 3):
        await d.act(PID, HW, claim_id, "present", CREW)
        await d.act(PID, HW, claim_id, "verify", CREW)
    length = await s.ledger_len()
    with pytest.raises(
        ClaimError, match="no prizes are loaded for pooled round 1; the desk loads them first"
    ):
        await d.act(PID, HW, 1, "pick_reveal", CREW, reveal=1)
    assert await s.ledger_len() == length
    (loaded,) = await d.load_prizes(PID, HW, POOLED1, FIVE_PRIZES, DESK)
    assert loaded.kind == Kind.PRIZES and loaded.actor == "desk-1 (desk)"
    await d.act(PID, HW, 1, "pick_reveal", CREW, reveal=2)
    length = await s.ledger_len()
    winner1 = (await d.book(PID, HW)).claims[1].card
    with pytest.raises(RevealError, match=f"reveal 2 was already picked by card {winner1}"):
        await d.act(PID, HW, 2, "pick_reveal", CREW, reveal=2)
    with pytest.raises(RevealError, match="there is no reveal 6; reveals are 1 to 5"):
        await d.act(PID, HW, 2, "pick_reveal", CREW, reveal=6)
    assert await s.ledger_len() == length
    await d.act(PID, HW, 2, "pick_reveal", CREW, reveal=5)
    with pytest.raises(DrawError, match="reveals are being picked already"):
        await d.load_prizes(PID, HW, POOLED1, FIVE_PRIZES[:3], DESK)
    book = await d.book(PID, HW)
    sealed = book.reveal_sets[POOLED1].sealed
    assert sorted(sealed, key=lambda p: p.value_cents) == list(FIVE_PRIZES)
    assert book.claims[1].prize == sealed[1] and book.claims[2].prize == sealed[4]
    assert book.claims[2].state is DrawClaimState.REVEAL_PICKED
    assert book.claims[3].state is DrawClaimState.VERIFIED
    # the same sealed order after a restart (it follows from the round's seed)
    again = await s.new_desk().book(PID, HW)
    assert again.reveal_sets[POOLED1].sealed == sealed
    assert again.reveal_sets[POOLED1].picked == {2: winner1, 5: book.claims[2].card}


# -- prize letters --------------------------------------------------------------------------------


async def test_prize_letters_redeem_once_and_lapse(small: Site) -> None:
    s = small
    d = s.desk
    await round_one(s)
    letters = []
    for claim_id in (1, 2):
        await to_reveal(d, claim_id, claim_id)
        recs = await d.act(PID, HW, claim_id, "issue_letter", DESK)
        letters.append(of_kind(recs, Kind.LETTER)[0].payload)
    expires = dt.datetime.combine(dt.date(2026, 11, 23), dt.time(0, 0), s.promotion.zone)
    assert [lt["expires_at"] for lt in letters] == [
        expires.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    ] * 2
    assert letters[0]["number"] != letters[1]["number"]
    # letter 1 redeemed the next day, once
    s.clock.set(s.at(HW, 12) + dt.timedelta(days=1))
    await d.act(PID, HW, 1, "redeem", DESK)
    with pytest.raises(TransitionError, match="claim 1 is redeemed; it cannot be redeemed"):
        await d.act(PID, HW, 1, "redeem", DESK)
    # letter 2 brought in after it expired
    s.clock.set(expires + dt.timedelta(seconds=1))
    length = await s.ledger_len()
    with pytest.raises(DeadlineError, match="claim 2 is too late to be redeemed"):
        await d.act(PID, HW, 2, "redeem", DESK)
    assert await s.ledger_len() == length
    # the scheduler: three no-shows from draw night (each redrawn), then the lapse
    assert await d.run_due(PID, HW) == 4
    book = await d.book(PID, HW)
    assert book.claims[1].state is DrawClaimState.REDEEMED
    assert book.claims[2].state is DrawClaimState.LAPSED
    lapse = [r for r in of_kind(await s.ledger(), Kind.CLAIM) if r.payload["action"] == "lapse"]
    assert len(lapse) == 1 and lapse[0].actor == "scheduler (system)"
    assert lapse[0].payload["detail"] == {"letter": letters[1]["number"]}
    with pytest.raises(TransitionError, match="claim 2 is lapsed; it cannot be redeemed"):
        await d.act(PID, HW, 2, "redeem", DESK)


# -- illegal transitions --------------------------------------------------------------------------


async def test_illegal_claim_transitions_are_refused_and_leave_no_record(small: Site) -> None:
    s = small
    d = s.desk
    await round_one(s)
    length = await s.ledger_len()

    async def refused(
        exc: type[ClaimError], match: str, claim_id: int, action: str, actor: Actor
    ) -> None:
        with pytest.raises(exc, match=match):
            await d.act(PID, HW, claim_id, action, actor)
        assert await s.ledger_len() == length  # nothing recorded, the book unchanged

    await refused(TransitionError, "claim 1 is announced; it cannot be verified", 1, "verify", CREW)
    await refused(RoleError, "desk-1 \\(desk\\) may not present; only crew can", 1, "present", DESK)
    await refused(DeadlineError, "cannot be a no-show until after", 1, "no_show", CREW)
    await refused(DeadlineError, "cannot be a no-show until after", 1, "no_show", SCHEDULER)
    await refused(ClaimError, "no claim action 'dance'", 1, "dance", CREW)
    await refused(ClaimError, "has no claim 99", 99, "present", CREW)

    await to_reveal(d, 1, 1)
    length = await s.ledger_len()
    await refused(
        RoleError, "thandi \\(crew\\) may not issue_letter; only desk can", 1, "issue_letter", CREW
    )
    await d.act(PID, HW, 1, "issue_letter", DESK)
    await d.act(PID, HW, 1, "redeem", DESK)
    length = await s.ledger_len()
    await refused(TransitionError, "claim 1 is redeemed; it cannot be redeemed", 1, "redeem", DESK)

    s.clock.advance(90)  # claim 2's 90 seconds are up
    await refused(DeadlineError, "claim 2 is too late to be presented", 2, "present", CREW)
    await d.act(PID, HW, 2, "no_show", CREW)
    length = await s.ledger_len()
    await refused(TransitionError, "claim 2 is no_show; it cannot be verified", 2, "verify", CREW)
    await refused(TransitionError, "claim 2 is no_show; it cannot be presented", 2, "present", CREW)
    book = await d.book(PID, HW)
    assert book.claims[2].state is DrawClaimState.NO_SHOW
    assert len(book.claims) == 6  # the no-show's redraw


# -- exclusions arriving after the pool froze -----------------------------------------------------


async def test_a_member_excluded_after_the_freeze_is_passed_over(small: Site) -> None:
    s = small
    d = s.desk
    await d.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    await d.close_bin(PID, HW)
    rnd = (await d.book(PID, HW)).draw.round(*POOLED1)
    assert rnd.pool is not None
    first = pick_sequence(rnd.pool, rnd.seed, 1)[0].card  # who the stream picks first
    await s.flag_excluded(first)
    records = await d.run_round(PID, HW, 1)
    picks = of_kind(records, Kind.PICK)
    assert len(picks) == 5 and first not in {p.payload["card"] for p in picks}
    assert picks[0].payload["passed_over"][0]["card"] == first
    assert picks[0].payload["passed_over"][0]["reason"] == SkipReason.EXCLUDED
    ledger = await s.ledger()
    (excl,) = of_kind(ledger, Kind.EXCLUSION)
    assert (
        excl.payload["card"] == first
        and excl.payload["note"] == "excluded in the member file after the pool froze"
    )
    assert ledger.index(excl) < ledger.index(of_kind(ledger, Kind.PICK)[0])
    book = await d.book(PID, HW)
    assert first in book.draw.excluded
    assert first not in {c.card for c in book.claims.values()}

    # the same for a redraw: the round's first alternate is excluded before the no-shows
    alternate = pick_sequence(rnd.pool, rnd.seed, 6, barred={first: SkipReason.EXCLUDED})[5].card
    await s.flag_excluded(alternate)
    s.clock.advance(120)
    assert await d.run_due(PID, HW) == 5
    redraws = of_kind(await s.ledger(), Kind.REDRAW)
    assert len(redraws) == 5
    assert alternate not in {r.payload["card"] for r in redraws}
    skipped = {(p["card"], p["reason"]) for r in redraws for p in r.payload["passed_over"]}
    assert (alternate, SkipReason.EXCLUDED) in skipped
    assert len(of_kind(await s.ledger(), Kind.EXCLUSION)) == 2


# -- seed reveal, verification and tampering ------------------------------------------------------


async def test_the_seed_is_revealed_once_the_round_is_settled(small: Site) -> None:
    s = small
    d = s.desk
    await round_one(s)
    for claim_id in (1, 2, 3, 4):
        recs = await to_reveal(d, claim_id, claim_id)
        assert not of_kind(recs, Kind.SEED_REVEAL)
    s.clock.advance(90)
    assert await d.run_due(PID, HW) == 1  # claim 5 a no-show: claim 6 announced
    assert not of_kind(await s.ledger(), Kind.SEED_REVEAL)
    recs = await to_reveal(d, 6, 5)
    (reveal,) = of_kind(recs, Kind.SEED_REVEAL)
    assert reveal.actor == "scheduler (system)"
    stored = (await opened_seed(s.redis, f"{s.keys.base}seed:{HALFWAY}:pooled:1")).hex()
    assert reveal.payload == {"draw_id": HALFWAY, "tombola": "pooled", "round": 1, "seed": stored}
    # rounds 2 and 3 are not drawn: their seeds stay secret
    assert len(of_kind(await s.ledger(), Kind.SEED_REVEAL)) == 1
    chain, verified = await d.verify(HALFWAY)
    assert chain.startswith("chain intact")
    assert list(verified) == [POOLED1]
    assert verified[POOLED1].ok and verified[POOLED1].picks_checked == 6
    assert (await s.new_desk().verify("halfway"))[1] == verified  # by bare draw id too


async def test_verify_detects_a_replaced_pool_file(small: Site) -> None:
    s = small
    await settled_round_one(s)
    (pool_rec,) = [r for r in of_kind(await s.ledger(), Kind.POOL) if r.payload["round"] == 1]
    commitment = pool_rec.payload["pool_commitment"]
    other = Pool.freeze(HALFWAY, "pooled", {f"X{n:02d}": 2 for n in range(20)}, round_no=1)
    await s.redis.set(f"{s.keys.base}poolfile:{commitment}", other.serialise())
    chain, verified = await s.desk.verify(HALFWAY)
    assert chain.startswith("chain intact")  # the ledger itself is untouched
    assert not verified[POOLED1].ok
    (pool_problem,) = [m for m in verified[POOLED1].mismatches if m.what == "pool"]
    assert pool_problem.expected == commitment
    assert pool_problem.recorded == f"hash {other.commitment}"
    with pytest.raises(LedgerError, match=r"ledger record \d+ \(pool\)"):
        await s.new_desk().book(PID, HW)


async def test_verify_detects_a_rewritten_seed_reveal(small: Site) -> None:
    s = small
    await settled_round_one(s)

    def forge(payload: dict[str, Json]) -> None:
        payload["seed"] = "ab" * 32

    def is_reveal(r: AuditRecord) -> bool:
        return r.kind == Kind.SEED_REVEAL

    seq = await rewrite(s, s.audit_list, is_reveal, forge)
    chain, verified = await s.desk.verify(HALFWAY)
    assert chain.startswith(f"chain broken at record {seq}")
    assert "modified" in chain
    assert not verified[POOLED1].ok
    assert any(m.what == "seed" for m in verified[POOLED1].mismatches)
    # the same edit in the draw's ledger stops a restarted daemon
    await rewrite(s, s.desk.audit.ledger_key(HALFWAY), is_reveal, forge)
    with pytest.raises(LedgerError, match=r"\(seed_reveal\) says"):
        await s.new_desk().book(PID, HW)


async def test_verify_names_the_pick_whose_winner_was_swapped(small: Site) -> None:
    s = small
    await settled_round_one(s)
    picks = of_kind(await s.ledger(), Kind.PICK)
    fourth = picks[3].payload["card"]

    def third(r: AuditRecord) -> bool:
        return r.kind == Kind.PICK and r.payload["number"] == 3

    def swap(payload: dict[str, Json]) -> None:
        payload["card"] = fourth

    seq = await rewrite(s, s.audit_list, third, swap)
    chain, verified = await s.desk.verify(HALFWAY)
    assert chain.startswith(f"chain broken at record {seq}")
    result = verified[POOLED1]
    assert not result.ok and result.picks_checked == 2
    problem, *trail = result.mismatches
    assert (problem.what, problem.pick) == ("pick", 3)
    assert [m.what for m in trail] == ["trail"]  # its claim names the card drawn
    assert problem.recorded.endswith(f"card {fourth}")
    assert str(result).startswith("pick 3:")
    await rewrite(s, s.desk.audit.ledger_key(HALFWAY), third, swap)
    with pytest.raises(LedgerError, match=rf"ledger record {seq} \(pick\)"):
        await s.new_desk().book(PID, HW)


# -- two daemons ----------------------------------------------------------------------------------


async def test_two_desks_running_the_same_round_pick_five(small: Site, redis_url: str) -> None:
    s = small
    other_redis = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        other = DrawRunner(
            redis=other_redis,
            keys=s.keys,
            audit=AuditStore(other_redis, s.keys),
            promotions=PromotionStore(other_redis, s.keys, [s.promotion]),
            clock=s.clock,
            seal=SEAL,
            seed_source=seeds(99),  # different secrets: only one set may be kept
        )
        s.clock.set(s.at(HW, 19))
        got = await asyncio.gather(s.desk.run_round(PID, HW, 1), other.run_round(PID, HW, 1))
        ledger = await s.ledger()
        assert len(of_kind(ledger, Kind.PICK)) == 5
        assert len(of_kind(ledger, Kind.COMMITMENT)) == 3
        assert len(of_kind(ledger, Kind.POOL)) == 3
        assert sum(len(of_kind(recs, Kind.PICK)) for recs in got) == 5
        assert len((await s.desk.book(PID, HW)).claims) == 5
        assert [c.card for c in (await other.book(PID, HW)).claims.values()] == [
            c.card for c in (await s.desk.book(PID, HW)).claims.values()
        ]
        assert (await s.desk.audit.verify()).ok
        # and the no-shows, run by both schedulers at once: one redraw each
        s.clock.advance(120)
        await asyncio.gather(s.desk.run_due(PID, HW), other.run_due(PID, HW))
        ledger = await s.ledger()
        assert len(of_kind(ledger, Kind.REDRAW)) == 5
        no_shows = [r for r in of_kind(ledger, Kind.CLAIM) if r.payload["action"] == "no_show"]
        assert len(no_shows) == 5
    finally:
        await other_redis.aclose()


async def test_a_draw_from_commitment_to_letter(desk: tuple[DrawRunner, ManualClock]) -> None:
    await a_draw_from_commitment_to_letter(desk)


def test_a_promotions_prizes_are_labelled_as_people_read_them() -> None:
    """Issue 17 (defect 2): the prize labels a draw's plan gives its rounds (and so the
    signage, the desk, the PA texts and the letters) are amounts, never internal ids."""
    demo = load_promotion(PROJECT / "promotions" / "demo" / "demo-golden-evening.toml")
    labels = [
        p.label for d in demo.draw_list for r in DrawPlan.of(demo, d).rounds for p in r.prizes
    ]
    assert labels and all(re.fullmatch(r"R\d{1,3}(,\d{3})*(\.\d\d)?", label) for label in labels)
    assert "R5,000" in labels
