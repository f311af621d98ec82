"""Montecasino "Festa Fortuna": tier draws, play windows, caps, app bonus and RAPS sessions.

Every expectation is worked out by hand beside its case (DOMAIN.md rulings).
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bonusd.promotions import (
    Channel,
    MemberWindowStats,
    Promotion,
    RatedPlay,
    Side,
    SideStats,
    activation_refusal,
    aggregate,
    load_promotion,
    standing,
)
from bonusd.promotions.schedule import jackpot_times
from bonusd.registry.records import Member

SEED = Path(__file__).parents[2] / "promotions" / "montecasino-festa-fortuna.toml"
JHB = ZoneInfo("Africa/Johannesburg")
WEDNESDAY = "wednesday-2025-10-15"
SATURDAY = "saturday-2025-10-25"


@functools.cache
def festa() -> Promotion:
    return load_promotion(SEED)


def member(tier: str, *, app: bool = False, **kw: object) -> Member:
    fields: dict[str, object] = {"card": "2002", "name": "Sipho Dlamini", "tier": tier}
    return Member.model_validate(fields | {"app_user": app} | kw)


def played(slots: int = -1, tables: int = -1) -> MemberWindowStats:
    """Play-window stats: a side given points (0 included) had rated play; -1: no play."""
    return MemberWindowStats(
        slots=SideStats(slots, 1, 1) if slots >= 0 else SideStats(),
        tables=SideStats(tables, 1, 1) if tables >= 0 else SideStats(),
        visits=1,
    )


NO_PLAY = -1  # a side with no rated play at all

# (case, draw, tier, app user, slots, tables, expected tickets)
CASES = [
    # Wednesday J/Q, 1 per 100 points: 2,350 slots -> 23; app user +10 -> 33.
    ("wed J app", WEDNESDAY, "J", True, 2_350, NO_PLAY, 33),
    # 50 points only: 0 from points, but any rated play earns at least 1.
    ("wed Q min one", WEDNESDAY, "Q", False, 50, NO_PLAY, 1),
    # 150 slots + 150 tables: 1 + 1 = 2 (never summed to 300 -> 3).
    ("wed sides apart", WEDNESDAY, "Q", False, 150, 150, 2),
    # tables only, 0 points but a rating in the window: at least 1; app +10 -> 11.
    ("wed rating no points", WEDNESDAY, "J", True, NO_PLAY, 0, 11),
    # Saturday, all tiers, caps J|10 200, Q 500, A|K 1,500 applied after the app bonus:
    ("sat J exactly cap", SATURDAY, "J", True, 19_000, NO_PLAY, 200),  # 190 + 10 = 200
    ("sat J over cap", SATURDAY, "J", True, 19_100, NO_PLAY, 200),  # 191 + 10 = 201 -> 200
    ("sat 10 capped", SATURDAY, "10", False, 50_000, NO_PLAY, 200),  # 500 -> 200
    ("sat Q exactly cap", SATURDAY, "Q", True, 49_000, NO_PLAY, 500),  # 490 + 10 = 500
    ("sat Q over cap", SATURDAY, "Q", False, 30_000, 30_000, 500),  # 300 + 300 = 600 -> 500
    ("sat A exactly cap", SATURDAY, "A", True, 149_000, NO_PLAY, 1_500),  # 1,490 + 10
    ("sat K over cap", SATURDAY, "K", False, NO_PLAY, 200_000, 1_500),  # 2,000 -> 1,500
    ("sat K under cap", SATURDAY, "K", True, 12_345, 678, 139),  # 123 + 6 + 10
]


@pytest.mark.parametrize(
    ("draw", "tier", "app", "slots", "tables", "tickets"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_festa_tickets(
    *, draw: str, tier: str, app: bool, slots: int, tables: int, tickets: int
) -> None:
    s = standing(festa(), draw, member(tier, app=app), played(slots, tables), activated=True)
    assert s.tickets == tickets
    assert s.entries == tickets
    assert s.qualified


def test_cap_is_a_line_of_the_breakdown() -> None:
    s = standing(festa(), SATURDAY, member("J", app=True), played(19_100), activated=True)
    assert [(x.rule, x.tickets) for x in s.breakdown] == [
        ("points", 191),
        ("app_bonus", 10),
        ("cap", -1),
    ]
    assert s.breakdown[-1].detail == "tier J cap 200 (earned 201)"


@pytest.mark.parametrize("tier", ["K", "A", "10"])
def test_wednesday_member_of_the_wrong_tier(tier: str) -> None:
    s = standing(festa(), WEDNESDAY, member(tier, app=True), played(10_000), activated=True)
    assert (s.eligible, s.tickets) == (False, 0)
    assert s.reasons == (f"tier {tier} is not eligible for this draw (J, Q only)",)


def test_no_play_in_the_window_earns_nothing_even_for_app_users() -> None:
    s = standing(festa(), WEDNESDAY, member("J", app=True), MemberWindowStats(), activated=True)
    assert (s.eligible, s.qualified, s.tickets) == (True, False, 0)
    assert s.reasons == (
        "no rated play on slots or tables in the window (21:00-21:30 on 15 Oct 2025)",
    )


def test_play_window_edges() -> None:
    draw = festa().draw(WEDNESDAY)

    def t(h: int, m: int, s: int = 0) -> dt.datetime:
        return dt.datetime(2025, 10, 15, h, m, s, tzinfo=JHB)

    plays = [
        RatedPlay(t(20, 59, 59), Side.SLOTS, 5_000),  # before 21:00: out
        RatedPlay(t(21, 0), Side.SLOTS, 120),  # in
        RatedPlay(t(21, 29, 59), Side.TABLES, 80),  # in
        RatedPlay(t(21, 30), Side.SLOTS, 5_000),  # the bin has closed: out
    ]
    s = aggregate(festa(), draw, plays)
    assert (s.slots.points, s.tables.points, s.slots.plays, s.tables.plays) == (120, 80, 1, 1)
    # 120 -> 1 and 80 -> 0 (tables has play, but the member already holds a ticket): 1.
    assert standing(festa(), draw, member("Q"), s, activated=True).tickets == 1


def test_excluded_and_under_age_members_hold_nothing() -> None:
    excluded = member("A", app=True, excluded=True, exclusion_reason="Refusal of Entry")
    s = standing(festa(), SATURDAY, excluded, played(500_000), activated=True)
    assert (s.tickets, s.reasons) == (0, ("excluded: Refusal of Entry",))
    # born 26 Oct 2007: 17 on Saturday 25 Oct 2025.
    young = member("Q", date_of_birth=dt.date(2007, 10, 26))
    s = standing(festa(), SATURDAY, young, played(5_000), activated=True)
    assert (s.tickets, s.reasons) == (0, ("under 18 on 2025-10-25",))


def test_rescheduled_draw_judges_age_on_the_new_date() -> None:
    young = member("Q", date_of_birth=dt.date(2007, 10, 26))
    s = standing(
        festa(), SATURDAY, young, played(5_000), activated=True, on_date=dt.date(2025, 10, 26)
    )
    assert s.tickets == 50


def test_unactivated_entries_do_not_count() -> None:
    s = standing(festa(), WEDNESDAY, member("J", app=True), played(1_000), activated=False)
    assert (s.tickets, s.entries) == (20, 0)
    assert s.reasons == (
        "not activated: print the receipt at an eHost kiosk or register in the Tsogo Sun App "
        "while playing, before the bin closes at 21:30 on 15 Oct 2025",
    )


def test_series_expand_to_dated_draws_and_sessions() -> None:
    ids = [d.id for d in festa().draw_list]
    assert len(ids) == 21  # 14 Wednesdays (cl. 10.5) + 7 Saturdays (cl. 19.6)
    assert ids[:3] == [WEDNESDAY, "wednesday-2025-10-22", SATURDAY]
    assert ids[-1] == "saturday-2026-01-17"
    assert all(festa().draw(i).date.weekday() == 2 for i in ids if i.startswith("wednesday"))
    assert all(festa().draw(i).date.weekday() == 5 for i in ids if i.startswith("saturday"))
    sessions = festa().jackpot_sessions
    assert len(sessions) == 16  # cl. 11
    assert sessions[0].id == "jackpot-2025-10-04"
    assert sessions[-1].id == "jackpot-2026-01-18"


def test_jackpot_session_times_every_30_minutes() -> None:
    session = festa().jackpot_session("jackpot-2025-10-26")
    times = jackpot_times(festa(), session)
    assert len(times) == 14  # 14:30, 15:00, ... 21:00
    assert times[0] == dt.datetime(2025, 10, 26, 14, 30, tzinfo=JHB)
    assert times[-1] == dt.datetime(2025, 10, 26, 21, 0, tzinfo=JHB)
    assert session.areas == ["main", "smoking"]
    assert session.min_spend_cents == 10_000  # cl. 12: R100
    assert session.active_play_minutes == 5
    assert session.claim_seconds == 90


ACTIVATION_CASES = [
    # (case, channel, local time on Wednesday 15 Oct 2025, active on the floor, refusal)
    ("kiosk from 08:00", Channel.KIOSK, "08:00", False, None),
    ("too early", Channel.KIOSK, "07:59", False, "activation opens at 08:00 on 15 Oct 2025"),
    ("app while playing", Channel.APP, "21:29", True, None),
    (
        "app while not playing",  # cl. 9: the app needs the patron to be active
        Channel.APP,
        "21:29",
        False,
        "the app registers entries only while you are playing (carded in or rated)",
    ),
    ("bin closed", Channel.KIOSK, "21:30", True, "the entry bin closed at 21:30 on 15 Oct 2025"),
]


@pytest.mark.parametrize(
    ("channel", "time", "active", "refusal"),
    [c[1:] for c in ACTIVATION_CASES],
    ids=[c[0] for c in ACTIVATION_CASES],
)
def test_activation_kiosk_or_app_until_the_bin_closes(
    *, channel: Channel, time: str, active: bool, refusal: str | None
) -> None:
    instant = dt.datetime.fromisoformat(f"2025-10-15 {time}").replace(tzinfo=JHB)
    found = activation_refusal(festa(), WEDNESDAY, channel, instant, active_on_floor=active)
    assert found == refusal
