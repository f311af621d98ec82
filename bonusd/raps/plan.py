"""A RAPS session as the promotion file defines it, in the terms its book needs: the
jackpot instants, the eligibility rules, the decline register's opening; and the state
of one jackpot while its session runs. Pure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from bonusd.audit.chain import Json
from bonusd.promotions.schedule import jackpot_times
from bonusd.promotions.schema import JackpotSession, Promotion
from bonusd.raps.reselection import Reselections
from bonusd.raps.rules import Jackpot, RapsError, RapsRules
from bonusd.raps.snapshot import FloorSnapshot

Times = Sequence[dt.datetime] | None


def jackpot_number(jid: str) -> int:
    return int(jid.rpartition(".j")[2])


def rules_of(promotion: Promotion, session: JackpotSession) -> RapsRules:
    """A session's eligibility rules as its promotion file sets them."""
    return RapsRules(
        areas=frozenset(session.areas),
        min_spend_cents=session.min_spend_cents,
        active_window=dt.timedelta(minutes=session.active_play_minutes),
        tiers=frozenset(t.value for t in promotion.tiers),  # an unregistered card has none
    )


@dataclass(frozen=True)
class SessionPlan:
    """What the promotion file says about one RAPS session, in the terms the book needs."""

    subject: str
    session: JackpotSession  # areas, claim_seconds, decline_register, empty_pool, ...
    times: tuple[dt.datetime, ...]  # jackpot n is at times[n - 1]
    starts_at: dt.datetime
    register_opens: dt.datetime  # the gaming day's opening
    rules: RapsRules

    @classmethod
    def of(cls, promotion: Promotion, session: JackpotSession, times: Times = None) -> SessionPlan:
        """`times`: the jackpot instants of a session with random times (as scheduled)."""
        starts = dt.datetime.combine(session.date, session.start, promotion.zone)
        rules = rules_of(promotion, session)
        at = tuple(times) if times is not None else jackpot_times(promotion, session)
        opens = promotion.calendar.day_opens(promotion.calendar.gaming_day(starts))
        return cls(f"{promotion.id}.{session.id}", session, at, starts, opens, rules)

    def at(self, number: int) -> dt.datetime:
        if not 1 <= number <= len(self.times):
            raise RapsError(
                f"session {self.subject} has jackpots 1 to {len(self.times)}, not {number}"
            )
        return self.times[number - 1]


@dataclass
class JackpotState:
    """One jackpot of the session: its seed, current attempt's pool and picks, the crew's
    reselections, outcome."""

    number: int
    at: dt.datetime
    jackpot_id: str
    reselections: Reselections  # the crew's, counted and spaced
    seed: bytes | None = None
    commitment: str = ""  # the seed's (SHA-256 hex), once committed
    jackpot: Jackpot | None = None  # the current attempt's pool and stream
    attempt: int = 0
    prizes: int = 1  # more when an earlier jackpot's prize was carried over to this one
    claims: list[int] = field(default_factory=list)
    floor: FloorSnapshot | None = None  # the current attempt's floor
    retry_at: dt.datetime | None = None
    outcome: str = ""  # "", "skipped", "carried_over" or "nobody_left"; won: see claims
    revealed: bool = False
    summary: dict[str, Json] = field(default_factory=dict)
    exceptions: list[dict[str, str]] = field(default_factory=list)  # e.g. a missed time
    excluded: set[str] = field(default_factory=set)  # excluded after this attempt's freeze

    @property
    def to_pick(self) -> bool:
        """Still to be picked from the floor: not run yet, or an empty pool's retry to come
        (a claim's reselection picks from the frozen pool)."""
        return not (self.outcome or self.claims) and (
            self.attempt == 0 or self.retry_at is not None
        )


class Due(NamedTuple):
    """A timer: a claim's announcement running out, or an empty pool's retry."""

    at: dt.datetime
    jackpot: int
    claim_id: int | None
    action: str  # "reselect", "declined_register" or "retry"
