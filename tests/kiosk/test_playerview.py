"""The player's view (`bonusd.kiosk.playerview`), pure: which draws run, the standing in
plain words, the neutral view that tells an excluded or under-age member from a stranger's
card by nothing, and no personal data beyond the masked name and the card's last four."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bonusd.api.playermodels import PlayerViewOut
from bonusd.kiosk.playerview import (
    NEUTRAL,
    NO_DRAWS,
    ActivationRecord,
    DrawFacts,
    breakdown_line,
    public_places,
    running_draws,
    view_json,
    view_of,
)
from bonusd.promotions import (
    Channel,
    Draw,
    MemberWindowStats,
    Promotion,
    Side,
    SideStats,
    load_promotion,
    standing,
)
from bonusd.promotions.kioskview import NOT_ELIGIBLE, KioskStatus
from bonusd.registry.records import Member, Tier

SEEDS = Path(__file__).parents[2] / "promotions"
SAST = dt.timezone(dt.timedelta(hours=2))
CARD = "6001009123456"
NAME = "Thandi Mokoena"


@pytest.fixture(scope="module")
def gh() -> Promotion:
    return load_promotion(SEEDS / "golden-horse-mega-points-chase.toml")


@pytest.fixture(scope="module")
def festa() -> Promotion:
    return load_promotion(SEEDS / "montecasino-festa-fortuna.toml")


def at(year: int, month: int, day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, tzinfo=SAST)


def member(**changes: object) -> Member:
    fields: dict[str, object] = {
        "card": CARD,
        "name": NAME,
        "tier": Tier.Q,
        "app_user": True,
        "date_of_birth": dt.date(1980, 2, 1),
    }
    return Member.model_validate(fields | changes)


def stats(slots: int = 0, tables: int = 0, visits: int = 0, plays: int = 0) -> MemberWindowStats:
    return MemberWindowStats(
        slots=SideStats(points=slots, visits=visits, plays=plays),
        tables=SideStats(points=tables, visits=0, plays=1 if tables else 0),
        visits=visits,
    )


def facts_for(
    draws: list[tuple[Promotion, Draw]],
    who: Member | None,
    totals: MemberWindowStats,
    *,
    activation: ActivationRecord | None = None,
    place: int | None = None,
) -> list[DrawFacts]:
    out = []
    for promotion, draw in draws:
        judged = None
        if who is not None:
            judged = standing(
                promotion, draw, who, totals, activated=activation is not None, on_date=draw.date
            )
        boards = dict.fromkeys(draw.qualification.sides, place) if draw.leaderboard else {}
        out.append(DrawFacts(promotion, draw, judged, activation, boards))
    return out


# -- which draws run ----------------------------------------------------------------------


def test_running_draws_follow_the_windows_and_the_draw_night(
    gh: Promotion, festa: Promotion
) -> None:
    def ids(now: dt.datetime) -> list[str]:
        return [draw.id for _, draw in running_draws([gh, festa], now)]

    assert ids(at(2026, 9, 30, 12)) == []  # Golden Horse has not started (launch window has)
    assert ids(at(2026, 10, 3, 12)) == ["launch", "halfway", "bonus", "final"]
    # a draw runs until its draw night's gaming day ends (08:00 the next morning)
    assert ids(at(2026, 11, 7, 21)) == ["halfway", "bonus", "final"]
    assert ids(at(2026, 11, 8, 7, 59)) == ["halfway", "bonus", "final"]
    assert ids(at(2026, 11, 8, 8)) == ["bonus", "final"]
    assert ids(at(2026, 12, 12, 20)) == ["final"]
    assert ids(at(2026, 12, 13, 8)) == []
    # a play window on the draw day: the draw runs from activation's opening (08:00)
    assert ids(at(2025, 10, 15, 7, 59)) == []
    assert ids(at(2025, 10, 15, 8)) == ["wednesday-2025-10-15"]
    assert ids(at(2025, 10, 16, 8)) == []


# -- the standing in plain words -----------------------------------------------------------


def test_a_members_view_in_plain_words(gh: Promotion) -> None:
    now = at(2026, 11, 7, 12)
    draws = running_draws([gh], now)
    record = ActivationRecord(Channel.KIOSK, at(2026, 11, 7, 9, 15))
    facts = facts_for(draws, member(), stats(21_250, 18_400, visits=4), activation=record, place=3)
    view = view_of(member(), facts, now)
    assert not view.neutral
    assert view.member is not None
    assert view.member.masked_name == "T. M****"
    assert view.member.card_last4 == "3456"
    halfway, bonus, final = view.draws
    assert halfway.status is KioskStatus.ENTERED
    assert (halfway.tickets, halfway.entries) == (29, 29)
    assert halfway.lines == (
        "slots: qualified (21,250 of 20,000 points)",
        "tables: 18,400 of 20,000 points — 1,600 to go",
        "+21 from slots points",
        "+8 for gaming visits",
    )
    assert halfway.activation.activated
    assert halfway.activation.channel is Channel.KIOSK
    assert halfway.activation.at == at(2026, 11, 7, 9, 15)
    assert halfway.activation.open_now
    assert halfway.activation.closes == at(2026, 11, 7, 19)
    assert halfway.draw_times == (at(2026, 11, 7, 19), at(2026, 11, 7, 20), at(2026, 11, 7, 21))
    assert [(b.side, b.position) for b in halfway.boards] == [(Side.SLOTS, 3), (Side.TABLES, 3)]
    assert bonus.status is KioskStatus.NO_TICKETS
    assert bonus.lines[0] == "slots: 21,250 of 50,000 points — 28,750 to go"
    assert not bonus.activation.open_now
    assert final.per_tombola == {"slots": 0, "tables": 0}
    assert all("tombola" not in line for line in final.lines)  # nothing to split yet


def test_separate_tombolas_are_counted_each(gh: Promotion) -> None:
    now = at(2026, 12, 10, 12)
    final = [(p, d) for p, d in running_draws([gh], now) if d.id == "final"]
    view = view_of(member(), facts_for(final, member(), stats(130_000, 101_000, 3)), now)
    (entry,) = view.draws
    assert entry.status is KioskStatus.NOT_ACTIVATED
    assert "slots tombola: 136 tickets" in entry.lines
    assert "tables tombola: 101 tickets" in entry.lines
    assert entry.per_tombola == {"slots": 136, "tables": 101}


def test_app_bonus_free_tickets_and_the_cap_in_words(festa: Promotion) -> None:
    now = at(2025, 10, 25, 22)
    saturday = running_draws([festa], now)
    jack = member(tier=Tier.J)
    view = view_of(jack, facts_for(saturday, jack, stats(25_000, plays=4, visits=1)), now)
    (entry,) = view.draws
    assert entry.lines == (
        "slots: qualified (rated play in the window)",
        "tables: no rated play in the window yet",
        "+250 from slots points",
        "+10 app bonus",
        "−60 over the draw's ticket cap",
    )
    assert entry.tickets == 200
    assert breakdown_line({"rule": "base", "tickets": 1, "side": None}) == "+1 free ticket"
    assert breakdown_line({"rule": "min_one", "tickets": 1, "side": None}) == (
        "+1 for rated play in the window"
    )


def test_a_draw_closed_to_the_members_tier_says_only_not_eligible(festa: Promotion) -> None:
    now = at(2025, 10, 15, 21, 10)
    king = member(tier=Tier.K)
    record = ActivationRecord(Channel.APP, at(2025, 10, 15, 21, 5))
    facts = facts_for(running_draws([festa], now), king, stats(9_000, plays=3), activation=record)
    view = view_of(king, facts, now)
    assert not view.neutral  # eligible in no running draw but not barred: it is the draw's rule
    (entry,) = view.draws
    assert entry.status is KioskStatus.NOT_ELIGIBLE
    assert entry.message == NOT_ELIGIBLE
    assert entry.lines == ()
    assert (entry.tickets, entry.activation.activated, entry.activation.channel) == (0, False, None)


# -- the neutral view ----------------------------------------------------------------------


def _json(view: object) -> str:
    return PlayerViewOut.model_validate(view).model_dump_json()


def test_excluded_under_age_and_unknown_cards_read_the_same(gh: Promotion) -> None:
    now = at(2026, 11, 7, 12)
    draws = running_draws([gh], now)
    totals = stats(80_000, 60_000, visits=9)
    unknown = _json(view_json(view_of(None, facts_for(draws, None, totals), now)))
    for barred in (
        member(excluded=True, exclusion_reason="self-exclusion order 123"),
        member(date_of_birth=dt.date(2010, 1, 1)),  # under 18 on every draw date
    ):
        facts = facts_for(draws, barred, totals, place=1)
        assert _json(view_json(view_of(barred, facts, now))) == unknown
    body = json.loads(unknown)
    assert body["neutral"] is True
    assert body["message"] == NEUTRAL
    assert body["member"] is None
    assert body["draws"] == []
    for word in ("Thandi", "T. M", "3456", "exclu", "under", "birth", "reason", "123"):
        assert word not in unknown, word


def test_an_excluded_member_is_neutral_with_no_draw_running(gh: Promotion) -> None:
    now = at(2026, 12, 13, 12)
    assert running_draws([gh], now) == []
    assert view_of(member(excluded=True), [], now).neutral
    assert view_of(None, [], now).neutral
    quiet = view_of(member(), [], now)
    assert (quiet.neutral, quiet.message, quiet.draws) == (False, NO_DRAWS, ())


def test_the_json_carries_no_personal_data(gh: Promotion) -> None:
    now = at(2026, 11, 7, 12)
    facts = facts_for(running_draws([gh], now), member(), stats(21_250, 18_400, 4), place=2)
    text = _json(view_json(view_of(member(), facts, now)))
    for word in ("Thandi", "Mokoena", CARD, "1980", "tier", '"Q"', "app user"):
        assert word not in text, word


@given(
    slots=st.integers(0, 10**9),
    tables=st.integers(0, 10**9),
    visits=st.integers(0, 500),
    tier=st.sampled_from(list(Tier)),
    app=st.booleans(),
)
def test_any_standing_reads_in_words_and_validates(
    slots: int, tables: int, visits: int, tier: Tier, app: bool
) -> None:
    promotion = load_promotion(SEEDS / "golden-horse-mega-points-chase.toml")
    now = at(2026, 10, 3, 12)
    who = member(tier=tier, app_user=app)
    facts = facts_for(running_draws([promotion], now), who, stats(slots, tables, visits))
    view = view_of(who, facts, now)
    out = PlayerViewOut.model_validate(view_json(view))
    for entry in out.draws:
        assert entry.tickets == sum(entry.per_tombola.values())
        for line in entry.lines:
            assert line and line == line.strip() and "None" not in line
        ticket_lines = [x for x in entry.lines if x[0] in "+−"]
        total = sum(int(x[1:].split()[0].replace(",", "")) * (1 if x[0] == "+" else -1)
                    for x in ticket_lines)  # fmt: skip
        assert total == entry.tickets


# -- a published board, masked -------------------------------------------------------------


def test_public_places_never_show_a_full_name_or_card() -> None:
    entries = [
        {"position": 1, "card": CARD, "points": 90_000},
        {"position": 2, "card": "1234", "points": 80_000},
        {"position": 3, "card": "6001001003", "points": 70_000},
    ]
    names = {CARD: NAME, "1234": "Cher"}
    places = public_places(entries, names)
    assert [(p.position, p.name, p.card, p.points) for p in places] == [
        (1, "T. M****", "****3456", 90_000),
        (2, "C****", "****", 80_000),
        (3, "", "****1003", 70_000),
    ]
