"""What is said about winners, with no services: the PA text of each winner announcement
and claim outcome (Golden Horse cl. 16), the SMS texts (Festa Fortuna cl. 5) and the
printed prize letter, all from records made by the real draw book and claim machines."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest

from bonusd.audit.chain import AuditLog, AuditRecord, Entry, Kind
from bonusd.draws.book import SCHEDULER, DrawBook, DrawPlan, actor_text
from bonusd.draws.claims import Actor, ClaimRole, Prize
from bonusd.draws.evidence import claim_payload
from bonusd.errors import NotFoundError
from bonusd.notices.announcements import (
    Moment,
    Occasion,
    WinnerEvent,
    announcements,
    claim_event,
    occasion_of,
    pa_text,
    winner_events,
)
from bonusd.notices.letterprint import LetterFacts, letter_page
from bonusd.notices.smstext import SMS_MOMENTS, sms_notice
from bonusd.promotions import Promotion, load_promotion
from bonusd.raps.rules import DeclineRegister, RapsClaim
from bonusd.registry.masking import mask_card

PROMOTIONS = Path(__file__).parents[2] / "promotions"
GH = load_promotion(PROMOTIONS / "golden-horse-mega-points-chase.toml")
FESTA = load_promotion(PROMOTIONS / "montecasino-festa-fortuna.toml")
CREW = Actor("thandi", ClaimRole.CREW)
DESK = Actor("desk-1", ClaimRole.DESK)
CARDS = [f"60010091{n:05d}" for n in range(12)]
NAMES = {c: f"Member {n} Mokoena" for n, c in enumerate(CARDS)}
PRIZES = tuple(Prize(f"R{v:,}.00", v * 100) for v in (5000, 1000, 2000, 500, 10000))


def _at(promotion: Promotion, day: dt.date, h: int, m: int = 0, s: int = 0) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(h, m, s), promotion.zone)


class Ledger:
    """A draw book and its records, committed to a pure audit log."""

    def __init__(self, book: DrawBook) -> None:
        self.book, self.log = book, AuditLog()

    def commit(self, entries: list[Entry]) -> list[AuditRecord]:
        return [
            self.log.append(at=e.at, actor=e.actor, kind=e.kind, payload=e.payload) for e in entries
        ]


@pytest.fixture
def halfway() -> Ledger:
    """Golden Horse halfway, round 1 drawn at 19:00; claim 1 through to its letter and
    redemption, claim 2 a no-show redrawn at 19:02."""
    plan = DrawPlan.of(GH, GH.draw("halfway"))
    led = Ledger(DrawBook(plan))
    book, t0 = led.book, plan.rounds[0].at
    for n, key in enumerate(plan.keys):
        led.commit(book.commit_round(key, bytes([n + 1]) * 32, t0 - dt.timedelta(hours=8)))
    entries, _ = book.close_bin({"pooled": dict.fromkeys(CARDS, 3)}, [], SCHEDULER, t0)
    led.commit(entries)
    led.commit(book.run_round(1, SCHEDULER, t0))
    led.commit(book.load_prizes(("pooled", 1), PRIZES, DESK, t0))
    t = t0 + dt.timedelta(seconds=30)
    led.commit(book.act(1, "present", CREW, t))
    led.commit(book.act(1, "verify", CREW, t))
    led.commit(book.act(1, "pick_reveal", CREW, t, reveal=1))
    led.commit(book.act(2, "no_show", SCHEDULER, t0 + dt.timedelta(minutes=2)))
    led.commit(book.act(1, "issue_letter", DESK, t + dt.timedelta(minutes=5)))
    led.commit(book.act(1, "redeem", DESK, t + dt.timedelta(days=2)))
    return led


def test_every_draw_outcome_has_its_pa_text(halfway: Ledger) -> None:
    occasion = occasion_of(GH, "golden-horse-mega-points-chase.halfway")
    book = halfway.book
    said = announcements(halfway.log.records, occasion, NAMES)
    moments = [a.moment for a in said]
    assert moments[:5] == [Moment.DRAWN] * 5
    assert moments[5:] == [
        Moment.PRESENTED,
        Moment.VERIFIED,
        Moment.PRIZE,
        Moment.NO_SHOW,
        Moment.DRAWN,
    ]  # letters, redemptions and lapses are not announced
    first = book.claims[1].card
    drawn = said[0].text
    assert drawn.startswith("Ladies and gentlemen, the Mega Points Chase Halfway draw, round 1")
    assert f"the winner is {NAMES[first]}, card ending {first[-4:]}!" in drawn
    assert "come to the draw area" in drawn  # the halfway draw names no place
    assert "within 90 seconds, by 19:01:30" in drawn
    assert first not in drawn  # the full card number is never said
    assert (
        said[5].text
        == f"{NAMES[first]}, card ending {first[-4:]} has presented at the draw area. Thank you!"
    )
    given = NAMES[first].split()[0]  # the full name is said once, then the given name
    assert said[6].text.endswith(f"is verified. {given}, please pick your reveal.")
    assert drawn.count(NAMES[first]) == 1 and f"! {given}, please come" in drawn
    assert said[7].text == (
        f"Congratulations to {NAMES[first]}, card ending {first[-4:]}, who wins R5,000 in "
        "the Mega Points Chase Halfway draw!"
    )
    no_show = book.claims[2].card
    assert said[8].text.startswith(f"{NAMES[no_show]}, card ending {no_show[-4:]} did not present")
    redraw = said[9]
    assert "round 1: a redraw: the new winner is" in redraw.text
    assert "by 19:03:30" in redraw.text
    cards = {c.card for c in book.claims.values()}
    assert {a.card for a in said} <= {mask_card(c) for c in cards}  # masked, never the full number


def test_a_named_place_and_an_unknown_name_and_a_short_card() -> None:
    launch = occasion_of(GH, "golden-horse-mega-points-chase.launch")
    assert launch.place == "main stage"
    at = _at(GH, dt.date(2026, 10, 3), 19)
    event = WinnerEvent(1, at, Moment.DRAWN, "x.launch", "claim 1", "6001009123456", False, round=1)
    text = pa_text(event, launch, "")
    assert text is not None
    assert "the winner is card ending 3456!" in text
    assert "card ending 3456! Holder of that card, please come to main stage" in text
    short = pa_text(replace(event, card="1001"), launch, "")
    assert short is not None
    assert "1001" not in short  # a card of four characters shows none of them
    assert mask_card("1001") == "****"
    assert mask_card("6001009123456") == "****3456"


def test_claim_events_from_a_book_say_what_the_records_say(halfway: Ledger) -> None:
    occasion = occasion_of(GH, "golden-horse-mega-points-chase.halfway")
    book = halfway.book
    from_records = {e.claim: e for e in winner_events(halfway.log.records)}
    open_claim = book.claims[3]
    event = claim_event(book.subject, open_claim, tombola="pooled", round_no=1)
    assert event is not None
    assert event.moment is Moment.DRAWN
    recorded = from_records[open_claim.subject]
    assert pa_text(event, occasion, "Z") == pa_text(recorded, occasion, "Z")
    redeemed = claim_event(book.subject, book.claims[1])
    assert redeemed is not None
    assert redeemed.moment is Moment.REDEEMED
    assert pa_text(redeemed, occasion, "Z") is None


def test_draw_texts_carry_place_time_and_letter_but_no_name_or_full_card(halfway: Ledger) -> None:
    occasion = occasion_of(GH, "golden-horse-mega-points-chase.halfway")
    events = winner_events(halfway.log.records)
    texted = [(e, sms_notice(e, occasion)) for e in events if e.moment in SMS_MOMENTS]
    assert [e.moment for e, _ in texted] == [Moment.DRAWN] * 6 + [Moment.LETTER]
    for event, notice in texted:
        assert notice is not None
        assert event.card not in notice.text
        assert mask_card(event.card) in notice.text
        assert NAMES[event.card] not in notice.text
        assert notice.text.startswith("Golden Horse Mega Points Chase: ")
    drawn_event, drawn = texted[0]
    assert drawn is not None
    assert "at the draw area by 19:01:30 (90 seconds" in drawn.text
    assert drawn.expires_at == drawn_event.deadline
    letter_event, letter = texted[-1]
    assert letter is not None
    number = halfway.book.claims[1].letter.number  # type: ignore[union-attr]
    assert f"prize letter {number} for card ****{letter_event.card[-4:]} (R5,000)" in letter.text
    # 15 days after the 7 November draw, to the end of that day (cl. 14)
    assert "Redeem it at the Cash Desk by 22 November 2026" in letter.text
    assert letter.expires_at == _at(GH, dt.date(2026, 11, 23), 0)
    no_text = [e for e in events if e.moment not in SMS_MOMENTS]
    assert all(sms_notice(e, occasion) is None for e in no_text)


# -- RAPS ------------------------------------------------------------------------------------
SESSION = "jackpot-2025-10-04"
J1 = f"montecasino-festa-fortuna.{SESSION}.j1"


def _raps_records() -> tuple[list[AuditRecord], dict[str, str]]:
    """Jackpot 1: claim 1 not at the device, called, reselected at the deadline; claim 2
    (the reselection) verified at the device; claim 3 called and kept by the register;
    claim 4 presented but not the card's owner."""
    t = _at(FESTA, dt.date(2025, 10, 4), 14, 30)
    log = AuditLog()
    register = DeclineRegister(SESSION, opens_at=t - dt.timedelta(hours=6), starts_at=t)
    register.sign(CARDS[3], DESK, t - dt.timedelta(hours=1))

    def add(kind: Kind, payload: dict[str, object], actor: Actor, at: dt.datetime) -> None:
        log.append(at=at, actor=actor_text(actor), kind=kind, payload=payload)

    def alert(n: int, card: str, at: dt.datetime) -> RapsClaim:
        claim = RapsClaim(
            n, jackpot_id=J1, card=card, device=f"EGM-04{n}", area="main", bank="B3",
            alerted_at=at, actor=SCHEDULER,
        )  # fmt: skip
        detail = {"device": claim.device, "area": "main", "bank": "B3", "seat": "", "pick": str(n)}
        add(
            Kind.CLAIM,
            claim_payload(J1, card, replace(claim.history[0], detail=detail)),
            SCHEDULER,
            at,
        )
        return claim

    def move(claim: RapsClaim, action: str, actor: Actor, at: dt.datetime) -> None:
        if action in ("reselect", "declined_register"):
            step = getattr(claim, action)(actor, at, register)
        else:
            step = getattr(claim, action)(actor, at)
        add(Kind.CLAIM, claim_payload(J1, claim.card, step), actor, at)

    one = alert(1, CARDS[1], t)
    for action, s in (("crew_arrived", 60), ("not_at_device", 70), ("announce", 80)):
        move(one, action, CREW, t + dt.timedelta(seconds=s))
    move(one, "reselect", SCHEDULER, t + dt.timedelta(seconds=171))
    add(Kind.REDRAW, {"draw_id": J1, "card": CARDS[2]}, SCHEDULER, t + dt.timedelta(seconds=171))
    two = alert(2, CARDS[2], t + dt.timedelta(seconds=171))
    move(two, "crew_arrived", CREW, t + dt.timedelta(seconds=200))
    move(two, "verify_at_device", CREW, t + dt.timedelta(seconds=210))
    three = alert(3, CARDS[3], t + dt.timedelta(seconds=300))
    for action, s in (("crew_arrived", 310), ("not_at_device", 320), ("announce", 330)):
        move(three, action, CREW, t + dt.timedelta(seconds=s))
    move(three, "declined_register", SCHEDULER, t + dt.timedelta(seconds=421))
    four = alert(4, CARDS[4], t + dt.timedelta(seconds=500))
    for action, s in (("crew_arrived", 510), ("not_at_device", 520), ("announce", 530)):
        move(four, action, CREW, t + dt.timedelta(seconds=s))
    move(four, "present", CREW, t + dt.timedelta(seconds=560))
    move(four, "not_owner", CREW, t + dt.timedelta(seconds=565))
    move(four, "reselect", CREW, t + dt.timedelta(seconds=565))
    return log.records, NAMES


def test_every_raps_outcome_has_its_pa_text() -> None:
    records, names = _raps_records()
    occasion = occasion_of(FESTA, J1)
    assert (occasion.raps, occasion.place, occasion.name) == (
        True,
        "the place of draw",
        "Weekly Bonus Jackpot",
    )
    said = announcements(records, occasion, names)
    assert [a.moment for a in said] == [
        Moment.CALLED,
        Moment.RESELECTED,
        Moment.WON,
        Moment.CALLED,
        Moment.DECLINED_REGISTER,
        Moment.CALLED,
        Moment.PRESENTED,
        Moment.RESELECTED,
    ]  # the crew's own steps at the device are not announced
    one, four = CARDS[1], CARDS[4]
    assert said[0].text == (
        "Ladies and gentlemen, the Festa Fortuna! Weekly Bonus Jackpot: "
        f"{names[one]}, card ending {one[-4:]}, selected at EGM-041, please present yourself "
        "at the place of draw within 90 seconds, by 14:32:50, or the jackpot will be reselected."
    )
    assert said[1].text.endswith("is reselected from the same pool.")
    assert said[2].text.startswith(f"Congratulations to {names[CARDS[2]]}")
    assert "signed the decline register" in said[4].text
    assert said[7].text == (
        "The card selected for the Festa Fortuna! Weekly Bonus Jackpot was not the player's. "
        "The jackpot is reselected."
    )
    assert all(four not in a.text and one not in a.text for a in said)


def test_raps_texts() -> None:
    records, _ = _raps_records()
    occasion = occasion_of(FESTA, J1)
    events = winner_events(records)
    texted = [(e, sms_notice(e, occasion)) for e in events if e.moment in SMS_MOMENTS]
    assert [e.moment for e, _ in texted] == [
        Moment.SELECTED,
        Moment.CALLED,
        Moment.SELECTED,
        Moment.SELECTED,
        Moment.CALLED,
        Moment.DECLINED_REGISTER,
        Moment.SELECTED,
        Moment.CALLED,
    ]
    assert texted[2][0].redraw  # the reselection followed the REDRAW record
    selected = texted[0][1]
    assert selected is not None
    assert selected.text == (
        f"Montecasino Festa Fortuna!: card ****{CARDS[1][-4:]} has been selected for the Weekly "
        "Bonus Jackpot at EGM-041! Stay where you are playing: a promotions host is on the way "
        "to you."
    )
    called = texted[1][1]
    assert called is not None
    assert (
        "but was not at EGM-041. Present yourself at the place of draw by 14:32:50" in called.text
    )
    kept = texted[5][1]
    assert kept is not None
    assert "collect it at the Tsogo Rewards Desk by 19 October 2025" in kept.text


def test_an_unknown_draw_is_named() -> None:
    with pytest.raises(NotFoundError, match="no draw 'nope'"):
        occasion_of(GH, "golden-horse-mega-points-chase.nope")
    with pytest.raises(NotFoundError, match="no jackpot session"):
        occasion_of(FESTA, "montecasino-festa-fortuna.nope.j1")


# -- the printed letter ------------------------------------------------------------------------
def _facts(state: str = "letter_issued") -> LetterFacts:
    return LetterFacts(
        number="golden-horse-mega-points-chase.halfway-000001",
        casino="Golden Horse",
        promotion="Mega Points Chase",
        draw="Halfway draw",
        claim=1,
        winner_name="Thandi <b>Mokoena</b>",
        card="6001009123456",
        prize="R5,000.00",
        value_cents=500_000,
        issued_at=_at(GH, dt.date(2026, 11, 7), 19, 5),
        expires_at=_at(GH, dt.date(2026, 11, 23), 0),
        state=state,
        zone=GH.zone,
    )


@pytest.mark.parametrize("paper", ["A5", "A4"])
def test_the_letter_page_has_every_field_and_no_full_card(paper: str) -> None:
    page = letter_page(_facts(), paper=paper)  # type: ignore[arg-type]
    for text in (
        "golden-horse-mega-points-chase.halfway-000001",
        "Golden Horse",
        "Mega Points Chase",
        "Halfway draw",
        "Thandi &lt;b&gt;Mokoena&lt;/b&gt;",  # escaped, never markup
        "****3456",
        "R5,000",
        "7 November 2026 at 19:05",
        "22 November 2026 (end of day)",
        f"size: {paper} portrait",
        "@media print",
    ):
        assert text in page, text
    assert "6001009123456" not in page
    assert "<b>" not in page
    assert "not payable" not in page
    assert 'src="http' not in page and "<link" not in page  # self-contained


def test_a_redeemed_letter_prints_as_not_payable() -> None:
    assert "REDEEMED: a copy, not payable" in letter_page(_facts("redeemed"))


def test_occasion_type_is_frozen() -> None:
    occasion = occasion_of(GH, "golden-horse-mega-points-chase.final")
    assert isinstance(occasion, Occasion)
    with pytest.raises(AttributeError):
        occasion.place = "x"  # type: ignore[misc]
