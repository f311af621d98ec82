"""The timetable of a promotion: every timed action, as instants, in the order to run them.

`schedule(promotion)` lists multiplier windows opening and closing, weekly leaderboard
publications, earning windows closing, activation opening, the proxy cut-off, bin
closes, draw rounds, RAPS sessions and their jackpot times, and prize letters lapsing.
A scheduler walks the list with an injectable clock; nothing here reads one. Actions at
the same instant come in `Action` order: things close before others open, and a bin
closes before its draw.
"""

from __future__ import annotations

import bisect
import datetime as dt
import random
from dataclasses import dataclass
from enum import StrEnum

from bonusd.promotions.multipliers import multiplier_windows
from bonusd.promotions.schema import Draw, JackpotSession, Promotion
from bonusd.promotions.timing import (
    activation_opens_at,
    bin_closes_at,
    earning_window,
    local,
    prize_letters_lapse_at,
    proxy_cutoff_at,
    round_instants,
)


class Action(StrEnum):
    """What happens; the definition order settles actions at the same instant."""

    MULTIPLIER_ENDS = "multiplier_ends"  # ids: (promotion, multiplier)
    WINDOW_CLOSES = "window_closes"  # ids: (promotion, draw)
    BIN_CLOSES = "bin_closes"  # ids: (promotion, draw): freeze the entry pool
    DRAW_ROUND = "draw_round"  # ids: (promotion, draw, round number from 1)
    JACKPOT = "jackpot"  # ids: (promotion, session, jackpot number from 1)
    JACKPOT_SESSION_ENDS = "jackpot_session_ends"  # ids: (promotion, session)
    PRIZE_LETTERS_LAPSE = "prize_letters_lapse"  # ids: (promotion, draw)
    LEADERBOARD_PUBLISH = "leaderboard_publish"  # ids: (promotion, draw)
    MULTIPLIER_STARTS = "multiplier_starts"  # ids: (promotion, multiplier)
    ACTIVATION_OPENS = "activation_opens"  # ids: (promotion, draw)
    PROXY_CUTOFF = "proxy_cutoff"  # ids: (promotion, draw)
    JACKPOT_SESSION_STARTS = "jackpot_session_starts"  # ids: (promotion, session)

    @property
    def rank(self) -> int:
        return list(Action).index(self)


@dataclass(frozen=True)
class TimedAction:
    at: dt.datetime  # aware, UTC
    action: Action
    ids: tuple[str, ...]

    @property
    def sort_key(self) -> tuple[dt.datetime, int, tuple[str, ...]]:
        return (self.at, self.action.rank, self.ids)


def schedule(promotion: Promotion, *, rng: random.Random | None = None) -> tuple[TimedAction, ...]:
    """Every timed action of the promotion, sorted. `rng` draws jackpot times for sessions
    configured with `times.random` (and is required then)."""
    pid = promotion.id
    out: list[TimedAction] = []

    def add(at: dt.datetime, action: Action, *ids: str) -> None:
        out.append(TimedAction(at.astimezone(dt.UTC), action, (pid, *ids)))

    for window in multiplier_windows(promotion):
        add(window.opens, Action.MULTIPLIER_STARTS, window.id)
        add(window.closes, Action.MULTIPLIER_ENDS, window.id)
    for draw in promotion.draw_list:
        add(earning_window(promotion, draw).closes, Action.WINDOW_CLOSES, draw.id)
        add(activation_opens_at(promotion, draw), Action.ACTIVATION_OPENS, draw.id)
        add(proxy_cutoff_at(promotion, draw), Action.PROXY_CUTOFF, draw.id)
        add(bin_closes_at(promotion, draw), Action.BIN_CLOSES, draw.id)
        for number, at in enumerate(round_instants(promotion, draw), start=1):
            add(at, Action.DRAW_ROUND, draw.id, str(number))
        add(prize_letters_lapse_at(promotion, draw), Action.PRIZE_LETTERS_LAPSE, draw.id)
        for at in leaderboard_publications(promotion, draw):
            add(at, Action.LEADERBOARD_PUBLISH, draw.id)
    for session in promotion.jackpot_sessions:
        add(
            local(promotion, session.date, session.start), Action.JACKPOT_SESSION_STARTS, session.id
        )
        for number, at in enumerate(jackpot_times(promotion, session, rng=rng), start=1):
            add(at, Action.JACKPOT, session.id, str(number))
        add(local(promotion, session.date, session.end), Action.JACKPOT_SESSION_ENDS, session.id)
    return tuple(sorted(out, key=lambda a: a.sort_key))


def between(
    actions: tuple[TimedAction, ...], after: dt.datetime, until: dt.datetime
) -> tuple[TimedAction, ...]:
    """The actions with `after < at <= until` (a scheduler's tick), from a sorted schedule."""
    instants = [a.at for a in actions]
    return actions[bisect.bisect_right(instants, after) : bisect.bisect_right(instants, until)]


def leaderboard_publications(promotion: Promotion, draw: Draw) -> tuple[dt.datetime, ...]:
    """Weekly publication instants of the draw's public boards: each configured weekday
    from the window's opening to the draw date (or `leaderboards.last_update`)."""
    if not draw.leaderboard:
        return ()
    config = promotion.leaderboards
    window = earning_window(promotion, draw)
    last = min(draw.date, config.last_update or draw.date)
    day = window.opens.astimezone(promotion.zone).date()
    day += dt.timedelta(days=(config.weekday.number - day.weekday()) % 7)
    out: list[dt.datetime] = []
    while day <= last:
        at = local(promotion, day, config.time)
        if at > window.opens:
            out.append(at)
        day += dt.timedelta(days=7)
    return tuple(out)


def jackpot_times(
    promotion: Promotion, session: JackpotSession, *, rng: random.Random | None = None
) -> tuple[dt.datetime, ...]:
    """The session's jackpot instants: the listed times, every N minutes from first to
    last, or `random` distinct whole minutes after the start (drawn from `rng`)."""
    times = session.times
    if times.at:
        return tuple(local(promotion, session.date, t) for t in times.at)
    start = local(promotion, session.date, session.start)
    if times.every_minutes:
        assert times.first is not None
        assert times.last is not None
        at = local(promotion, session.date, times.first)
        last = local(promotion, session.date, times.last)
        out = []
        while at <= last:
            out.append(at)
            at += dt.timedelta(minutes=times.every_minutes)
        return tuple(out)
    if rng is None:
        raise ValueError(f"jackpot session {session.id} has random times: pass rng")
    length = int((local(promotion, session.date, session.end) - start).total_seconds() // 60)
    count = times.random or 0
    if count > length:
        raise ValueError(f"jackpot session {session.id}: {count} times in {length} minutes")
    minutes = sorted(rng.sample(range(1, length + 1), count))
    return tuple(start + dt.timedelta(minutes=m) for m in minutes)
