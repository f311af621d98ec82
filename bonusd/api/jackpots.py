"""HTTP routes of RAPS jackpots: a promotion's sessions, run one now, read a session,
every claim action (a reselection with its reason), the desk's approval of one more crew
reselection, the decline register, a jackpot's verification and its eligibility report.
Thin: rules in `bonusd.raps.book` and `bonusd.raps.reselection`, the Redis side in
`bonusd.raps.runner`."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, Response
from pydantic import BaseModel

from bonusd.access.auth import Principal, Role
from bonusd.api.context import Ctx, Desk, require
from bonusd.api.draws import CLAIM, ID, actor, verified
from bonusd.api.fields import Card, Reason
from bonusd.api.models import Deadline, IsoTime, deadline_of
from bonusd.errors import NotFoundError
from bonusd.raps.book import RapsBook
from bonusd.raps.claim import RapsClaimState
from bonusd.raps.reselection import REASONED
from bonusd.raps.rules import IneligibleReason

NUMBER = Path(ge=1, le=1000)
BASE = "/promotions/{promotion}/jackpots/{session}"
# claim action -> (path segment, roles)
RAPS_ACTIONS = {
    "crew_arrived": ("at-device", (Role.CREW,)),
    "verify_at_device": ("verified-at-device", (Role.CREW,)),
    "not_at_device": ("not-at-device", (Role.CREW,)),
    "not_owner": ("not-owner", (Role.CREW,)),
    "announce": ("announce", (Role.CREW, Role.DESK)),
    "present": ("present", (Role.CREW,)),
    "verify": ("verify", (Role.CREW,)),
    "declined_register": ("declined-register", (Role.CREW, Role.DESK)),
    "reselect": ("reselect", (Role.CREW, Role.DESK)),
}

router = APIRouter(tags=["jackpots"])


class DeclineIn(BaseModel):
    card: Card


class ReasonIn(BaseModel):
    """Why: a card not its holder's, a reselection, or the desk's approval of one more."""

    reason: Reason


class JackpotOut(BaseModel):
    number: int
    id: str  # the jackpot's reference in the audit trail: <promotion>.<session>.j<number>
    at: IsoTime  # its scheduled instant
    attempt: int  # 0 until it runs; one more for every empty pool's retry
    reselections: int  # the crew's reselections so far (docs/draws.md, "Bounded reselection")
    reselections_allowed: int  # the series' max_reselections and one per desk approval


class RapsClaimOut(Deadline):
    claim: int
    jackpot: int  # the jackpot's number in the session
    card: str
    device: str
    area: str
    bank: str
    state: RapsClaimState
    won: bool  # the prize is theirs (verified at the device or on stage, or registered)


class SessionOut(BaseModel):
    """A RAPS session: its jackpots, the decline register and every claim."""

    session: str
    jackpots: list[JackpotOut]
    declined: list[str]  # cards signed into the decline register
    claims: list[RapsClaimOut]


class AttemptOut(BaseModel):
    attempt: int
    result: str  # "ok" or what did not recompute


class JackpotVerifyOut(BaseModel):
    chain: str  # "ok ..." when the audit chain is intact
    ok: bool  # the chain is intact and every attempt's pick recomputes
    attempts: list[AttemptOut]


class PlaceOut(BaseModel):
    card: str
    device: str
    area: str
    bank: str
    seat: str


class IneligibleOut(BaseModel):
    card: str
    device: str
    reasons: list[IneligibleReason]


class EligibilityOut(BaseModel):
    """Who was in a jackpot attempt's pool (in pool order) and why every other carded-in
    player was not, rebuilt from the archived floor snapshot."""

    jackpot_id: str
    attempt: int
    at: str  # the jackpot instant, UTC
    eligible: list[PlaceOut]
    ineligible: list[IneligibleOut]


def session_out(book: RapsBook, now: dt.datetime) -> SessionOut:
    claims = [
        RapsClaimOut(
            claim=cid,
            jackpot=book.claim_jackpot[cid],
            card=c.card,
            device=c.device,
            area=c.area,
            bank=c.bank,
            state=c.state,
            won=c.won,
            **deadline_of(c.deadline_now(), now),
        )
        for cid, c in book.claims.items()
    ]
    return SessionOut(
        session=book.subject,
        jackpots=[
            JackpotOut(
                number=n,
                id=j.jackpot_id,
                at=j.at,
                attempt=j.attempt,
                reselections=j.reselections.made,
                reselections_allowed=j.reselections.allowed,
            )
            for n, j in sorted(book.jackpots.items())
        ],
        declined=sorted(book.register.signed),
        claims=claims,
    )


@router.post(f"{BASE}/{{number}}/run")
async def run(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    session: Annotated[str, ID],
    number: Annotated[int, NUMBER],
    principal: Desk,
) -> SessionOut:
    """Run jackpot `number` of the session now (idempotent)."""
    await ctx.jackpots.run_jackpot(promotion, session, number, actor(principal))
    return session_out(await ctx.jackpots.book(promotion, session), ctx.clock.now())


@router.get(BASE, dependencies=[require(Role.CREW, Role.DESK)])
async def read(ctx: Ctx, promotion: Annotated[str, ID], session: Annotated[str, ID]) -> SessionOut:
    """The session: its jackpots, decline register and claims with their deadlines."""
    return session_out(await ctx.jackpots.book(promotion, session), ctx.clock.now())


@router.post(f"{BASE}/declines")
async def decline(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    session: Annotated[str, ID],
    body: DeclineIn,
    principal: Desk,
) -> SessionOut:
    """Sign a member into the session's decline register (until the session starts)."""
    await ctx.jackpots.sign_decline(promotion, session, body.card, actor(principal))
    return session_out(await ctx.jackpots.book(promotion, session), ctx.clock.now())


@router.post(f"{BASE}/{{number}}/reselections/approve")
async def approve_reselection(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    session: Annotated[str, ID],
    number: Annotated[int, NUMBER],
    principal: Desk,
    *,
    body: ReasonIn,
) -> SessionOut:
    """Grant the crew one more reselection of jackpot `number`, once its allowance
    (`max_reselections`) is used up; recorded with the desk member's name and reason."""
    who = actor(principal)
    await ctx.jackpots.approve_reselection(promotion, session, number, who, body.reason)
    return session_out(await ctx.jackpots.book(promotion, session), ctx.clock.now())


@router.get(f"{BASE}/{{number}}/verify", dependencies=[require(Role.DESK)])
async def verify(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    session: Annotated[str, ID],
    number: Annotated[int, NUMBER],
) -> JackpotVerifyOut:
    """Recompute every attempt's pick from its revealed seed and archived pool."""
    chain, rounds = await ctx.jackpots.verify(f"{promotion}.{session}.j{number}")
    return JackpotVerifyOut(
        chain=chain,
        ok=verified(chain, rounds),
        attempts=[AttemptOut(attempt=k[1], result=str(v)) for k, v in sorted(rounds.items())],
    )


@router.get(
    f"{BASE}/{{number}}/eligibility",
    dependencies=[require(Role.DESK)],
    response_class=Response,
    responses={200: {"model": EligibilityOut, "description": "The eligibility report"}},
)
async def eligibility(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    session: Annotated[str, ID],
    number: Annotated[int, NUMBER],
    attempt: Annotated[int, Query(ge=0, description="0: the latest attempt")] = 0,
) -> Response:
    """Who was eligible at the jackpot instant (with their place) and why every other
    carded-in player was not, rebuilt from the archived floor snapshot. (Served as the
    canonical JSON it is archived as; its form is `EligibilityOut`.)"""
    report = await ctx.jackpots.eligibility_report(f"{promotion}.{session}.j{number}", attempt)
    return Response(report, media_type="application/json")


class SessionItemOut(BaseModel):
    """A RAPS session of a promotion, as the pages list them."""

    id: str
    name: str
    date: dt.date
    start: str  # HH:MM, the floor's local time
    end: str  # HH:MM
    areas: list[str]  # the floor areas whose players take part


@router.get("/promotions/{promotion}/jackpots", dependencies=[require(Role.CREW, Role.DESK)])
async def jackpot_sessions(ctx: Ctx, promotion: Annotated[str, ID]) -> list[SessionItemOut]:
    """The promotion's RAPS jackpot sessions: id, date, hours and areas."""
    try:
        found = ctx.promotions.promotion(promotion)
    except NotFoundError as exc:
        raise HTTPException(404, str(exc)) from exc
    return [
        SessionItemOut(
            id=s.id,
            name=s.name,
            date=s.date,
            start=s.start.strftime("%H:%M"),
            end=s.end.strftime("%H:%M"),
            areas=list(s.areas),
        )
        for s in found.jackpot_sessions
    ]


def _claim_route(action: str, segment: str, roles: tuple[Role, ...]) -> None:
    allowed = require(*roles)

    async def raps_action(
        ctx: Ctx,
        promotion: Annotated[str, ID],
        session: Annotated[str, ID],
        claim: Annotated[int, CLAIM],
        principal: Principal = allowed,  # a default: a local cannot be in an annotation
    ) -> SessionOut:
        await ctx.jackpots.act(promotion, session, claim, action, actor(principal))
        return session_out(await ctx.jackpots.book(promotion, session), ctx.clock.now())

    async def raps_reselection(
        ctx: Ctx,
        promotion: Annotated[str, ID],
        session: Annotated[str, ID],
        claim: Annotated[int, CLAIM],
        principal: Principal = allowed,
        *,
        body: ReasonIn,
    ) -> SessionOut:
        """A reselection of the jackpot, with its reason. The crew's are bounded: at most
        the series' `max_reselections` (more with the desk's approval), each at least
        `reselect_spacing_s` after the selection was announced to the crew (409 otherwise)."""
        who = actor(principal)
        await ctx.jackpots.act(promotion, session, claim, action, who, reason=body.reason)
        return session_out(await ctx.jackpots.book(promotion, session), ctx.clock.now())

    route = raps_reselection if action in REASONED else raps_action
    route.__name__ = f"raps_{action}"
    summary = f"RAPS claim: {action.replace('_', ' ')}"
    router.post(f"{BASE}/claims/{{claim}}/{segment}", tags=["claims"], summary=summary)(route)


for _action, (_segment, _roles) in RAPS_ACTIONS.items():
    _claim_route(_action, _segment, _roles)
