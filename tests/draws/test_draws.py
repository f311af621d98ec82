"""Draw rounds: once per draw, tombolas, seats, exclusions, redraws, manual tombolas."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from bonusd.draws.claims import Prize, RevealError
from bonusd.draws.fairness import SkipReason, pick_sequence
from bonusd.draws.rounds import (
    DrawError,
    DrawRounds,
    ManualTicketError,
    RoundRecord,
    verify_draw,
)


def seeds() -> itertools.count[int]:
    return itertools.count(1)


def draw(draw_id: str = "gh-halfway") -> DrawRounds:
    counter = seeds()
    return DrawRounds(draw_id, seed_source=lambda n: next(counter).to_bytes(n, "big"))


def entries(first: int, last: int, *, tickets: int = 0) -> dict[str, int]:
    return {f"M{i:03d}": tickets or 1 + i % 4 for i in range(first, last)}


def record(d: DrawRounds, tombola: str, round_no: int) -> RoundRecord:
    rnd = d.round(tombola, round_no)
    assert rnd.pool is not None
    seed = d.reveal_seed(tombola, round_no)
    return RoundRecord(rnd.pool, seed, rnd.seed_commitment, rnd.pool.commitment, tuple(rnd.picks))


def test_halfway_three_rounds_of_five_nobody_wins_twice() -> None:
    d = draw()
    pool = entries(0, 40)
    for r in (1, 2, 3):
        d.open_round("main", r, 5)
    winners: list[str] = []
    for r in (1, 2, 3):
        d.freeze("main", r, pool)
        winners += [p.card for p in d.draw("main", r)]
    assert len(winners) == 15
    assert len(set(winners)) == 15
    # Later rounds pass earlier winners over, with the reason recorded.
    skipped = [s for r in (2, 3) for p in d.round("main", r).picks for s in p.passed_over]
    assert all(s.reason is SkipReason.ALREADY_PICKED and s.card in winners for s in skipped)
    result = verify_draw([record(d, "main", r) for r in (1, 2, 3)], d.order)
    assert all(v.ok for v in result.values()), result


def test_a_draw_can_keep_its_picks_without_the_tickets_passed_over() -> None:
    """What the daemon's draw book does: each pick comes with the tickets passed over
    before it (they go into its record), the round keeps only the pick."""
    counter = seeds()
    lean = DrawRounds(
        "gh-halfway",
        seed_source=lambda n: next(counter).to_bytes(n, "big"),
        keep_passed_over=False,
    )
    full = draw()
    returned = []
    for d in (full, lean):
        d.open_round("main", 1, 30)
        d.freeze("main", 1, entries(0, 40))
        returned.append(d.draw("main", 1) + [d.redraw("main", 1) for _ in range(9)])
    assert returned[0] == returned[1]
    assert sum(len(p.passed_over) for p in returned[1]) > 100
    kept = lean.round("main", 1).picks
    assert [dataclasses.replace(p, passed_over=()) for p in returned[1]] == kept
    assert full.round("main", 1).picks == returned[0]


def test_seed_is_committed_before_the_pool_and_kept_secret_until_close() -> None:
    d = draw()
    commitment = d.open_round("main", 1, 5)
    assert len(commitment) == 64
    with pytest.raises(DrawError, match="secret"):
        d.reveal_seed("main", 1)
    with pytest.raises(DrawError, match="no frozen pool"):
        d.draw("main", 1)
    d.freeze("main", 1, entries(0, 10))
    with pytest.raises(DrawError, match="already frozen"):
        d.freeze("main", 1, entries(0, 10))
    with pytest.raises(DrawError, match="already open"):
        d.open_round("main", 1, 5)
    with pytest.raises(DrawError, match="no main round 2"):
        d.freeze("main", 2, {})


def test_redraw_is_the_next_pick_of_the_fixed_stream() -> None:
    d = draw()
    d.open_round("main", 1, 5)
    pool = d.freeze("main", 1, entries(0, 30))
    with pytest.raises(DrawError, match="not been drawn"):
        d.redraw("main", 1)
    d.draw("main", 1)
    with pytest.raises(DrawError, match="already drawn"):
        d.draw("main", 1)
    alternate = d.redraw("main", 1)
    assert alternate == pick_sequence(pool, d.reveal_seed("main", 1), 6)[5]
    assert alternate.number == 6


def test_final_separate_tombolas_and_seats() -> None:
    d = draw("gh-final")
    d.seat("TOP-SLOTS", "slots")
    d.seat("TOP-TABLES", "tables")
    d.open_round("slots", 1, 5)
    d.open_round("tables", 1, 3)
    both = entries(20, 30)  # play on both sides: in both tombolas
    slots = d.freeze("slots", 1, entries(0, 30) | {"TOP-SLOTS": 50, "TOP-TABLES": 5})
    tables = d.freeze("tables", 1, both | entries(30, 45) | {"TOP-TABLES": 80})
    assert "TOP-SLOTS" not in slots.cards  # seats are out of the tombolas
    assert "TOP-TABLES" not in tables.cards
    s = [p.card for p in d.draw("slots", 1)]
    t = [p.card for p in d.draw("tables", 1)]
    assert len(s) == 5
    assert len(t) == 3
    assert set(s) <= set(slots.cards)
    assert set(t) <= set(tables.cards)  # only tables tickets in the tables tombola
    assert not set(s) & set(t)
    assert len(set(s) | set(t) | set(d.seats)) == 10
    with pytest.raises(DrawError, match="seats are taken"):
        d.seat("M001", "slots")
    with pytest.raises(DrawError, match="already won"):
        d.seat(s[0], "other")
    result = verify_draw(
        [record(d, "slots", 1), record(d, "tables", 1)], d.order, seated=d.seats.keys()
    )
    assert all(v.ok for v in result.values()), result


def test_a_member_in_both_tombolas_is_passed_over_in_the_second() -> None:
    d = draw("gh-final")
    d.open_round("slots", 1, 1)
    d.open_round("tables", 1, 3)
    d.freeze("slots", 1, {"BOTH": 1})
    d.freeze("tables", 1, {"BOTH": 100, "A": 1, "B": 1, "C": 1})
    assert d.draw("slots", 1)[0].card == "BOTH"
    picks = d.draw("tables", 1)
    assert "BOTH" not in {p.card for p in picks}
    assert any(s.card == "BOTH" for p in picks for s in p.passed_over)


def test_exclusion_before_and_after_the_freeze() -> None:
    d = draw()
    d.exclude("M001")
    d.open_round("main", 1, 5)
    pool = d.freeze("main", 1, entries(0, 12, tickets=1))
    assert "M001" not in pool.cards  # excluded before the freeze: not in the pool
    plain = pick_sequence(pool, d.reveal_seed("main", 1), 12)
    late = plain[0].card
    d.exclude(late)  # arrives after the freeze: passed over at pick time
    picks = d.draw("main", 1)
    assert late not in {p.card for p in picks}
    assert any(s.card == late and s.reason is SkipReason.EXCLUDED for s in picks[0].passed_over)
    with pytest.raises(DrawError, match="excluded"):
        d.seat("M001", "slots")
    result = verify_draw([record(d, "main", 1)], d.order, excluded=d.excluded)
    assert all(v.ok for v in result.values())


def test_pool_running_out_draws_fewer_and_refuses_a_redraw() -> None:
    d = draw()
    d.open_round("main", 1, 5)
    d.freeze("main", 1, {"A": 1, "B": 2})
    assert len(d.draw("main", 1)) == 2
    with pytest.raises(DrawError, match="no eligible member left"):
        d.redraw("main", 1)


def test_verify_draw_catches_a_winner_picked_again_in_another_round() -> None:
    d = draw()
    for r in (1, 2):
        d.open_round("main", r, 3)
        d.freeze("main", r, entries(0, 20))
        d.draw("main", r)
    one, two = record(d, "main", 1), record(d, "main", 2)
    forged = dataclasses.replace(two.picks[0], card=one.picks[0].card)
    two = dataclasses.replace(two, picks=(forged, *two.picks[1:]))
    result = verify_draw([one, two], d.order)
    assert result[("main", 1)].ok
    assert not result[("main", 2)].ok
    assert result[("main", 2)].mismatches[0].pick == 1


def test_manual_round_exports_tickets_and_checks_hand_drawn_numbers() -> None:
    d = draw("gh-final")
    d.seat("SEATED", "slots")
    d.open_round("slots", 1, 5, manual=True)
    pool = d.freeze("slots", 1, {"A": 2, "B": 3, "C": 1, "SEATED": 4})
    listing = d.ticket_list("slots", 1)
    lines = list(listing.lines())
    assert lines[0].startswith("# draw gh-final tombola slots round 1 tickets 6 pool ")
    assert lines[1:] == ["1\tA", "2\tA", "3\tB", "4\tB", "5\tB", "6\tC"]
    with pytest.raises(DrawError, match="manual"):
        d.draw("slots", 1)
    assert d.check_ticket("slots", 1, 4) == "B"
    pick = d.accept_ticket("slots", 1, 4, printed_pool=pool.commitment)
    assert (pick.number, pick.card) == (1, "B")
    with pytest.raises(ManualTicketError, match="ticket 5 belongs to card B, already picked"):
        d.accept_ticket("slots", 1, 5)
    with pytest.raises(ManualTicketError, match="does not exist"):
        d.check_ticket("slots", 1, 7)
    with pytest.raises(ManualTicketError, match="does not exist"):
        d.check_ticket("slots", 1, 0)
    with pytest.raises(ManualTicketError, match="does not belong to this draw"):
        d.check_ticket("slots", 1, 1, printed_pool="0" * 64)
    d.exclude("C")
    with pytest.raises(ManualTicketError, match="card C, who is excluded") as err:
        d.check_ticket("slots", 1, 6)
    assert err.value.number == 6
    assert d.is_picked("B")


def test_manual_seated_ticket_is_refused() -> None:
    d = draw("gh-final")
    d.open_round("slots", 1, 5, manual=True)
    d.freeze("slots", 1, {"A": 1, "LATE-SEAT": 1})
    d.seat("LATE-SEAT", "slots")
    with pytest.raises(ManualTicketError, match="seated as slots number one"):
        d.check_ticket("slots", 1, 2)


def test_reveals_are_sealed_by_the_round_seed_and_picked_once() -> None:
    d = draw()
    d.open_round("main", 1, 5)
    prizes = [Prize(f"R{v:,}", v * 100) for v in (1_000, 2_000, 5_000, 10_000, 25_000)]
    reveals = d.reveals("main", 1, prizes)
    assert sorted(reveals.sealed, key=lambda p: p.value_cents) == prizes
    assert reveals.sealed == d.reveals("main", 1, prizes).sealed
    prize = reveals.pick(3, "M001")
    assert prize == reveals.sealed[2]
    with pytest.raises(RevealError, match="already picked by card M001"):
        reveals.pick(3, "M002")
    with pytest.raises(RevealError, match="no reveal 6"):
        reveals.pick(6, "M002")


def test_verify_draw_needs_every_pick_in_the_draw_order() -> None:
    d = draw()
    d.open_round("main", 1, 3)
    d.freeze("main", 1, entries(0, 20))
    d.draw("main", 1)
    result = verify_draw([record(d, "main", 1)], d.order[:2])
    (bad,) = result[("main", 1)].mismatches
    assert (bad.pick, bad.recorded) == (3, "absent")
