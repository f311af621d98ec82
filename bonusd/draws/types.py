"""The vocabulary of draws: a round's key, the draw errors, seats and accepted hand-drawn
tickets, shared by the draw logic (`bonusd.draws.rounds`) and its verification
(`bonusd.draws.verify`)."""

from __future__ import annotations

from dataclasses import dataclass

from bonusd.draws.fairness import SkipReason
from bonusd.errors import BonusdError


class DrawError(BonusdError):
    """A draw step was refused; the message says why and what to do instead."""


class ManualTicketError(DrawError):
    """A hand-drawn ticket number was refused; draw another ticket."""

    def __init__(self, draw_id: str, tombola: str, number: int, problem: str) -> None:
        self.draw_id, self.tombola, self.number, self.problem = draw_id, tombola, number, problem
        super().__init__(f"draw {draw_id}, {tombola} tombola: ticket {number} {problem}")


ALREADY, EXCLUDED, SEATED = SkipReason.ALREADY_PICKED, SkipReason.EXCLUDED, SkipReason.SEATED
RoundKey = tuple[str, int]
"""(tombola, round number)."""


@dataclass(frozen=True)
class AutoSeat:
    """An automatic seat: the number one of a leaderboard (e.g. "slots", "tables")."""

    card: str
    board: str


@dataclass(frozen=True)
class ManualPick:
    """A hand-drawn ticket accepted for a manual round."""

    number: int
    ticket_number: int
    card: str
