"""The promotion timetable, multiplier lookup and jackpot times, driven by explicit instants."""

from __future__ import annotations

import datetime as dt
import functools
import random
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bonusd.promotions import (
    Action,
    Promotion,
    Side,
    load_promotion,
    multiplier_at,
    parse_promotion,
    schedule,
)
from bonusd.promotions.schedule import between, jackpot_times, leaderboard_publications

FOLDER = Path(__file__).parents[2] / "promotions"
JHB = ZoneInfo("Africa/Johannesburg")


@functools.cache
def gh() -> Promotion:
    return load_promotion(FOLDER / "golden-horse-mega-points-chase.toml")


@functools.cache
def festa() -> Promotion:
    return load_promotion(FOLDER / "montecasino-festa-fortuna.toml")


def at(local: str) -> dt.datetime:
    """An instant from Johannesburg wall time, "2026-10-03 17:00"."""
    return dt.datetime.fromisoformat(local).replace(tzinfo=JHB)


@pytest.mark.parametrize(
    ("instant", "side", "factor"),
    [
        (at("2026-10-03 16:59:59"), Side.SLOTS, 1),  # just before launch-day 17:00
        (at("2026-10-03 17:00"), Side.SLOTS, 3),  # opens at 17:00
        (at("2026-10-03 21:59:59"), Side.TABLES, 3),  # launch day runs to 22:00
        (at("2026-10-03 22:00"), Side.TABLES, 1),  # 22:00 is outside (half-open)
        (at("2026-11-07 20:59"), Side.TABLES, 3),  # halfway day 17:00-21:00
        (at("2026-11-07 21:00"), Side.SLOTS, 1),
        (at("2026-11-08 18:00"), Side.SLOTS, 1),  # the day after a draw
        (dt.datetime(2026, 12, 12, 15, 0, tzinfo=dt.UTC), Side.SLOTS, 3),  # 17:00 SAST as UTC
    ],
)
def test_multiplier_lookup(instant: dt.datetime, side: Side, factor: int) -> None:
    assert multiplier_at(gh(), instant, side) == Decimal(factor)


def test_multiplier_lookup_refuses_naive_instants() -> None:
    with pytest.raises(ValueError, match="aware"):
        multiplier_at(gh(), dt.datetime(2026, 10, 3, 18), Side.SLOTS)


def test_schedule_is_sorted_utc_and_complete() -> None:
    actions = schedule(gh())
    assert [a.sort_key for a in actions] == sorted(a.sort_key for a in actions)
    assert all(a.at.tzinfo is dt.UTC for a in actions)
    counts: dict[Action, int] = {}
    for a in actions:
        counts[a.action] = counts.get(a.action, 0) + 1
    assert counts[Action.DRAW_ROUND] == 1 + 3 + 3 + 1  # launch, halfway, bonus, final
    assert counts[Action.BIN_CLOSES] == 4
    assert counts[Action.MULTIPLIER_STARTS] == counts[Action.MULTIPLIER_ENDS] == 4
    # Fridays 02 Oct - 06 Nov (6), - 27 Nov (9), - 11 Dec (11); none for the launch draw.
    assert counts[Action.LEADERBOARD_PUBLISH] == 6 + 9 + 11


def test_halfway_draw_day_in_order() -> None:
    day = [
        (a.at.astimezone(JHB).strftime("%H:%M"), a.action, a.ids[1:])
        for a in schedule(gh())
        if a.at.astimezone(JHB).date() == dt.date(2026, 11, 7)
    ]
    assert day == [
        ("08:00", Action.ACTIVATION_OPENS, ("halfway",)),
        ("17:00", Action.MULTIPLIER_STARTS, ("halfway-day",)),
        ("18:45", Action.PROXY_CUTOFF, ("halfway",)),  # 15 minutes before the first round
        ("19:00", Action.BIN_CLOSES, ("halfway",)),
        ("19:00", Action.DRAW_ROUND, ("halfway", "1")),
        ("20:00", Action.DRAW_ROUND, ("halfway", "2")),
        ("21:00", Action.MULTIPLIER_ENDS, ("halfway-day",)),
        ("21:00", Action.DRAW_ROUND, ("halfway", "3")),
    ]


def test_festa_bin_closes_then_the_draw_follows_at_once() -> None:
    ids = ("montecasino-festa-fortuna", "wednesday-2025-10-15")
    close = at("2025-10-15 21:30")
    same = [a.action for a in schedule(festa()) if a.ids[:2] == ids and a.at == close]
    # At 21:30 the play window and the bin close, then the draw runs.
    assert same == [Action.WINDOW_CLOSES, Action.BIN_CLOSES, Action.DRAW_ROUND]


def test_festa_jackpots() -> None:
    jackpots = [a for a in schedule(festa()) if a.action is Action.JACKPOT]
    assert len(jackpots) == 16 * 14  # 16 sessions, every 30 minutes 14:30-21:00
    assert jackpots[0].ids == ("montecasino-festa-fortuna", "jackpot-2025-10-04", "1")
    assert jackpots[0].at == at("2025-10-04 14:30")


def test_final_leaderboard_last_update() -> None:
    pubs = leaderboard_publications(gh(), gh().draw("final"))
    assert pubs[0] == at("2026-10-02 08:00")
    assert pubs[-1] == at("2026-12-11 08:00")  # cl. 7 Final: last update Friday 11 December 2026
    assert all(p.weekday() == 4 for p in pubs)


def test_between_gives_one_scheduler_tick() -> None:
    actions = schedule(gh())
    tick = between(actions, at("2026-10-03 19:59"), at("2026-10-03 20:00"))
    assert [a.action for a in tick] == [
        Action.WINDOW_CLOSES,
        Action.BIN_CLOSES,
        Action.DRAW_ROUND,
    ]
    assert between(actions, at("2026-10-03 20:00"), at("2026-10-03 20:00")) == ()


def test_random_jackpot_times_need_and_follow_the_rng() -> None:
    text = (FOLDER / "montecasino-festa-fortuna.toml").read_text(encoding="utf-8")
    text = text.replace(
        'times = { every_minutes = 30, first = "14:30", last = "21:00" }', "times = { random = 7 }"
    )
    promotion = parse_promotion(text, source="festa-random.toml")
    session = promotion.jackpot_sessions[0]
    with pytest.raises(ValueError, match="pass rng"):
        jackpot_times(promotion, session)
    first = jackpot_times(promotion, session, rng=random.Random(7))
    assert first == jackpot_times(promotion, session, rng=random.Random(7))
    assert len(set(first)) == 7
    assert all(at("2025-10-04 14:00") < t <= at("2025-10-04 21:00") for t in first)
    assert list(first) == sorted(first)
