"""Leaderboards: ranking members per draw and side by window points, and seating leaders.

A board holds the members who may take part in the draw (never an excluded member, nor
one under age on the draw date, nor one of a tier the draw is not open to) and, by
default, only those whose side qualifies ("a minimum of 20,000 points ... to be a part of
the leader board"). Ties go to whoever reached the tying total first; a remaining tie
(same instant) is settled by card number so the order is always total.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bonusd.promotions.kinds import QualificationKind, Side
from bonusd.promotions.rules import ineligibility
from bonusd.promotions.schema import Draw, Promotion
from bonusd.registry.records import Member


@dataclass(frozen=True)
class BoardEntry:
    """A member's window points on one side and when they reached that total."""

    member: Member
    points: int
    reached_at: dt.datetime


@dataclass(frozen=True)
class Ranked:
    position: int  # 1 is the leader; positions are unique
    card: str
    points: int
    reached_at: dt.datetime


@dataclass(frozen=True)
class Seat:
    """A leader seated at the draw from `board`, where they held `position`."""

    board: Side
    position: int
    card: str
    points: int


def rank_leaderboard(
    promotion: Promotion,
    draw: Draw | str,
    side: Side,
    entries: Iterable[BoardEntry],
    *,
    qualified_only: bool = True,
    on_date: dt.date | None = None,
) -> tuple[Ranked, ...]:
    """The `side` board of `draw`, best first. `qualified_only=False` gives the live
    board the promotions team watches, with members still below the threshold."""
    if isinstance(draw, str):
        draw = promotion.draw(draw)
    rule = draw.qualification
    if rule.kind is QualificationKind.ACTIVES or side not in rule.sides:
        raise ValueError(f"draw {draw.id} has no {side.value} leaderboard")
    floor = 1
    if qualified_only and rule.kind is QualificationKind.THRESHOLD and rule.threshold:
        floor = rule.threshold
    seen: set[str] = set()
    board: list[BoardEntry] = []
    for entry in entries:
        if entry.member.card in seen:
            raise ValueError(f"card {entry.member.card} appears twice on one board")
        seen.add(entry.member.card)
        if entry.points < floor or (not qualified_only and entry.points <= 0):
            continue
        if ineligibility(promotion, draw, entry.member, on_date=on_date):
            continue
        board.append(entry)
    board.sort(key=lambda e: (-e.points, e.reached_at, e.member.card))
    return tuple(
        Ranked(position=i, card=e.member.card, points=e.points, reached_at=e.reached_at)
        for i, e in enumerate(board, start=1)
    )


def seat_holders(
    promotion: Promotion, draw: Draw | str, boards: Mapping[Side, Sequence[Ranked]]
) -> tuple[Seat, ...]:
    """The members the draw seats from its boards, in the order of `seats.boards`.

    A member wins once per draw, so a leader of two boards takes one seat and the second
    board's seat passes to its next member not yet seated."""
    if isinstance(draw, str):
        draw = promotion.draw(draw)
    if draw.seats is None:
        return ()
    seats: list[Seat] = []
    taken: set[str] = set()
    for side in draw.seats.boards:
        candidates = (r for r in boards.get(side, ()) if r.card not in taken)
        for ranked, _ in zip(candidates, range(draw.seats.per_board), strict=False):
            seats.append(Seat(side, ranked.position, ranked.card, ranked.points))
            taken.add(ranked.card)
    return tuple(seats)
