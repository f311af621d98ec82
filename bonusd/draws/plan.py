"""What the ledger of a draw is written in: the draw's plan from the promotion file
(rounds, winners, prizes, claim time, proxy forms, letters), and the text forms of its
records' actors, times and subject. Pure: no I/O, no clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from bonusd.draws.claims import Actor, ClaimRole, Prize
from bonusd.draws.fairness import Pool
from bonusd.draws.rounds import DrawError, RoundKey
from bonusd.promotions.schema import Draw as DrawSpec
from bonusd.promotions.schema import Promotion
from bonusd.promotions.terms import rands
from bonusd.promotions.timing import bin_closes_at, prize_letters_lapse_at, round_instants

SCHEDULER = Actor("scheduler", ClaimRole.SYSTEM)


def actor_text(actor: Actor) -> str:
    return f"{actor.name} ({actor.role.value})"


def parse_actor(text: str) -> Actor:
    name, _, role = text.rpartition(" (")
    return Actor(name, ClaimRole(role.rstrip(")")))


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)


def subject_of(promotion_id: str, draw_id: str) -> str:
    """The draw's id in the audit trail and ledger: `promotion.draw`."""
    return f"{promotion_id}.{draw_id}"


@dataclass(frozen=True)
class RoundPlan:
    number: int
    at: dt.datetime
    winners: dict[str, int]  # tombola -> winners
    prizes: tuple[Prize, ...]  # from the promotion file; empty: the desk loads them


@dataclass(frozen=True)
class DrawPlan:
    """What the promotion file says about one draw, in the terms the book needs."""

    subject: str
    promotion_id: str
    draw_id: str
    name: str
    manual: bool
    rounds: tuple[RoundPlan, ...]
    claim_time: dt.timedelta
    proxies_open: dt.datetime
    proxy_cutoff: dt.timedelta
    letters_lapse: dt.datetime
    per_board: int
    bin_closes: dt.datetime  # the entry bin's scheduled close: no pool freezes before it

    @classmethod
    def of(cls, promotion: Promotion, draw: DrawSpec) -> DrawPlan:
        rounds = []
        for number, (spec, at) in enumerate(
            zip(draw.rounds, round_instants(promotion, draw), strict=True), 1
        ):
            name = spec.prize_set or draw.prize_set
            values = promotion.prize_sets[name].values_cents if name else []
            prizes = tuple(Prize(rands(v), v) for v in values)  # what people read: R5,000
            winners = {t.value: n for t, n in spec.winners.items()}
            rounds.append(RoundPlan(number, at, winners, prizes))
        first = rounds[0].at
        opens = dt.datetime.combine(draw.date, promotion.claims.proxy_forms_open, promotion.zone)
        return cls(
            subject=subject_of(promotion.id, draw.id),
            promotion_id=promotion.id,
            draw_id=draw.id,
            name=draw.name,
            manual=draw.mode.value == "manual",
            rounds=tuple(rounds),
            claim_time=dt.timedelta(seconds=promotion.claims.claim_seconds),
            proxies_open=min(opens, first - dt.timedelta(minutes=1)),
            proxy_cutoff=dt.timedelta(minutes=promotion.claims.proxy_cutoff_minutes),
            letters_lapse=prize_letters_lapse_at(promotion, draw),
            per_board=draw.seats.per_board if draw.seats else 1,
            bin_closes=bin_closes_at(promotion, draw),
        )

    def round(self, number: int) -> RoundPlan:
        if not 1 <= number <= len(self.rounds):
            raise DrawError(f"draw {self.subject} has rounds 1 to {len(self.rounds)}, not {number}")
        return self.rounds[number - 1]

    @property
    def keys(self) -> list[RoundKey]:
        return [(t, r.number) for r in self.rounds for t in r.winners]


PoolFiles = Callable[[str], Pool]
"""Pool commitment -> the archived pool."""
