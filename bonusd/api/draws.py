"""HTTP routes of draws and their claims: run a round, close the entry bin, read the draw,
every claim action, proxies, prizes, manual tickets, prize letters, the draw report and
its verification. The GET routes only read: none freezes a pool or commits a seed.

Thin: the rules live in `bonusd.draws.book` (pure) and the Redis side in `bonusd.draws.runner`;
the JSON answers are the models of `bonusd.api.drawmodels`. A refused step answers 409 with
the reason, a role that may not act 403.
"""

from __future__ import annotations

import html
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path
from fastapi.responses import HTMLResponse, PlainTextResponse
from pydantic import BaseModel, Field

from bonusd.access.auth import Principal, Role
from bonusd.api.context import ApiContext, Ctx, Desk, require
from bonusd.api.drawmodels import (
    DrawBookOut,
    DrawVerifyOut,
    LetterOut,
    RoundCheckOut,
    book_out,
    letter_out,
)
from bonusd.api.errors import json_errors_of
from bonusd.api.fields import Card, DocumentNumber, Note, PersonName, PoolHash, TombolaName
from bonusd.draws.book import subject_of
from bonusd.draws.claims import Actor, ClaimRole, Prize
from bonusd.draws.evidence import draw_report
from bonusd.draws.rounds import DrawError
from bonusd.promotions.terms import rands

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
BASE = "/promotions/{promotion}/draws/{draw}"

router = APIRouter(tags=["draws"])


class CsvResponse(PlainTextResponse):
    """A CSV body (`text/csv; charset=utf-8`), so /openapi.json names it."""

    media_type = "text/csv"


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
    """Who the records name for a request: the staff member signed in ("Name (staff
    1042)") or the token's holder, with the role they acted in."""
    roles = {Role.CREW: ClaimRole.CREW, Role.ADMIN: ClaimRole.ADMIN}
    return Actor(principal.name or principal.token_id, roles.get(principal.role, ClaimRole.DESK))


def verified(chain: str, results: dict[Any, Any]) -> bool:
    """A verification passes when the chain is intact and every recomputed pick agrees."""
    return bool(results) and all(v.ok for v in results.values()) and chain.startswith("ok")


async def _book(ctx: ApiContext, promotion: str, draw: str) -> DrawBookOut:
    return book_out(await ctx.draws.book(promotion, draw), ctx.clock.now())


@router.post(f"{BASE}/run")
async def run(
    ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID], body: RunIn, principal: Desk
) -> DrawBookOut:
    """Run a round now (the scheduler runs it at its time; running it again changes
    nothing). Refused (409) before the entry bin's scheduled close."""
    await ctx.draws.run_round(promotion, draw, body.round, actor(principal))
    return await _book(ctx, promotion, draw)


@router.post(f"{BASE}/close-bin")
async def close_bin(
    ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID], principal: Desk
) -> DrawBookOut:
    """Close the entry bin now when the scheduler has not (no daemon led at its time):
    freeze the entry pool, seat the leaders, freeze every round's pool, recorded in
    the desk's name. Refused (409, nothing written) before the bin's scheduled close;
    a closed bin is left as it is."""
    await ctx.draws.close_bin(promotion, draw, actor(principal))
    return await _book(ctx, promotion, draw)


@router.get(f"{BASE}/book", dependencies=[require(Role.CREW, Role.DESK)])
async def read(ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID]) -> DrawBookOut:
    """The draw: commitments, pools, picks with their claim states and deadlines."""
    return await _book(ctx, promotion, draw)


@router.post(f"{BASE}/proxies")
async def proxy(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    body: ProxyIn,
    principal: Desk,
) -> DrawBookOut:
    await ctx.draws.register_proxy(
        promotion, draw, body.card, proxy_id=body.proxy_id, name=body.name, actor=actor(principal)
    )
    return await _book(ctx, promotion, draw)


@router.post(f"{BASE}/prizes")
async def prizes(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    body: PrizesIn,
    principal: Desk,
) -> DrawBookOut:
    """Load a round's prize values; they are sealed into reveals in an order fixed by
    the round's secret seed."""
    values = tuple(Prize(rands(v), v) for v in body.values_cents)
    key = (body.tombola, body.round)
    await ctx.draws.load_prizes(promotion, draw, key, values, actor(principal))
    return await _book(ctx, promotion, draw)


@router.post(f"{BASE}/exclusions")
async def exclusion(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    body: ExclusionIn,
    principal: Desk,
) -> DrawBookOut:
    await ctx.draws.exclude(promotion, draw, body.card, body.note, actor(principal))
    return await _book(ctx, promotion, draw)


@router.post(f"{BASE}/tickets")
async def ticket(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    body: TicketIn,
    principal: Desk,
) -> DrawBookOut:
    """Record a hand-drawn ticket of a manual draw; refused with the reason when it
    does not exist, is not of this pool, or its owner already won or is excluded."""
    await ctx.draws.accept_ticket(
        promotion,
        draw,
        (body.tombola, body.round),
        body.number,
        actor=actor(principal),
        printed_pool=body.pool,
    )
    return await _book(ctx, promotion, draw)


@router.get(
    f"{BASE}/tickets/{{tombola}}/{{round_no}}.csv",
    dependencies=[require(Role.DESK)],
    response_class=CsvResponse,
    responses=json_errors_of("CSV ticket list"),
)
async def tickets_csv(
    ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID], tombola: str, round_no: int
) -> CsvResponse:
    """The numbered ticket list of a round, for a physical tombola: read only, 409
    naming the bin's close while the round's pool is not frozen."""
    book, lines = await ctx.draws.ticket_list(promotion, draw, tombola, round_no)
    rows = ["ticket,card"] + [",".join(line.split("\t")) for line in list(lines.lines())[1:]]
    head = f"# draw {book.subject} {tombola} round {round_no} pool {lines.pool_commitment}"
    return CsvResponse("\n".join([head, *rows]) + "\n")


@router.get(
    f"{BASE}/tickets/{{tombola}}/{{round_no}}",
    dependencies=[require(Role.DESK)],
    response_class=HTMLResponse,
    responses=json_errors_of("printable ticket list"),
)
async def tickets_page(
    ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID], tombola: str, round_no: int
) -> HTMLResponse:
    """The ticket list as a printable page: one cut-out slip per ticket (read only, as
    the CSV)."""
    book, tl = await ctx.draws.ticket_list(promotion, draw, tombola, round_no)
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


@router.get(
    f"{BASE}/report",
    dependencies=[require(Role.DESK)],
    response_class=PlainTextResponse,
    responses=json_errors_of("draw report"),
)
async def report(
    ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID]
) -> PlainTextResponse:
    """The draw report: commitments, picks in draw order with call time and claim
    outcome, exceptions and overrides."""
    ctx.draws.plan(promotion, draw)
    subject = subject_of(promotion, draw)
    part = await ctx.audit.reads.draw(subject)  # its records alone, each held to the chain
    return PlainTextResponse(draw_report(part.records, subject, part.check).render())


@router.get(f"{BASE}/verify", dependencies=[require(Role.DESK)])
async def verify(
    ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID]
) -> DrawVerifyOut:
    """Recompute every pick from the revealed seeds and archived pools."""
    chain, rounds = await ctx.draws.verify(subject_of(promotion, draw))
    return DrawVerifyOut(
        draw=subject_of(promotion, draw),
        chain=chain,
        ok=verified(chain, rounds),
        rounds=[
            RoundCheckOut(tombola=k[0], round=k[1], ok=v.ok, result=str(v))
            for k, v in sorted(rounds.items())
        ],
    )


@router.get("/letters/{number}", dependencies=[require(Role.DESK)])
async def letter(ctx: Ctx, number: Annotated[str, Path(max_length=120)]) -> LetterOut:
    """A prize letter: its winner, prize, issue and expiry, and its claim's state."""
    promotion, draw = await ctx.draws.letter(number)
    found = letter_out(await ctx.draws.book(promotion, draw), number)
    if found is None:
        raise DrawError(f"letter {number} is indexed but not in its draw; run bonusd audit verify")
    return found


def _claim_route(action: str, segment: str, roles: tuple[Role, ...]) -> None:
    allowed = require(*roles)

    async def claim_action(
        ctx: Ctx,
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        claim: Annotated[int, CLAIM],
        principal: Principal = allowed,  # a default: a local cannot be in an annotation
        *,
        body: Annotated[ClaimIn | None, Body()] = None,
    ) -> DrawBookOut:
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
        await ctx.draws.act(promotion, draw, claim, action, actor(principal), **args)
        return await _book(ctx, promotion, draw)

    claim_action.__name__ = f"claim_{action}"
    summary = f"Claim: {action.replace('_', ' ')}"
    router.post(f"{BASE}/claims/{{claim}}/{segment}", tags=["claims"], summary=summary)(
        claim_action
    )


for _action, (_segment, _roles) in CLAIM_ACTIONS.items():
    _claim_route(_action, _segment, _roles)
