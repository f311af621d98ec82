"""HTTP routes of RAPS jackpots: run one now, read a session, every claim action, the
decline register and a jackpot's verification. Thin: rules in `bonusd.raps.book`, the
Redis side in `bonusd.raps.desk`."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, Path, Query, Response
from pydantic import BaseModel

from bonusd.access.auth import Principal, Role
from bonusd.api.draws import CLAIM, ID, actor, deadline_fields, verified
from bonusd.api.fields import Card
from bonusd.raps.book import RapsBook

if TYPE_CHECKING:
    from bonusd.api.context import ApiContext
    from bonusd.raps.desk import JackpotDesk

NUMBER = Path(ge=1, le=1000)
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


class DeclineIn(BaseModel):
    card: Card


def session_json(book: RapsBook, now: dt.datetime) -> dict[str, Any]:
    claims = []
    for cid, c in book.claims.items():
        claims.append(
            {
                "claim": cid,
                "jackpot": book.claim_jackpot[cid],
                "card": c.card,
                "device": c.device,
                "area": c.area,
                "bank": c.bank,
                "state": str(c.state),
                "won": c.won,
                **deadline_fields(c.deadline_now(), now),
            }
        )
    return {
        "session": book.subject,
        "jackpots": [
            {"number": n, "id": j.jackpot_id, "at": j.at.isoformat(), "attempt": j.attempt}
            for n, j in sorted(book.jackpots.items())
        ],
        "declined": sorted(book.register.signed),
        "claims": claims,
    }


def add_jackpot_routes(app: FastAPI, ctx: ApiContext, guard: Any, desk: JackpotDesk) -> None:
    tags: list[str | Enum] = ["jackpots"]
    base = "/promotions/{promotion}/jackpots/{session}"
    desk_role = guard(ctx, Role.DESK)

    @app.post(f"{base}/{{number}}/run", tags=tags)
    async def run(
        promotion: Annotated[str, ID],
        session: Annotated[str, ID],
        number: Annotated[int, NUMBER],
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        """Run jackpot `number` of the session now (idempotent)."""
        await desk.run_jackpot(promotion, session, number, actor(principal))
        return session_json(await desk.book(promotion, session), ctx.clock.now())

    @app.get(base, tags=tags, dependencies=[guard(ctx, Role.CREW, Role.DESK)])
    async def read(promotion: Annotated[str, ID], session: Annotated[str, ID]) -> dict[str, Any]:
        return session_json(await desk.book(promotion, session), ctx.clock.now())

    @app.post(f"{base}/declines", tags=tags)
    async def decline(
        promotion: Annotated[str, ID],
        session: Annotated[str, ID],
        body: DeclineIn,
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        """Sign a member into the session's decline register (until the session starts)."""
        await desk.sign_decline(promotion, session, body.card, actor(principal))
        return session_json(await desk.book(promotion, session), ctx.clock.now())

    @app.get(f"{base}/{{number}}/verify", tags=tags, dependencies=[desk_role])
    async def verify(
        promotion: Annotated[str, ID], session: Annotated[str, ID], number: Annotated[int, NUMBER]
    ) -> dict[str, Any]:
        chain, rounds = await desk.verify(f"{promotion}.{session}.j{number}")
        return {
            "chain": chain,
            "ok": verified(chain, rounds),
            "attempts": [{"attempt": k[1], "result": str(v)} for k, v in sorted(rounds.items())],
        }

    @app.get(f"{base}/{{number}}/eligibility", tags=tags, dependencies=[desk_role])
    async def eligibility(
        promotion: Annotated[str, ID],
        session: Annotated[str, ID],
        number: Annotated[int, NUMBER],
        attempt: Annotated[int, Query(ge=0, description="0: the latest attempt")] = 0,
    ) -> Response:
        """Who was eligible at the jackpot instant (with their place) and why every other
        carded-in player was not, rebuilt from the archived floor snapshot."""
        ref = f"{promotion}.{session}.j{number}"
        report = await desk.eligibility_report(ref, attempt)
        return Response(report, media_type="application/json")

    for action, (segment, roles) in RAPS_ACTIONS.items():
        _route(
            app,
            ctx,
            guard(ctx, *roles),
            desk,
            action=action,
            path=f"{base}/claims/{{claim}}/{segment}",
        )


def _route(
    app: FastAPI, ctx: ApiContext, dependency: Any, desk: JackpotDesk, *, action: str, path: str
) -> None:
    async def raps_action(
        promotion: Annotated[str, ID],
        session: Annotated[str, ID],
        claim: Annotated[int, CLAIM],
        principal: Principal = dependency,
    ) -> dict[str, Any]:
        await desk.act(promotion, session, claim, action, actor(principal))
        return session_json(await desk.book(promotion, session), ctx.clock.now())

    raps_action.__name__ = f"raps_{action}"
    app.post(path, tags=["claims"], summary=f"RAPS claim: {action.replace('_', ' ')}")(raps_action)
