"""Aggregated play: consecutive games of one card on one EGM folded into `play` events.

A rehearsal of a ten-week campaign cannot send every game (hundreds of millions), so an
EGM can report its meters instead, as many interface boards do: one `play` event per
interval with the number of games, the wager, the wins and the points of the interval
(docs/telemetry.md, "Aggregated play"). The rule, shared by both ways of folding below:

- the intervals of a card on an EGM follow each other: the first starts (`since`) at the
  card-in, each next one at the previous one's `ts`; an interval ends (`ts`) at its last
  game, so its games are exactly those in (since, ts];
- an interval takes the next games while they are before `Cuts.deadline(since, first)`:
  less than `max_minutes` after `since` (at most 15 minutes, the contract's limit) and
  before the first edge after its first game: a promotion instant (multiplier window,
  earning window, bin close, draw round, jackpot time, ...) or the start of a gaming day.
  So every game of an interval has the multiplier, gaming day and windows of its `ts`,
  the instant bonusd rates it at;
- after a pause of `max_minutes` or more, an interval starts 1 ms before its first game.

`fold_games` folds one stint's games (arrays); the generator uses it for
`granularity="play"`. `fold_stream` folds any per-game event stream (a dump, a recorded
floor), keeping the other events and the time order; the tests hold the two to each
other and the totals of every interval to the games it folds.
"""

from __future__ import annotations

import bisect
import datetime as dt
import heapq
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple
from zoneinfo import ZoneInfo

import numpy as np

from bonusd.floor.telemetry import MAX_PLAY_INTERVAL
from simulators.events import Payload, SimEvent
from simulators.games import Games
from simulators.timefmt import LocalStamper

NEVER = 2**62
_MINUTE_MS = 60_000


class Cuts:
    """Where play intervals must end: their length limit, the edges and gaming days."""

    __slots__ = ("_day", "_day_start", "_edges", "_zone", "max_ms")

    def __init__(
        self,
        *,
        max_minutes: float,
        edges: Sequence[int] = (),
        zone: ZoneInfo,
        day_start: dt.time = dt.time(8, 0),
    ) -> None:
        limit = MAX_PLAY_INTERVAL / dt.timedelta(minutes=1)
        if not 0 < max_minutes <= limit:
            raise ValueError(
                f"play intervals must be over 0 and at most {limit:g} minutes (the telemetry "
                f"contract's limit), got {max_minutes:g}"
            )
        self.max_ms = int(max_minutes * _MINUTE_MS)
        self._edges = sorted(set(edges))
        self._zone = zone
        self._day_start = day_start
        self._day = (0, -1)  # [opens, closes) of the last gaming day looked up

    @property
    def edges(self) -> tuple[int, ...]:
        return tuple(self._edges)

    @property
    def zone(self) -> ZoneInfo:
        return self._zone

    def since(self, since_ms: int, first_ms: int) -> int:
        """The start of an interval whose first game is at `first_ms`, the previous one
        having ended at `since_ms`: that, unless the player paused `max_minutes` or more."""
        return since_ms if first_ms - since_ms < self.max_ms else first_ms - 1

    def deadline(self, since_ms: int, first_ms: int) -> int:
        """Games before this instant may join the interval from `since_ms` whose first
        game is at `first_ms` (`since_ms` as returned by `since`)."""
        return min(since_ms + self.max_ms, self.next_edge(first_ms))

    def next_edge(self, t_ms: int) -> int:
        """The first edge or gaming-day start after `t_ms`."""
        i = bisect.bisect_right(self._edges, t_ms)
        edge = self._edges[i] if i < len(self._edges) else NEVER
        return min(edge, self._day_closes(t_ms))

    def _day_closes(self, t_ms: int) -> int:
        opens, closes = self._day
        if opens <= t_ms < closes:
            return closes
        local = dt.datetime.fromtimestamp(t_ms / 1000, tz=self._zone)
        offset = dt.timedelta(hours=self._day_start.hour, minutes=self._day_start.minute)
        day = (local - offset).date()
        begin = dt.datetime.combine(day, self._day_start, tzinfo=self._zone)
        end = dt.datetime.combine(day + dt.timedelta(days=1), self._day_start, tzinfo=self._zone)
        self._day = (int(begin.timestamp() * 1000), int(end.timestamp() * 1000))
        return self._day[1]


class Interval(NamedTuple):
    """One folded interval: (since, ts] holds its games; their totals."""

    since_ms: int
    ts_ms: int
    games: int
    wager_cents: int
    win_cents: int
    points: int


def fold_games(games: Games, cuts: Cuts, *, card_in_ms: int) -> list[Interval]:
    """The intervals of one stint's games (one card on one EGM, carded in at
    `card_in_ms`, before its first game), in time order."""
    n = len(games)
    if n == 0:
        return []
    t = games.t
    sums = [np.concatenate(([0], np.cumsum(a))) for a in (games.wager, games.win, games.points)]
    wager, win, points = (s.tolist() for s in sums)
    times = t.tolist()
    out: list[Interval] = []
    since, i = card_in_ms, 0
    while i < n:
        since = cuts.since(since, times[i])
        j = int(np.searchsorted(t, cuts.deadline(since, times[i]), side="left"))
        out.append(
            Interval(
                since,
                times[j - 1],
                j - i,
                wager[j] - wager[i],
                win[j] - win[i],
                points[j] - points[i],
            )
        )
        since, i = times[j - 1], j
    return out


def play_fields(since: str, interval: Interval) -> Payload:
    """The fields a `play` event carries beyond the common ones (`since` already stamped)."""
    return {
        "since": since,
        "games": interval.games,
        "wager_cents": interval.wager_cents,
        "win_cents": interval.win_cents,
        "points": interval.points,
    }


@dataclass(slots=True)
class _Open:
    """An interval being folded in `fold_stream`."""

    card: str
    area: str | int
    first_id: str  # contract v1; "" for v2
    since_ms: int
    deadline: int
    epoch: str = ""  # contract v2: the epoch of its first game
    last_ms: int = 0
    last_ts: str = ""
    games: int = 0
    wager: int = 0
    win: int = 0
    points: int = 0


def fold_stream(events: Iterable[SimEvent], cuts: Cuts) -> Iterator[SimEvent]:
    """Fold the `game` events of a time-ordered stream into `play` events; other events
    pass unchanged. The output is in time order (ties in a fixed order); a play event's id
    is its first game's id with `-play` (contract v1); in contract v2 it has its first
    game's epoch, and the events of each device and epoch are numbered again from 1 in
    the output's order. Games with no `card_in` of their card before them on their EGM
    start 1 ms before the first game."""
    return _renumbered(_folded(events, cuts))


def _renumbered(events: Iterable[SimEvent]) -> Iterator[SimEvent]:
    """Contract v2 events numbered 1, 2, 3, … per device and epoch, in stream order."""
    numbers: dict[tuple[str, str], int] = {}  # (device, epoch) -> seq of its last event
    for event in events:
        epoch = event.payload.get("epoch")
        if epoch is None:
            yield event
            continue
        key = (event.device, str(epoch))
        numbers[key] = numbers.get(key, 0) + 1
        yield event._replace(payload={**event.payload, "seq": numbers[key]})


def _folded(events: Iterable[SimEvent], cuts: Cuts) -> Iterator[SimEvent]:
    """`fold_stream` before its v2 events are numbered again."""
    stamper = LocalStamper(cuts.zone)
    open_at: dict[str, _Open] = {}  # device -> its open interval
    origin: dict[str, tuple[str, int]] = {}  # device -> (card, where its next interval starts)
    device_of: dict[str, str] = {}  # card -> device of its open interval
    deadlines: list[tuple[int, int, str, int]] = []  # (deadline, seq, device, since_ms)
    pending: list[tuple[int, int, SimEvent]] = []
    order = itertools.count()

    def close(device: str) -> None:
        cur = open_at.pop(device)
        del device_of[cur.card]
        origin[device] = (cur.card, cur.last_ms)
        interval = Interval(cur.since_ms, cur.last_ms, cur.games, cur.wager, cur.win, cur.points)
        payload: Payload = {
            **({"epoch": cur.epoch, "seq": 0} if cur.epoch else {"id": f"{cur.first_id}-play"}),
            "type": "play",
            "ts": cur.last_ts,
            "card": cur.card,
            "area": cur.area,
        }
        payload.update(play_fields(stamper.stamp(cur.since_ms), interval))
        event = SimEvent(cur.last_ms, "egm", device, payload)
        heapq.heappush(pending, (cur.last_ms, next(order), event))

    for event in events:
        now, device, p = event.t_ms, event.device, event.payload
        while deadlines and deadlines[0][0] <= now:
            _, _, gone, since = heapq.heappop(deadlines)
            if gone in open_at and open_at[gone].since_ms == since:
                close(gone)
        card, kind = str(p["card"]), p["type"]
        cur = open_at.get(device)
        if cur is not None and (kind != "game" or cur.card != card or now >= cur.deadline):
            close(device)
        if card in device_of and device_of[card] != device:
            close(device_of[card])
        if kind != "game":
            if kind == "card_in":
                origin[device] = (card, now)
            elif kind == "card_out":
                origin.pop(device, None)
            heapq.heappush(pending, (now, next(order), event))
        else:
            if device not in open_at:
                known = origin.get(device)
                since = cuts.since(known[1] if known and known[0] == card else now - 1, now)
                open_at[device] = _Open(
                    card,
                    p["area"],
                    str(p.get("id", "")),
                    since,
                    cuts.deadline(since, now),
                    str(p.get("epoch", "")),
                )
                device_of[card] = device
                heapq.heappush(deadlines, (open_at[device].deadline, next(order), device, since))
            cur = open_at[device]
            cur.last_ms, cur.last_ts = now, str(p["ts"])
            cur.games += 1
            cur.wager += int(p["wager_cents"])
            cur.win += int(p["win_cents"])
            cur.points += int(p["points"])
        # every open interval started after now - max_ms, so its ts will be later still
        while pending and pending[0][0] <= now - cuts.max_ms:
            yield heapq.heappop(pending)[2]
    for device in sorted(open_at, key=lambda d: (open_at[d].since_ms, d)):
        close(device)
    while pending:
        yield heapq.heappop(pending)[2]
