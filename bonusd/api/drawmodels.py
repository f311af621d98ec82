"""What the draw routes (`bonusd.api.draws`) answer: a draw's book (rounds, seats, claims
with their deadlines, proxies), its verification and a prize letter, and the functions
that build them from the draw's `DrawBook`."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel

from bonusd.api.models import Deadline, IsoTime, deadline_of
from bonusd.draws.book import DrawBook
from bonusd.draws.claims import DrawClaimState


class DrawRoundOut(BaseModel):
    tombola: str
    round: int
    at: IsoTime  # the round's scheduled instant
    winners: int  # picks the round makes
    seed_commitment: str  # SHA-256 of the round's secret seed, published before the pool
    pool_commitment: str | None  # SHA-256 of the frozen pool file; null until it freezes
    pool_members: int | None  # cards in the frozen pool
    pool_tickets: int | None  # tickets in the frozen pool
    seed: str | None  # the seed (hex) once revealed, so anyone can recompute the picks
    reveals: int  # sealed prize reveals loaded for the round
    picks: int  # picks made in the round so far (drawn, or hand-drawn tickets accepted)
    drawn_at: IsoTime | None  # when the round's first pick was made; null until then


class SeatOut(BaseModel):
    card: str
    board: str  # the leaderboard whose number one holds the seat ("slots", "tables")


class DrawClaimOut(Deadline):
    claim: int
    card: str
    tombola: str
    round: int
    pick: int  # the pick's number in its round, from 1
    state: DrawClaimState
    presenter: str | None  # who presented: the winner's card, or the proxy's document number
    prize: str | None  # the prize's label once a reveal is picked
    letter: str | None  # the prize letter's number once issued


class ProxyOut(BaseModel):
    card: str  # the participant the proxy stands for
    proxy_id: str  # the proxy's identity document number
    name: str


class DrawBookOut(BaseModel):
    """A draw: commitments, pools, picks with their claim states and deadlines."""

    draw: str  # the draw's subject in the audit trail: <promotion>.<draw>
    name: str
    manual: bool  # drawn by hand from printed ticket lists
    rounds: list[DrawRoundOut]
    seats: list[SeatOut]
    claims: list[DrawClaimOut]
    proxies: list[ProxyOut]


class RoundCheckOut(BaseModel):
    tombola: str
    round: int
    ok: bool
    result: str  # what was recomputed, or every mismatch


class DrawVerifyOut(BaseModel):
    draw: str
    chain: str  # "ok ..." when the audit chain is intact
    ok: bool  # the chain is intact and every round's picks recompute
    rounds: list[RoundCheckOut]


class LetterOut(BaseModel):
    number: str
    claim: int
    draw: str
    winner: str  # the winner's card
    prize: str  # the prize's label
    value_cents: int
    issued_at: IsoTime
    expires_at: IsoTime  # the prize lapses when not redeemed by then
    state: DrawClaimState  # the claim's state


def _drawn_at(book: DrawBook, key: tuple[str, int]) -> dt.datetime | None:
    """When round `key` made its first pick: the draw time of its earliest claim."""
    times = [book.claims[cid].draw_at for cid, (k, _) in book.claim_round.items() if k == key]
    return min(times, default=None)


def book_out(book: DrawBook, now: dt.datetime) -> DrawBookOut:
    """The draw `book` as the API shows it at `now` (the claims' seconds left)."""
    rounds = [
        DrawRoundOut(
            tombola=key[0],
            round=key[1],
            at=book.plan.round(key[1]).at,
            winners=rnd.winners,
            seed_commitment=rnd.seed_commitment,
            pool_commitment=rnd.pool.commitment if rnd.pool else None,
            pool_members=rnd.pool.members if rnd.pool else None,
            pool_tickets=rnd.pool.total if rnd.pool else None,
            seed=rnd.seed.hex() if key in book.revealed else None,
            reveals=len(book.prizes.get(key, ())),
            picks=len(rnd.picks) + len(rnd.manual_picks),
            drawn_at=_drawn_at(book, key),
        )
        for key, rnd in sorted(book.draw.rounds.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]
    claims = []
    for cid, claim in book.claims.items():
        (tombola, number), pick = book.claim_round[cid]
        claims.append(
            DrawClaimOut(
                claim=cid,
                card=claim.card,
                tombola=tombola,
                round=number,
                pick=pick,
                state=DrawClaimState(claim.state),
                **deadline_of(claim.deadline_now(), now),
                presenter=claim.presenter,
                prize=claim.prize.label if claim.prize else None,
                letter=claim.letter.number if claim.letter else None,
            )
        )
    return DrawBookOut(
        draw=book.subject,
        name=book.plan.name,
        manual=book.plan.manual,
        rounds=rounds,
        seats=[SeatOut(card=s.card, board=s.board) for s in book.draw.seats.values()],
        claims=claims,
        proxies=[
            ProxyOut(card=p.participant, proxy_id=p.proxy_id, name=p.name)
            for p in book.proxies.proxies.values()
        ],
    )


def letter_out(book: DrawBook, number: str) -> LetterOut | None:
    """Prize letter `number` of the draw `book`, or None when no claim of it holds one."""
    for cid, claim in book.claims.items():
        if claim.letter is not None and claim.letter.number == number:
            lt = claim.letter
            return LetterOut(
                number=lt.number,
                claim=cid,
                draw=book.subject,
                winner=lt.winner,
                prize=lt.prize.label,
                value_cents=lt.prize.value_cents,
                issued_at=lt.issued_at,
                expires_at=lt.expires_at,
                state=DrawClaimState(claim.state),
            )
    return None
