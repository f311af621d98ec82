"""Golden Horse "Mega Points Chase": standings, windows, multipliers, boards and seats.

Every expectation is worked out by hand beside its case (DOMAIN.md rulings).
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bonusd.promotions import (
    BoardEntry,
    EntryPool,
    MemberWindowStats,
    Promotion,
    RatedPlay,
    Side,
    SideStats,
    Tombola,
    aggregate,
    earning_window,
    load_promotion,
    rank_leaderboard,
    seat_holders,
    standing,
)
from bonusd.registry.records import Member, Tier

SEED = Path(__file__).parents[2] / "promotions" / "golden-horse-mega-points-chase.toml"
JHB = ZoneInfo("Africa/Johannesburg")


@functools.cache
def gh() -> Promotion:
    return load_promotion(SEED)


def at(local: str) -> dt.datetime:
    """An instant from Johannesburg wall time, "2026-10-03 17:00"."""
    return dt.datetime.fromisoformat(local).replace(tzinfo=JHB)


def member(tier: str = "Q", **kw: object) -> Member:
    fields: dict[str, object] = {"card": "1001", "name": "Thandi Mokoena", "tier": tier}
    return Member.model_validate(fields | kw)


def stats(
    slots: int = 0, tables: int = 0, visits: int = 0, sv: int | None = None, tv: int | None = None
) -> MemberWindowStats:
    """Window stats; side visits default to all visits on a side with points."""
    sv = sv if sv is not None else (visits if slots else 0)
    tv = tv if tv is not None else (visits if tables else 0)
    return MemberWindowStats(
        slots=SideStats(slots, sv, 1 if slots else 0),
        tables=SideStats(tables, tv, 1 if tables else 0),
        visits=visits,
    )


# (case, draw, slots, tables, visits, expected tickets, expected reasons)
POOLED_CASES = [
    # DOMAIN.md worked example: slots 25,400 qualifies (25), tables 9,000 does not; 2 x 7 = 14.
    ("domain example", "halfway", 25_400, 9_000, 7, 39, ["tables: 9,000 of 20,000 points"]),
    # tables 18,400 < 20,000 and no slots: nobody qualifies, visits give nothing.
    (
        "short on tables",
        "halfway",
        0,
        18_400,
        4,
        0,
        ["slots: 0 of 20,000 points", "tables: 18,400 of 20,000 points"],
    ),
    # both sides qualify: 20 + 31 + 2 x 10 = 71 (visits once per member, not per side).
    ("both sides", "halfway", 20_000, 31_999, 10, 71, []),
    # 19,999 + 19,999 would reach 20,000 if summed; sides are never summed: 0.
    (
        "never summed",
        "halfway",
        19_999,
        19_999,
        9,
        0,
        ["slots: 19,999 of 20,000 points", "tables: 19,999 of 20,000 points"],
    ),
    # Bonus threshold 50,000: tables exactly 50,000 -> 50 + 2 x 3 = 56.
    ("bonus at threshold", "bonus", 49_999, 50_000, 3, 56, ["slots: 49,999 of 50,000 points"]),
]


@pytest.mark.parametrize(
    ("draw", "slots", "tables", "visits", "tickets", "reasons"),
    [c[1:] for c in POOLED_CASES],
    ids=[c[0] for c in POOLED_CASES],
)
def test_halfway_and_bonus_tickets(
    *, draw: str, slots: int, tables: int, visits: int, tickets: int, reasons: list[str]
) -> None:
    s = standing(gh(), draw, member(), stats(slots, tables, visits), activated=True)
    assert s.tickets == tickets
    assert s.per_tombola == {Tombola.POOLED: tickets}
    assert list(s.reasons) == reasons
    assert s.qualified is (tickets > 0)
    assert s.entries == tickets


def test_domain_example_breakdown_and_sides() -> None:
    s = standing(gh(), "halfway", member(), stats(25_400, 9_000, 7, 5, 3), activated=True)
    assert [(x.rule, x.tickets) for x in s.breakdown] == [("points", 25), ("visits", 14)]
    slots, tables = s.sides
    assert (slots.side, slots.points, slots.qualified, slots.tickets) == (
        Side.SLOTS,
        25_400,
        True,
        25,
    )
    assert (tables.side, tables.points, tables.qualified, tables.tickets) == (
        Side.TABLES,
        9_000,
        False,
        0,
    )
    assert s.visits == 7


def test_not_activated_holds_tickets_but_no_entries() -> None:
    s = standing(gh(), "halfway", member(), stats(25_400, 9_000, 7), activated=False)
    assert (s.tickets, s.entries) == (39, 0)
    assert s.reasons[-1].startswith("not activated: print the receipt at an eHost kiosk")
    assert "19:00 on 07 Nov 2026" in s.reasons[-1]


def test_threshold_crossed_only_thanks_to_the_3x_window() -> None:
    halfway = gh().draw("halfway")
    plays = [
        RatedPlay(at("2026-10-02 12:00"), Side.SLOTS, 6_000),  # 6,000 (no multiplier)
        RatedPlay(
            at("2026-10-03 18:00"), Side.SLOTS, 5_000
        ),  # 3x on launch day 17:00-22:00: 15,000
    ]
    with_3x = aggregate(gh(), halfway, plays)
    assert with_3x.slots.points == 21_000
    # 21,000 >= 20,000: 21 + 2 x 2 visits = 25.
    assert standing(gh(), halfway, member(), with_3x, activated=True).tickets == 25
    # The same play an hour earlier (16:00) is not multiplied: 11,000 < 20,000.
    early = [plays[0], RatedPlay(at("2026-10-03 16:59:59"), Side.SLOTS, 5_000)]
    without = aggregate(gh(), halfway, early)
    assert without.slots.points == 11_000
    s = standing(gh(), halfway, member(), without, activated=True)
    assert (s.tickets, s.reasons[0]) == (0, "slots: 11,000 of 20,000 points")
    # 22:00 is the end of the window (exclusive): not multiplied either.
    late = [plays[0], RatedPlay(at("2026-10-03 22:00"), Side.SLOTS, 5_000)]
    assert aggregate(gh(), halfway, late).slots.points == 11_000


def test_draw_day_multiplier_counts_only_for_windows_that_include_it() -> None:
    play = [RatedPlay(at("2026-11-07 18:00"), Side.TABLES, 10_000)]  # 3x on the halfway draw day
    # Halfway closed 06 Nov 07:59: nothing. Bonus (to 27 Nov 07:59): 30,000.
    assert aggregate(gh(), gh().draw("halfway"), play).tables.points == 0
    assert aggregate(gh(), gh().draw("bonus"), play).tables.points == 30_000


def test_gaming_day_split_across_midnight_is_one_visit() -> None:
    halfway = gh().draw("halfway")
    plays = [
        RatedPlay(at("2026-10-05 23:30"), Side.SLOTS, 100),  # gaming day 05 Oct
        RatedPlay(at("2026-10-06 00:30"), Side.TABLES, 100),  # still gaming day 05 Oct
        RatedPlay(at("2026-10-06 07:59:59"), Side.SLOTS, 100),  # still 05 Oct
        RatedPlay(at("2026-10-06 08:00"), Side.SLOTS, 100),  # gaming day 06 Oct: a second visit
    ]
    s = aggregate(gh(), halfway, plays)
    assert s.visits == 2
    assert (s.slots.visits, s.tables.visits) == (2, 1)
    assert (s.slots.points, s.tables.points) == (300, 100)


def test_window_edges_are_whole_gaming_days() -> None:
    halfway = gh().draw("halfway")
    window = earning_window(gh(), halfway)
    assert window.opens == at("2026-10-01 08:00")
    assert window.closes == at("2026-11-06 08:00")  # "06 November 2026 07:59" inclusive
    assert (window.first_day, window.last_day) == (dt.date(2026, 10, 1), dt.date(2026, 11, 5))
    plays = [
        RatedPlay(at("2026-10-01 07:59:59"), Side.SLOTS, 1_000),  # gaming day 30 Sep: out
        RatedPlay(at("2026-11-06 07:59:59"), Side.SLOTS, 2_000),  # gaming day 05 Nov: in
        RatedPlay(at("2026-11-06 08:00"), Side.SLOTS, 4_000),  # gaming day 06 Nov: out
    ]
    assert aggregate(gh(), halfway, plays).slots.points == 2_000


# ------------------------------------------------------------------- launch: 3 months actives
LAUNCH_CASES = [
    # 4 telemetry visits, app user: base 1 + 4 visits + 5 app = 10.
    ("visits and app", {"app_user": True}, MemberWindowStats(visits=4), 10, 4),
    # no telemetry, last_visit 15 Aug (inside 03 Jul - 03 Oct): active; 1 visit: 1 + 1 = 2.
    (
        "last_visit fallback",
        {"last_visit": dt.date(2026, 8, 15)},
        MemberWindowStats(),
        2,
        1,
    ),
    # telemetry from 01 Sep saw 3 visits; last_visit 20 Aug is before it: 4 visits, app: 1+4+5.
    (
        "last_visit before telemetry",
        {"last_visit": dt.date(2026, 8, 20), "app_user": True},
        MemberWindowStats(visits=3, telemetry_since=dt.date(2026, 9, 1)),
        10,
        4,
    ),
    # last_visit 10 Sep is covered by telemetry: 3 visits, not 4: 1 + 3 = 4.
    (
        "last_visit already seen",
        {"last_visit": dt.date(2026, 9, 10)},
        MemberWindowStats(visits=3, telemetry_since=dt.date(2026, 9, 1)),
        4,
        3,
    ),
    # the window's first gaming day is 03 Jul: a last visit on it counts: 1 + 1 + 5 = 7.
    (
        "first day of window",
        {"last_visit": dt.date(2026, 7, 3), "app_user": True},
        MemberWindowStats(),
        7,
        1,
    ),
    # 02 Jul is before the window: not active, no tickets (the app bonus needs qualifying).
    (
        "too long ago",
        {"last_visit": dt.date(2026, 7, 2), "app_user": True},
        MemberWindowStats(),
        0,
        0,
    ),
]


@pytest.mark.parametrize(
    ("fields", "window_stats", "tickets", "visits"),
    [c[1:] for c in LAUNCH_CASES],
    ids=[c[0] for c in LAUNCH_CASES],
)
def test_launch_actives(
    fields: dict[str, object], window_stats: MemberWindowStats, tickets: int, visits: int
) -> None:
    s = standing(gh(), "launch", member("J", **fields), window_stats, activated=True)
    assert (s.tickets, s.visits, s.qualified) == (tickets, visits, tickets > 0)
    if not tickets:
        assert s.reasons[0].startswith("no gaming visit in the earning window (03 Jul 2026 08:00")


def test_launch_window_is_three_months_to_the_bin_close() -> None:
    window = earning_window(gh(), gh().draw("launch"))
    assert (window.opens, window.closes) == (at("2026-07-03 08:00"), at("2026-10-03 20:00"))


# ------------------------------------------------------------------- exclusions are absolute
def test_excluded_member_with_high_points_holds_nothing() -> None:
    m = member("A", excluded=True, exclusion_reason="self-excluded", app_user=True)
    for draw in ("launch", "halfway", "bonus", "final"):
        s = standing(gh(), draw, m, stats(900_000, 400_000, 40), activated=True)
        assert (s.eligible, s.qualified, s.tickets, s.entries) == (False, False, 0, 0)
        assert s.reasons == ("excluded: self-excluded",)


@pytest.mark.parametrize(
    ("born", "draw", "eligible"),
    [
        (dt.date(2008, 11, 8), "halfway", False),  # 17 on 07 Nov 2026 (18 the next day)
        (dt.date(2008, 11, 7), "halfway", True),  # 18 on the draw date itself
        (dt.date(2008, 11, 8), "bonus", True),  # 18 by 28 Nov 2026
    ],
)
def test_under_18_on_the_draw_date(born: dt.date, draw: str, eligible: bool) -> None:
    s = standing(gh(), draw, member(date_of_birth=born), stats(60_000, 0, 3), activated=True)
    assert s.eligible is eligible
    if eligible:
        assert s.tickets > 0
    else:
        assert (s.tickets, s.reasons) == (0, ("under 18 on 2026-11-07",))


# ------------------------------------------------------------------- final: two tombolas
FINAL_CASES = [
    # slots 130 + 2 x 6 slots visits = 142; tables 104 + 2 x 4 tables visits = 112.
    ("both tombolas", 130_500, 104_000, 8, 6, 4, {Tombola.SLOTS: 142, Tombola.TABLES: 112}),
    # tables 99,999 misses 100,000: slots only, 250 + 2 x 9 = 268.
    ("slots only", 250_000, 99_999, 12, 9, 5, {Tombola.SLOTS: 268, Tombola.TABLES: 0}),
]


@pytest.mark.parametrize(
    ("slots", "tables", "visits", "sv", "tv", "expected"),
    [c[1:] for c in FINAL_CASES],
    ids=[c[0] for c in FINAL_CASES],
)
def test_final_separate_tombolas(
    *, slots: int, tables: int, visits: int, sv: int, tv: int, expected: dict[Tombola, int]
) -> None:
    s = standing(gh(), "final", member(), stats(slots, tables, visits, sv, tv), activated=True)
    assert dict(s.per_tombola) == expected
    assert s.tickets == sum(expected.values())


def _entry(card: str, points: int, reached: dt.datetime, *, excluded: bool = False) -> BoardEntry:
    return BoardEntry(member(card=card, excluded=excluded), points, reached)


def test_leaderboard_ties_go_to_who_reached_the_total_first() -> None:
    entries = [
        _entry("A", 60_000, at("2026-11-01 10:00")),
        _entry("B", 60_000, at("2026-10-30 21:00")),  # reached 60,000 first: ranks above A
        _entry("C", 75_000, at("2026-11-20 12:00")),
        _entry("X", 990_000, at("2026-10-02 12:00"), excluded=True),  # never ranked
        _entry("D", 19_999, at("2026-10-03 12:00")),  # below 20,000: not on the public board
    ]
    board = rank_leaderboard(gh(), "halfway", Side.SLOTS, entries)
    assert [(r.position, r.card) for r in board] == [(1, "C"), (2, "B"), (3, "A")]
    live = rank_leaderboard(gh(), "halfway", Side.SLOTS, entries, qualified_only=False)
    assert [r.card for r in live] == ["C", "B", "A", "D"]


def test_final_seats_the_number_one_of_each_board_and_freezes_the_rest() -> None:
    final = gh().draw("final")
    boards = {
        Side.SLOTS: rank_leaderboard(
            gh(),
            final,
            Side.SLOTS,
            [
                _entry("A", 300_000, at("2026-12-05 12:00")),
                _entry("B", 250_000, at("2026-12-01 12:00")),
            ],
        ),
        Side.TABLES: rank_leaderboard(
            gh(),
            final,
            Side.TABLES,
            [
                _entry("A", 150_000, at("2026-12-06 12:00")),
                _entry("C", 120_000, at("2026-12-02 12:00")),
            ],
        ),
    }
    seats = seat_holders(gh(), final, boards)
    # A leads both boards but wins once per draw: the tables seat passes to C.
    assert [(s.board, s.card, s.position) for s in seats] == [
        (Side.SLOTS, "A", 1),
        (Side.TABLES, "C", 2),
    ]
    standings = [
        standing(gh(), final, member(card="A"), stats(300_000, 150_000, 10, 8, 4), activated=True),
        standing(gh(), final, member(card="B"), stats(250_000, 0, 5), activated=True),
        standing(gh(), final, member(card="C"), stats(0, 120_000, 3), activated=True),
        standing(gh(), final, member(card="D"), stats(101_000, 0, 2), activated=False),
    ]
    pool = EntryPool.from_standings(
        gh().id,
        final,
        standings,
        closed_at=at("2026-12-12 20:00"),
        seated=[s.card for s in seats],
    )
    # Seated A and C leave the tombolas; D never activated. B: 250 + 2 x 5 = 260 slots tickets.
    assert pool.holders(Tombola.SLOTS) == (("B", 260),)
    assert pool.holders(Tombola.TABLES) == ()
    assert pool.seated == ("A", "C")
    assert pool.entries(Tombola.SLOTS) == {"B": 260}


def test_ticket_earning_is_uncapped() -> None:
    # cl. 6: a K member with 2,000,000 slots points holds 2,000 + 2 x 1 tickets.
    s = standing(gh(), "halfway", member("K"), stats(2_000_000, 0, 1), activated=True)
    assert s.tickets == 2_002
    assert Tier.K not in gh().draw("halfway").caps
