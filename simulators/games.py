"""The games of one slot stint, drawn at once with numpy: when, what stake, what win.

A stint is one player carded in at one EGM. Everything about its games is decided when
it starts, from the generator's numpy random source, so the same stint gives the same
games whether the run sends every game or folds them into `play` events (aggregate.py).

Pace: the gap between games is a quick spin most of the time and now and then a pause
(`profiles.SPIN_GAP`, `PAUSE_GAP`, both in units of the mean gap), so a carded-in player
plays `games_per_hour` on average. Stakes: the player keeps a stake and, with
`STAKE_CHANGE_RATE` per game, picks a new one from the tier's stakes; a chaser picks one
step higher with `step_up` chance. Returns: `WIN_RATE` of games win an exponential
multiple of the stake, a few win big (RTP about 95%). Points are 1 per R1 wagered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simulators import profiles as pf

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Games:
    """Parallel arrays, one entry per game, in time order (epoch ms, cents, points)."""

    t: Ints
    wager: Ints
    win: Ints
    points: Ints

    def __len__(self) -> int:
        return len(self.t)


class StakeTable:
    """A tier's stakes and their probabilities, ready for numpy."""

    __slots__ = ("probs", "stakes")

    def __init__(self, stakes: tuple[int, ...], weights: tuple[int, ...]) -> None:
        self.stakes = np.asarray(stakes, dtype=np.int64)
        w = np.asarray(weights, dtype=np.float64)
        self.probs = w / w.sum()


STAKES = tuple(StakeTable(stakes, weights) for stakes, weights in pf.SLOT_BETS)
"""Per tier index (10, J, Q, K, A)."""


def draw_games(
    gen: np.random.Generator,
    *,
    start_ms: int,
    end_ms: int,
    mean_gap_ms: float,
    stakes: StakeTable,
    step_up: float = 0.0,
) -> Games:
    """The games of a stint: the first at `start_ms`, the rest before `end_ms`."""
    t = _times(gen, start_ms, end_ms, mean_gap_ms)
    n = len(t)
    changes = gen.random(n) < pf.STAKE_CHANGE_RATE
    if n:
        changes[0] = True
    segment = np.cumsum(changes) - 1
    picks = gen.choice(len(stakes.stakes), size=int(changes.sum()), p=stakes.probs)
    if step_up > 0:
        picks = np.minimum(picks + (gen.random(len(picks)) < step_up), len(stakes.stakes) - 1)
    wager = stakes.stakes[picks][segment] if n else np.zeros(0, dtype=np.int64)
    u = gen.random(n)
    small = gen.exponential(pf.WIN_MEAN_MULTIPLE, n)
    big = gen.uniform(*pf.BIG_WIN_MULTIPLES, n)
    multiple = np.where(
        u < pf.WIN_RATE, small, np.where(u < pf.WIN_RATE + pf.BIG_WIN_RATE, big, 0.0)
    )
    win = (wager * multiple).astype(np.int64) // 10 * 10
    return Games(t=t, wager=wager, win=win, points=wager // 100)


def _times(gen: np.random.Generator, start_ms: int, end_ms: int, mean_gap_ms: float) -> Ints:
    """Game instants from `start_ms` (included) to `end_ms` (excluded)."""
    if end_ms <= start_ms:
        return np.zeros(0, dtype=np.int64)
    chunks: list[npt.NDArray[np.float64]] = []
    at = float(start_ms)
    while at < end_ms:
        size = int((end_ms - at) / mean_gap_ms * 1.1) + 16
        pause = gen.random(size) < pf.PAUSE_RATE
        gaps = np.where(pause, gen.uniform(*pf.PAUSE_GAP, size), gen.uniform(*pf.SPIN_GAP, size))
        instants = at + np.concatenate(([0.0], np.cumsum(gaps[:-1] * mean_gap_ms)))
        chunks.append(instants)
        at = float(instants[-1] + gaps[-1] * mean_gap_ms)
    t = np.floor(np.concatenate(chunks)).astype(np.int64)
    return t[t < end_ms]
