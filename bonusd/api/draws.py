"""HTTP routes of draws and their claims: run a round, close the entry bin, read the draw,
every claim action, proxies, prizes, manual tickets, prize letters, the draw report and
its verification. The GET routes only read: none freezes a pool or commits a seed.

Thin: the rules live in `bonusd.draws.book` (pure) and the Redis side in `bonusd.draws.desk`.
A refused step answers 409 with the reason, a role that may not act 403.
"""

from __future__ import annotations

import datetime as dt
import html
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Body, FastAPI, Path
from fastapi.responses import HTMLResponse, PlainTextResponse
from pydantic import BaseModel, Field

from bonusd.access.auth import Principal, Role
from bonusd.api.fields import Card, DocumentNumber, Note, PersonName, PoolHash, TombolaName
from bonusd.draws.book import DrawBook, subject_of
from bonusd.draws.claims import Actor, ClaimRole, Prize
from bonusd.draws.evidence import draw_report
from bonusd.draws.rounds import DrawError

if TYPE_CHECKING:
    from bonusd.api.context import ApiContext
    from bonusd.draws.desk import DrawDesk

ID = Path(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")
CLAIM = Path(ge=1, le=100_000)
# claim action -> (the endpoint's path segment, the roles that may call it)
CLAIM_ACTIONS = {
    "present": ("present", (Role.CREW,)),
    "verify": ("verify", (Role.CREW,)),
    "pick_reveal": ("reveal", (Role.CREW,)),
    "no_show": ("no-show", (Role.CREW,)),
    "issue_letter": ("letter", (Role.DESK,)),
    "redeem": ("redeem", (Role.DESK,)),
    "lapse": ("lapse", (Role.DESK,)),
}


class RunIn(BaseModel):
    round: int = Field(ge=1, le=50, description="Round number, from 1")


class ClaimIn(BaseModel):
    proxy_id: DocumentNumber | None = Field(default=None, description="present: the proxy")
    reveal: int | None = Field(default=None, ge=1, description="reveal: the reveal picked")
    id_checked: bool = Field(default=True, description="verify: an ID document was seen")
    receipt_checked: bool = Field(default=True, description="verify: the ticket receipt")


class ProxyIn(BaseModel):
    card: Card
    proxy_id: DocumentNumber
    name: PersonName = ""


class PrizesIn(BaseModel):
    tombola: TombolaName = "pooled"
    round: int = Field(ge=1, le=50)
    values_cents: list[int] = Field(min_length=1, max_length=200)


class TicketIn(BaseModel):
    tombola: TombolaName
    round: int = Field(default=1, ge=1, le=50)
    number: int = Field(ge=1)
    pool: PoolHash | None = None


class ExclusionIn(BaseModel):
    card: Card
    note: Note = ""


def actor(principal: Principal) -> Actor:
    role = ClaimRole.CREW if principal.role is Role.CREW else ClaimRole.DESK
    return Actor(principal.name or principal.token_id, role)


def deadline_fields(deadline: dt.datetime | None, now: dt.datetime) -> dict[str, Any]:
    """A claim's deadline and the seconds left before it, as the pages show them."""
    return {
        "deadline": deadline.isoformat() if deadline else None,
        "seconds_left": max(0.0, (deadline - now).total_seconds()) if deadline else None,
    }


def verified(chain: str, results: dict[Any, Any]) -> bool:
    """A verification passes when the chain is intact and every recomputed pick agrees."""
    return bool(results) and all(v.ok for v in results.values()) and chain.startswith("ok")


def book_json(book: DrawBook, now: dt.datetime) -> dict[str, Any]:
    rounds = []
    for key, rnd in sorted(book.draw.rounds.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rounds.append(
            {
                "tombola": key[0],
                "round": key[1],
                "at": book.plan.round(key[1]).at.isoformat(),
                "winners": rnd.winners,
                "seed_commitment": rnd.seed_commitment,
                "pool_commitment": rnd.pool.commitment if rnd.pool else None,
                "pool_members": rnd.pool.members if rnd.pool else None,
                "pool_tickets": rnd.pool.total if rnd.pool else None,
                "seed": rnd.seed.hex() if key in book.revealed else None,
                "reveals": len(book.prizes.get(key, ())),
            }
        )
    claims = []
    for cid, c in book.claims.items():
        (tombola, number), pick = book.claim_round[cid]
        claims.append(
            {
                "claim": cid,
                "card": c.card,
                "tombola": tombola,
                "round": number,
                "pick": pick,
                "state": str(c.state),
                **deadline_fields(c.deadline_now(), now),
                "presenter": c.presenter,
                "prize": c.prize.label if c.prize else None,
                "letter": c.letter.number if c.letter else None,
            }
        )
    return {
        "draw": book.subject,
        "name": book.plan.name,
        "manual": book.plan.manual,
        "rounds": rounds,
        "seats": [{"card": s.card, "board": s.board} for s in book.draw.seats.values()],
        "claims": claims,
        "proxies": [
            {"card": p.participant, "proxy_id": p.proxy_id, "name": p.name}
            for p in book.proxies.proxies.values()
        ],
    }


def add_draw_routes(app: FastAPI, ctx: ApiContext, guard: Any, desk: DrawDesk) -> None:
    tags: list[str | Enum] = ["draws"]
    readers = guard(ctx, Role.CREW, Role.DESK)
    desk_role = guard(ctx, Role.DESK)
    base = "/promotions/{promotion}/draws/{draw}"

    @app.post(f"{base}/run", tags=tags)
    async def run(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        body: RunIn,
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        """Run a round now (the scheduler runs it at its time; running it again changes
        nothing). Refused (409) before the entry bin's scheduled close."""
        await desk.run_round(promotion, draw, body.round, actor(principal))
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    @app.post(f"{base}/close-bin", tags=tags)
    async def close_bin(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        """Close the entry bin now when the scheduler has not (no daemon led at its time):
        freeze the entry pool, seat the leaders, freeze every round's pool, recorded in
        the desk's name. Refused (409, nothing written) before the bin's scheduled close;
        a closed bin is left as it is."""
        await desk.close_bin(promotion, draw, actor(principal))
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    @app.get(f"{base}/book", tags=tags, dependencies=[readers])
    async def read(promotion: Annotated[str, ID], draw: Annotated[str, ID]) -> dict[str, Any]:
        """The draw: commitments, pools, picks with their claim states and deadlines."""
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    for action, (segment, roles) in CLAIM_ACTIONS.items():
        _claim_route(
            app,
            ctx,
            guard(ctx, *roles),
            desk,
            action=action,
            path=f"{base}/claims/{{claim}}/{segment}",
        )

    @app.post(f"{base}/proxies", tags=tags)
    async def proxy(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        body: ProxyIn,
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        await desk.register_proxy(
            promotion,
            draw,
            body.card,
            proxy_id=body.proxy_id,
            name=body.name,
            actor=actor(principal),
        )
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    @app.post(f"{base}/prizes", tags=tags)
    async def prizes(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        body: PrizesIn,
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        """Load a round's prize values; they are sealed into reveals in an order fixed by
        the round's secret seed."""
        values = tuple(Prize(f"R{v / 100:,.2f}", v) for v in body.values_cents)
        await desk.load_prizes(
            promotion, draw, (body.tombola, body.round), values, actor(principal)
        )
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    @app.post(f"{base}/exclusions", tags=tags)
    async def exclusion(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        body: ExclusionIn,
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        await desk.exclude(promotion, draw, body.card, body.note, actor(principal))
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    @app.post(f"{base}/tickets", tags=tags)
    async def ticket(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        body: TicketIn,
        principal: Principal = desk_role,
    ) -> dict[str, Any]:
        """Record a hand-drawn ticket of a manual draw; refused with the reason when it
        does not exist, is not of this pool, or its owner already won or is excluded."""
        await desk.accept_ticket(
            promotion,
            draw,
            (body.tombola, body.round),
            body.number,
            actor=actor(principal),
            printed_pool=body.pool,
        )
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    @app.get(f"{base}/tickets/{{tombola}}/{{round_no}}.csv", tags=tags, dependencies=[desk_role])
    async def tickets_csv(
        promotion: Annotated[str, ID], draw: Annotated[str, ID], tombola: str, round_no: int
    ) -> PlainTextResponse:
        """The numbered ticket list of a round, for a physical tombola: read only, 409
        naming the bin's close while the round's pool is not frozen."""
        book, lines = await desk.ticket_list(promotion, draw, tombola, round_no)
        rows = ["ticket,card"] + [",".join(line.split("\t")) for line in list(lines.lines())[1:]]
        head = f"# draw {book.subject} {tombola} round {round_no} pool {lines.pool_commitment}"
        return PlainTextResponse("\n".join([head, *rows]) + "\n", media_type="text/csv")

    @app.get(f"{base}/tickets/{{tombola}}/{{round_no}}", tags=tags, dependencies=[desk_role])
    async def tickets_page(
        promotion: Annotated[str, ID], draw: Annotated[str, ID], tombola: str, round_no: int
    ) -> HTMLResponse:
        """The ticket list as a printable page: one cut-out slip per ticket (read only, as
        the CSV)."""
        book, tl = await desk.ticket_list(promotion, draw, tombola, round_no)
        slips = "".join(
            f"<div class=s><b>{n}</b><span>{html.escape(card)}</span></div>"
            for first, last, card in tl.ranges
            for n in range(first, last + 1)
        )
        title = html.escape(f"{book.plan.name} — {tombola} round {round_no}")
        page = (
            f"<!doctype html><meta charset=utf-8><title>{title}</title><style>"
            "body{font-family:sans-serif}.s{display:inline-block;width:30mm;height:15mm;"
            "border:1px dashed #999;margin:1mm;text-align:center;font-size:10pt}"
            ".s b{display:block;font-size:16pt}@media print{h1,p{font-size:10pt}}</style>"
            f"<h1>{title}</h1><p>{tl.total} tickets; pool {tl.pool_commitment}</p>{slips}"
        )
        return HTMLResponse(page)

    @app.get(f"{base}/report", tags=tags, dependencies=[desk_role])
    async def report(promotion: Annotated[str, ID], draw: Annotated[str, ID]) -> PlainTextResponse:
        """The draw report: commitments, picks in draw order with call time and claim
        outcome, exceptions and overrides."""
        desk.plan(promotion, draw)
        records = await ctx.audit.records()
        return PlainTextResponse(draw_report(records, subject_of(promotion, draw)).render())

    @app.get(f"{base}/verify", tags=tags, dependencies=[desk_role])
    async def verify(promotion: Annotated[str, ID], draw: Annotated[str, ID]) -> dict[str, Any]:
        """Recompute every pick from the revealed seeds and archived pools."""
        chain, rounds = await desk.verify(subject_of(promotion, draw))
        return {
            "draw": subject_of(promotion, draw),
            "chain": chain,
            "ok": verified(chain, rounds),
            "rounds": [
                {"tombola": k[0], "round": k[1], "ok": v.ok, "result": str(v)}
                for k, v in sorted(rounds.items())
            ],
        }

    @app.get("/letters/{number}", tags=tags, dependencies=[desk_role])
    async def letter(number: Annotated[str, Path(max_length=120)]) -> dict[str, Any]:
        promotion, draw = await desk.letter(number)
        book = await desk.book(promotion, draw)
        for cid, c in book.claims.items():
            if c.letter is not None and c.letter.number == number:
                lt = c.letter
                return {
                    "number": lt.number,
                    "claim": cid,
                    "draw": book.subject,
                    "winner": lt.winner,
                    "prize": lt.prize.label,
                    "value_cents": lt.prize.value_cents,
                    "issued_at": lt.issued_at.isoformat(),
                    "expires_at": lt.expires_at.isoformat(),
                    "state": str(c.state),
                }
        raise DrawError(f"letter {number} is indexed but not in its draw; run bonusd audit verify")


def _claim_route(
    app: FastAPI, ctx: ApiContext, dependency: Any, desk: DrawDesk, *, action: str, path: str
) -> None:
    async def claim_action(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        claim: Annotated[int, CLAIM],
        body: Annotated[ClaimIn | None, Body()] = None,
        principal: Principal = dependency,
    ) -> dict[str, Any]:
        body = body or ClaimIn()
        args: dict[str, Any] = {}
        if action == "present" and body.proxy_id:
            args["proxy_id"] = body.proxy_id
        if action == "pick_reveal":
            if body.reveal is None:
                raise DrawError('say which reveal the winner picked: {"reveal": N}')
            args["reveal"] = body.reveal
        if action == "verify" and not (body.id_checked and body.receipt_checked):
            missing = [
                w
                for w, ok in (("ID", body.id_checked), ("receipt", body.receipt_checked))
                if not ok
            ]
            raise DrawError(f"claim {claim} cannot be verified without {' and '.join(missing)}")
        await desk.act(promotion, draw, claim, action, actor(principal), **args)
        return book_json(await desk.book(promotion, draw), ctx.clock.now())

    claim_action.__name__ = f"claim_{action}"
    app.post(path, tags=["claims"], summary=f"Claim: {action.replace('_', ' ')}")(claim_action)
