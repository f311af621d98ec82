"""HTTP routes for telling the winner and the floor: the SMS outbox (desk), the PA
announcements of a draw or a RAPS session (crew, desk) and the printable prize letter
(desk). Thin: the words are `bonusd.notices.announcements` and `bonusd.notices.smstext`,
the outbox is `bonusd.notices.outbox`, the page is `bonusd.notices.letterprint`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, cast

from fastapi import FastAPI, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from bonusd.access.auth import Principal, Role
from bonusd.api.errors import json_errors_of
from bonusd.draws.book import subject_of
from bonusd.draws.rounds import DrawError
from bonusd.notices.announcements import announcements, occasion_of, winner_events
from bonusd.notices.letterprint import LetterFacts, Paper, letter_page
from bonusd.notices.outbox import Outbox, OutboxEntry, OutboxError, Status

if TYPE_CHECKING:
    from bonusd.api.context import ApiContext

ID = Path(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")
ENTRY = Path(pattern=r"^[0-9]{1,12}$", description="Outbox entry id (the audit record's seq)")


def _entry_json(entry: OutboxEntry) -> dict[str, Any]:
    out = dataclasses.asdict(entry)
    for name, value in out.items():
        out[name] = value.isoformat() if hasattr(value, "isoformat") else value
    out["status"] = str(entry.status)
    return out


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


def add_notice_routes(app: FastAPI, ctx: ApiContext, guard: Any) -> None:
    tags: list[str | Enum] = ["notices"]
    outbox = Outbox(ctx.store.redis, ctx.store.keys)
    readers = guard(ctx, Role.CREW, Role.DESK)
    desk_role = guard(ctx, Role.DESK)

    async def _refused(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    app.add_exception_handler(OutboxError, _refused)

    @app.get("/sms/outbox", tags=tags, dependencies=[desk_role])
    async def sms_outbox(
        status: Status | None = None,
        count: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> dict[str, Any]:
        """The SMS outbox: where texts go (the gateway), counts by status, and the newest
        entries with their status, attempts and last error."""
        entries = [e for e in await outbox.entries() if status is None or e.status is status]
        return await outbox.report() | {"entries": [_entry_json(e) for e in entries[:count]]}

    @app.post("/sms/outbox/{entry}/retry", tags=tags)
    async def sms_retry(
        entry: Annotated[str, ENTRY], principal: Principal = desk_role
    ) -> dict[str, Any]:
        """Send a failed text again once its cause is fixed (a refused secret, a number
        corrected in the member file); an out-of-date text is refused."""
        who = principal.name or principal.token_id
        return _entry_json(await outbox.requeue(entry, ctx.clock.now(), by=who))

    async def _announced(subject: str, occasion_subject: str = "") -> dict[str, Any]:
        """The announcements of the ledger `subject`, in the words of `occasion_subject`'s
        occasion (a RAPS session's ledger holds all its jackpots, which share one)."""
        promotion = ctx.promotions.promotion(subject.partition(".")[0])
        occasion = occasion_of(promotion, occasion_subject or subject)
        records = await ctx.audit.ledger(subject)
        names = await _names(ctx, (e.card for e in winner_events(records)))
        said = announcements(records, occasion, names)
        return {
            "subject": subject,
            "name": occasion.name,
            "announcements": [
                dataclasses.asdict(a) | {"at": a.at.isoformat(), "moment": str(a.moment)}
                for a in said
            ],
        }

    @app.get("/promotions/{promotion}/draws/{draw}/announcements", tags=tags)
    async def draw_announcements(
        promotion: Annotated[str, ID], draw: Annotated[str, ID], _: Principal = readers
    ) -> dict[str, Any]:
        """The PA text for each winner and outcome of the draw, oldest first, ready to
        read out (full names: for the crew and the desk, not for public screens)."""
        ctx.draws.plan(promotion, draw)
        return await _announced(subject_of(promotion, draw))

    @app.get("/promotions/{promotion}/jackpots/{session}/announcements", tags=tags)
    async def jackpot_announcements(
        promotion: Annotated[str, ID], session: Annotated[str, ID], _: Principal = readers
    ) -> dict[str, Any]:
        """The PA text for each RAPS winner and outcome of the session, oldest first."""
        subject = ctx.jackpots.plan(promotion, session).subject
        return await _announced(subject, f"{subject}.j1")

    @app.get(
        "/letters/{number}/print",
        tags=tags,
        response_class=HTMLResponse,
        responses=json_errors_of("printable letter"),
    )
    async def letter_print(
        number: Annotated[str, Path(max_length=120)],
        paper: Paper = "A5",
        _: Principal = desk_role,
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
