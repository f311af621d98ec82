"""A slot stint planned when it starts: its games, how it ends, and what it sends.

A stint is one player carded in at one EGM. When it starts, everything about it is
decided: its games (games.py), whether the EGM fails during it (outages.py: the stint is
cut at the outage and ends in silence), and otherwise whether its `card_out` is sent or
lost (`lost_card_out_rate`). With `granularity="play"` its games are folded into play
intervals at once (aggregate.py). Deciding up front is what makes the two granularities
the same floor: the same random draws in the same order, whatever is sent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

import numpy as np

from simulators.aggregate import Cuts, Interval, fold_games
from simulators.games import Games, StakeTable, draw_games

OUT: Final = 0
"""The player cards out: a `card_out` is sent."""
LOST: Final = 1
"""The `card_out` is lost: nothing is sent, device and player are held for a while."""
OFFLINE: Final = 2
"""The EGM went offline: nothing is sent, the player moves on."""

_CARD_OUT_GAP = (2_000, 15_000)
"""From the last game to the card-out (ms)."""
_FIRST_GAME_GAP = (2_000, 10_000)
"""From the card-in to the first game (ms)."""


@dataclass(slots=True)
class Stint:
    """What one stint sends, in order; `end_ms` is when it ends (`ending`)."""

    ending: int
    end_ms: int
    games: Games
    times: list[int]
    """Game instants (granularity "game") or play interval ends ("play")."""
    rows: list[tuple[int, int, int]]
    """(wager, win, points) per game (granularity "game")."""
    plays: list[Interval]
    """The play intervals (granularity "play")."""
    left_ms: int
    """Planned play time the outage took away (0 unless `ending` is OFFLINE)."""
    index: int = 0


def plan_stint(
    *,
    rng: random.Random,
    gen: np.random.Generator,
    t_ms: int,
    planned_ms: int,
    outage_ms: int,
    mean_gap_ms: float,
    stakes: StakeTable,
    step_up: float,
    lost_rate: float,
    cuts: Cuts | None,
) -> Stint:
    """The stint of a player carding in at `t_ms` for `planned_ms` on an EGM whose next
    outage starts at `outage_ms`; `cuts` folds its games into play intervals."""
    cut = outage_ms <= t_ms + planned_ms + _CARD_OUT_GAP[1]
    length = outage_ms - t_ms if cut else planned_ms
    first = t_ms + rng.randrange(*_FIRST_GAME_GAP)
    games = draw_games(
        gen,
        start_ms=first,
        end_ms=t_ms + length,
        mean_gap_ms=mean_gap_ms,
        stakes=stakes,
        step_up=step_up,
    )
    last = int(games.t[-1]) if len(games) else t_ms
    if cut:
        ending, end = OFFLINE, outage_ms
    else:
        end = last + rng.randrange(*_CARD_OUT_GAP)
        ending = LOST if rng.random() < lost_rate else OUT
    left = planned_ms - length
    if cuts is None:
        rows = list(
            zip(games.wager.tolist(), games.win.tolist(), games.points.tolist(), strict=True)
        )
        return Stint(ending, end, games, games.t.tolist(), rows, [], left)
    plays = fold_games(games, cuts, card_in_ms=t_ms)
    return Stint(ending, end, games, [p.ts_ms for p in plays], [], plays, left)
