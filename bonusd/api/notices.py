"""HTTP routes for telling the winner and the floor: the SMS outbox (desk), the PA
announcements of a draw or a RAPS session (crew, desk) and the printable prize letter
(desk). Thin: the words are `bonusd.notices.announcements` and `bonusd.notices.smstext`,
the outbox is `bonusd.notices.outbox`, the page is `bonusd.notices.letterprint`. A refused
outbox request (`OutboxError`) answers 409 (its handler is in `bonusd.api.app`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, cast

from fastapi import APIRouter, Path, Query
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict

from bonusd.access.auth import Role
from bonusd.api.context import ApiContext, Ctx, Desk, require
from bonusd.api.errors import json_errors_of
from bonusd.api.models import IsoTime
from bonusd.draws.book import subject_of
from bonusd.draws.rounds import DrawError
from bonusd.notices.announcements import Moment, announcements, occasion_of, winner_events
from bonusd.notices.letterprint import LetterFacts, Paper, letter_page
from bonusd.notices.outbox import Outbox, Status

ID = Path(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")
ENTRY = Path(pattern=r"^[0-9]{1,12}$", description="Outbox entry id (the audit record's seq)")

router = APIRouter(tags=["notices"])


class OutboxEntryOut(BaseModel):
    """One text to one winner."""

    model_config = ConfigDict(from_attributes=True)

    id: str  # the seq of the audit record the text tells about
    draw_id: str  # the audit subject: <promotion>.<draw> or <promotion>.<session>.j<n>
    claim: str  # "claim 3", "RAPS claim 2"
    moment: str  # the winner event texted: a `Moment` (drawn, letter, ...)
    card: str  # masked, as in the text
    to: str  # the winner's mobile number ("" when none is on file)
    text: str
    created_at: IsoTime
    expires_at: IsoTime  # not sent after this: the text would mislead
    status: Status
    attempts: int
    last_error: str
    next_attempt_at: IsoTime | None  # while retrying: when again
    sent_at: IsoTime | None


class OutboxCountsOut(BaseModel):
    """The outbox's entries counted by status (every status, 0 included)."""

    model_config = ConfigDict(extra="forbid")  # a new `Status` must be named here

    queued: int
    retrying: int
    sent: int
    failed: int
    expired: int
    no_number: int


class OutboxOut(BaseModel):
    gateway: str  # where texts go, as the running daemon says; "not started" before that
    gateway_since: str | None  # when the daemon said so (ISO 8601)
    audit_position: int  # the seq of the last audit record the notifier has read
    counts: OutboxCountsOut
    entries: list[OutboxEntryOut]  # newest first


class AnnouncementOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    seq: int  # the audit record announced
    at: IsoTime
    moment: Moment
    draw_id: str  # the audit subject: <promotion>.<draw> or <promotion>.<session>.j<n>
    claim: str  # "claim 3", "RAPS claim 2"
    card: str  # masked: ****3456
    name: str  # the winner's full name (crew and desk only), "" when not registered
    text: str  # the words to read out


class AnnouncementsOut(BaseModel):
    subject: str  # the draw's or the session's subject in the audit trail
    name: str  # the draw's or the session's name
    announcements: list[AnnouncementOut]  # oldest first


def _outbox(ctx: ApiContext) -> Outbox:
    return Outbox(ctx.store.redis, ctx.store.keys)


async def _names(ctx: ApiContext, cards: Iterable[str]) -> dict[str, str]:
    """Full names of registered cards (crew and desk only: never a public screen)."""
    wanted = sorted(set(cards))
    if not wanted:
        return {}
    async with ctx.store.redis.pipeline(transaction=False) as pipe:
        for card in wanted:
            pipe.hget(ctx.store.keys.member(card), "name")
        found = cast(list[str | None], await pipe.execute())
    return {c: n for c, n in zip(wanted, found, strict=True) if n}


async def _announced(ctx: ApiContext, subject: str, occasion_subject: str = "") -> AnnouncementsOut:
    """The announcements of the ledger `subject`, in the words of `occasion_subject`'s
    occasion (a RAPS session's ledger holds all its jackpots, which share one)."""
    promotion = ctx.promotions.promotion(subject.partition(".")[0])
    occasion = occasion_of(promotion, occasion_subject or subject)
    records = await ctx.audit.ledger(subject)
    names = await _names(ctx, (e.card for e in winner_events(records)))
    said = announcements(records, occasion, names)
    return AnnouncementsOut(
        subject=subject,
        name=occasion.name,
        announcements=[AnnouncementOut.model_validate(a) for a in said],
    )


@router.get("/sms/outbox", dependencies=[require(Role.DESK)])
async def sms_outbox(
    ctx: Ctx,
    status: Status | None = None,
    count: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> OutboxOut:
    """The SMS outbox: where texts go (the gateway), counts by status, and the newest
    entries with their status, attempts and last error."""
    outbox = _outbox(ctx)
    entries = [e for e in await outbox.entries() if status is None or e.status is status]
    report = await outbox.report()
    return OutboxOut(
        gateway=report["gateway"],
        gateway_since=report["gateway_since"],
        audit_position=report["audit_position"],
        counts=OutboxCountsOut.model_validate(report["counts"]),
        entries=[OutboxEntryOut.model_validate(e) for e in entries[:count]],
    )


@router.post("/sms/outbox/{entry}/retry")
async def sms_retry(ctx: Ctx, entry: Annotated[str, ENTRY], principal: Desk) -> OutboxEntryOut:
    """Send a failed text again once its cause is fixed (a refused secret, a number
    corrected in the member file); an out-of-date text is refused."""
    who = principal.name or principal.token_id
    requeued = await _outbox(ctx).requeue(entry, ctx.clock.now(), by=who)
    return OutboxEntryOut.model_validate(requeued)


@router.get(
    "/promotions/{promotion}/draws/{draw}/announcements",
    dependencies=[require(Role.CREW, Role.DESK)],
)
async def draw_announcements(
    ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID]
) -> AnnouncementsOut:
    """The PA text for each winner and outcome of the draw, oldest first, ready to
    read out (full names: for the crew and the desk, not for public screens)."""
    ctx.draws.plan(promotion, draw)
    return await _announced(ctx, subject_of(promotion, draw))


@router.get(
    "/promotions/{promotion}/jackpots/{session}/announcements",
    dependencies=[require(Role.CREW, Role.DESK)],
)
async def jackpot_announcements(
    ctx: Ctx, promotion: Annotated[str, ID], session: Annotated[str, ID]
) -> AnnouncementsOut:
    """The PA text for each RAPS winner and outcome of the session, oldest first."""
    subject = ctx.jackpots.plan(promotion, session).subject
    return await _announced(ctx, subject, f"{subject}.j1")


@router.get(
    "/letters/{number}/print",
    dependencies=[require(Role.DESK)],
    response_class=HTMLResponse,
    responses=json_errors_of("printable letter"),
)
async def letter_print(
    ctx: Ctx, number: Annotated[str, Path(max_length=120)], paper: Paper = "A5"
) -> HTMLResponse:
    """The prize letter as a printable page (A5 or A4): number, winner, card
    (masked), prize, issue and expiry dates."""
    promotion_id, draw_id = await ctx.draws.letter(number)
    book = await ctx.draws.book(promotion_id, draw_id)
    promotion = ctx.promotions.promotion(promotion_id)
    for claim_id, claim in book.claims.items():
        lt = claim.letter
        if lt is None or lt.number != number:
            continue
        member = await ctx.store.member(lt.winner)
        facts = LetterFacts(
            number=lt.number,
            casino=promotion.casino,
            promotion=promotion.name,
            draw=book.plan.name,
            claim=claim_id,
            winner_name=member.name if member else "",
            card=lt.winner,
            prize=lt.prize.label,
            value_cents=lt.prize.value_cents,
            issued_at=lt.issued_at,
            expires_at=lt.expires_at,
            state=str(claim.state),
            zone=promotion.zone,
        )
        return HTMLResponse(letter_page(facts, paper=paper))
    raise DrawError(f"letter {number} is indexed but not in its draw; run bonusd audit verify")
