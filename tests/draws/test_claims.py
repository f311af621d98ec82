"""The draw winner's claim, proxies and prize letters: every transition checked."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from bonusd.draws.claims import (
    Actor,
    ClaimError,
    ClaimRole,
    DeadlineError,
    DrawClaim,
    DrawClaimState,
    LetterBook,
    Prize,
    ProxyRegister,
    RegisterError,
    RoleError,
    Timer,
    TransitionError,
    due,
)
from bonusd.draws.rounds import RevealSet

SAST = dt.timezone(dt.timedelta(hours=2))
DRAW_AT = dt.datetime(2026, 11, 7, 19, 0, tzinfo=SAST)
CREW = Actor("thandi", ClaimRole.CREW)
DESK = Actor("pieter", ClaimRole.DESK)
SYSTEM = Actor("scheduler", ClaimRole.SYSTEM)
PRIZES = [Prize("R5,000", 500_000), Prize("R10,000", 1_000_000), Prize("R20,000", 2_000_000)]
S = DrawClaimState


def at(seconds: float) -> dt.datetime:
    return DRAW_AT + dt.timedelta(seconds=seconds)


def claim(claim_id: int = 7, card: str = "C1234") -> DrawClaim:
    return DrawClaim(
        claim_id, draw_id="gh-halfway", card=card, announced_at=at(0), actor=SYSTEM, draw_at=DRAW_AT
    )


def reveals() -> RevealSet:
    return RevealSet("gh-halfway", "main-1", PRIZES, bytes(32))


def walk_to(state: DrawClaimState, book: LetterBook | None = None) -> DrawClaim:
    """A claim brought to `state` by the legal path."""
    c, book = claim(), book or LetterBook("GH")
    if state is S.NO_SHOW:
        c.no_show(SYSTEM, at(91))
        return c
    steps: list[tuple[DrawClaimState, Callable[[], object]]] = [
        (S.PRESENTED, lambda: c.present(CREW, at(30))),
        (S.VERIFIED, lambda: c.verify(CREW, at(40), id_ok=True, receipt_ok=True)),
        (S.REVEAL_PICKED, lambda: c.pick_reveal(CREW, at(50), reveals(), 2)),
        (S.LETTER_ISSUED, lambda: c.issue_letter(DESK, at(600), book)),
        (S.REDEEMED, lambda: c.redeem(DESK, at(86_400))),
    ]
    for reached, step in steps:
        if c.state is state:
            break
        if state is S.LAPSED and reached is S.REDEEMED:
            c.lapse(SYSTEM, DRAW_AT + dt.timedelta(days=16))
            break
        step()
    assert c.state is state
    return c


def test_the_happy_path_records_actor_and_time() -> None:
    book = LetterBook("GH")
    c = walk_to(S.REDEEMED, book)
    assert [t.after for t in c.history] == [
        "announced", "presented", "verified", "reveal_picked", "letter_issued", "redeemed",
    ]  # fmt: skip
    assert c.history[1].actor == CREW
    assert c.history[4].actor == DESK
    assert c.history[1].at == at(30)
    assert c.history[3].detail["reveal"] == "2"
    assert c.prize == reveals().sealed[1]
    assert c.letter is not None
    assert c.letter.number == "GH-000001"
    assert c.letter.winner == "C1234"
    assert c.letter.expires_at == DRAW_AT + dt.timedelta(days=15)


ACTIONS: dict[str, Callable[[DrawClaim], object]] = {
    "present": lambda c: c.present(CREW, at(100_000_000)),
    "verify": lambda c: c.verify(CREW, at(100_000_000), id_ok=True, receipt_ok=True),
    "pick_reveal": lambda c: c.pick_reveal(CREW, at(100_000_000), reveals(), 1),
    "issue_letter": lambda c: c.issue_letter(DESK, at(100_000_000), LetterBook("X")),
    "redeem": lambda c: c.redeem(DESK, at(100_000_000)),
    "lapse": lambda c: c.lapse(DESK, at(100_000_000)),
    "no_show": lambda c: c.no_show(CREW, at(100_000_000)),
}


@pytest.mark.parametrize("state", list(S))
def test_every_illegal_transition_raises(state: DrawClaimState) -> None:
    illegal = [a for a, rule in DrawClaim.RULES.items() if state not in rule.starts]
    assert illegal
    for action in illegal:
        c = walk_to(state)
        with pytest.raises(TransitionError, match=f"^claim 7 is {state}; it cannot be "):
            ACTIONS[action](c)
        assert c.state is state  # nothing changed


def test_operator_message_reads_well() -> None:
    c = walk_to(S.NO_SHOW)
    with pytest.raises(ClaimError, match=r"^claim 7 is no_show; it cannot be verified$"):
        c.verify(CREW, at(200), id_ok=True, receipt_ok=True)


def test_roles_are_checked() -> None:
    c = claim()
    with pytest.raises(RoleError, match="pieter \\(desk\\) may not present; only crew can"):
        c.present(DESK, at(10))
    walk = walk_to(S.REVEAL_PICKED)
    with pytest.raises(RoleError, match="only desk"):
        walk.issue_letter(CREW, at(600), LetterBook("GH"))
    assert walk.state is S.REVEAL_PICKED


def test_present_within_90_seconds_and_no_show_only_after() -> None:
    c = claim()
    assert c.deadline == at(90)
    assert due(at(90), [c]) == []
    assert due(at(91), [c]) == [Timer("claim 7", "no_show", at(90))]
    with pytest.raises(DeadlineError, match=r"^claim 7 cannot be a no-show until after 2026-"):
        c.no_show(CREW, at(89))
    late = claim()
    with pytest.raises(DeadlineError, match=r"^claim 7 is too late to be presented: 1 s after"):
        late.present(CREW, at(91))
    assert late.present(CREW, at(90)).after == "presented"  # the 90th second still counts
    c.no_show(SYSTEM, at(91))
    assert c.state is S.NO_SHOW
    assert due(at(1000), [c]) == []


def test_verification_needs_id_and_receipt() -> None:
    c = walk_to(S.PRESENTED)
    with pytest.raises(ClaimError, match="cannot be verified without receipt"):
        c.verify(CREW, at(40), id_ok=True, receipt_ok=False)
    with pytest.raises(ClaimError, match="without ID and receipt"):
        c.verify(CREW, at(40), id_ok=False, receipt_ok=False)
    assert c.state is S.PRESENTED


def test_time_cannot_go_backwards_and_must_be_aware() -> None:
    c = walk_to(S.PRESENTED)
    with pytest.raises(DeadlineError, match="before its last step"):
        c.verify(CREW, at(10), id_ok=True, receipt_ok=True)
    with pytest.raises(ValueError, match="timezone-aware"):
        c.verify(CREW, dt.datetime(2026, 11, 7, 19, 1), id_ok=True, receipt_ok=True)


def test_letter_lapses_after_15_days_and_is_redeemed_once() -> None:
    book = LetterBook("GH")
    c = walk_to(S.LETTER_ISSUED, book)
    expiry = DRAW_AT + dt.timedelta(days=15)
    assert due(expiry, [c]) == []
    assert due(expiry + dt.timedelta(seconds=1), [c]) == [Timer("claim 7", "lapse", expiry)]
    with pytest.raises(DeadlineError, match="cannot be lapsed until after"):
        c.lapse(SYSTEM, expiry)
    with pytest.raises(DeadlineError, match="too late to be redeemed"):
        c.redeem(DESK, expiry + dt.timedelta(seconds=1))
    c.lapse(SYSTEM, expiry + dt.timedelta(seconds=1))
    assert c.state is S.LAPSED
    paid = walk_to(S.REDEEMED)
    with pytest.raises(TransitionError, match="claim 7 is redeemed; it cannot be redeemed"):
        paid.redeem(DESK, at(90_000))


def test_letter_numbers_are_unique() -> None:
    book = LetterBook("GH")
    numbers = set()
    for i in range(5):
        c = DrawClaim(i, draw_id="d", card=f"C{i}", announced_at=at(0), actor=SYSTEM)
        c.present(CREW, at(10))
        c.verify(CREW, at(20), id_ok=True, receipt_ok=True)
        c.pick_reveal(CREW, at(30), reveals(), 1)
        numbers.add(c.issue_letter(DESK, at(40), book).number)
    assert len(numbers) == 5
    assert set(book.letters) == numbers


def register() -> ProxyRegister:
    opens = DRAW_AT.replace(hour=8)
    return ProxyRegister("gh-halfway", opens_at=opens, draw_at=DRAW_AT)


def test_proxy_register_rules_and_cut_off() -> None:
    reg = register()
    with pytest.raises(RegisterError, match="forms are taken from"):
        reg.register("C1", "ID-1", DESK, DRAW_AT.replace(hour=7, minute=59))
    with pytest.raises(RegisterError, match="15 minutes before the draw"):
        reg.register("C1", "ID-1", DESK, DRAW_AT - dt.timedelta(minutes=15))
    with pytest.raises(RoleError, match="only the desk"):
        reg.register("C1", "ID-1", CREW, DRAW_AT - dt.timedelta(hours=1))
    proxy = reg.register("C1", "ID-1", DESK, DRAW_AT - dt.timedelta(minutes=16), name="Sipho")
    assert proxy.registered_by == DESK
    with pytest.raises(RegisterError, match="already has a proxy"):
        reg.register("C1", "ID-2", DESK, DRAW_AT - dt.timedelta(hours=1))
    with pytest.raises(RegisterError, match="may represent only one participant"):
        reg.register("C2", "ID-1", DESK, DRAW_AT - dt.timedelta(hours=1))
    assert reg.proxy_for("C1") == proxy
    assert reg.proxy_for("C2") is None


def test_proxy_presents_but_the_letter_is_in_the_winners_name() -> None:
    reg = register()
    reg.register("C1234", "ID-77", DESK, DRAW_AT - dt.timedelta(hours=2))
    c = claim()
    with pytest.raises(RegisterError, match="ID-99 is not the registered proxy of card C1234"):
        c.present(CREW, at(20), proxy_id="ID-99", proxies=reg)
    with pytest.raises(RegisterError):
        c.present(CREW, at(20), proxy_id="ID-77")  # no register given
    c.present(CREW, at(20), proxy_id="ID-77", proxies=reg)
    assert c.presenter == "ID-77"
    assert c.history[-1].detail["presenter"] == "ID-77"
    c.verify(CREW, at(30), id_ok=True, receipt_ok=True)
    c.pick_reveal(CREW, at(40), reveals(), 3)
    letter = c.issue_letter(DESK, at(50), LetterBook("GH"))
    assert letter.winner == "C1234"


def test_due_lists_expired_timers_oldest_first() -> None:
    first, second = (
        claim(1),
        DrawClaim(2, draw_id="d", card="C2", announced_at=at(30), actor=SYSTEM),
    )
    letter = walk_to(S.LETTER_ISSUED)
    timers = due(at(200), [second, letter, first])
    assert [t.subject for t in timers] == ["claim 1", "claim 2"]
