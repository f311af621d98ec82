"""HTTP routes of four-eyes changes to a draw (`bonusd.draws.approvals`): after the pools
freeze, an exclusion or a proxy is requested with a written reason and made only when a
second staff member approves it; an early close of the entry bin is requested by an admin
and approved likewise. A refused step answers 409 with the reason (the same person
approving their own request, a request already decided, a reason too short)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path
from pydantic import AfterValidator, BaseModel, Field, model_validator

from bonusd.access.auth import Role
from bonusd.api.context import ApiContext, Ctx, Desk, require
from bonusd.api.draws import BASE, ID, actor
from bonusd.api.fields import Card, DocumentNumber, PersonName
from bonusd.draws.approvals import MIN_REASON, ChangeKind, ChangeRequest, Decision, actor_label
from bonusd.draws.book import DrawBook
from bonusd.registry.text import plain_text

router = APIRouter(tags=["draws"])
NUMBER = Path(ge=1, le=10_000)
Reason = Annotated[
    str,
    Field(
        min_length=MIN_REASON,
        max_length=300,
        description="Why the change is needed, in words a compliance officer can check",
    ),
    AfterValidator(plain_text),
]


class ChangeIn(BaseModel):
    change: ChangeKind
    reason: Reason
    card: Card | None = Field(default=None, description="exclusion, proxy: the member")
    proxy_id: DocumentNumber | None = Field(default=None, description="proxy: ID document")
    name: PersonName = Field(default="", description="proxy: the proxy's name")

    @model_validator(mode="after")
    def _names_what_it_changes(self) -> ChangeIn:
        if self.change is not ChangeKind.EARLY_CLOSE and self.card is None:
            raise ValueError(f"a {self.change} request names the member's card")
        if self.change is ChangeKind.PROXY and self.proxy_id is None:
            raise ValueError("a proxy request names the proxy's ID document number")
        return self


class ChangeOut(BaseModel):
    request: int
    change: ChangeKind
    reason: str
    card: str | None
    proxy_id: str | None
    name: str | None
    requested_by: str
    state: str  # "waiting", "approved" or "refused"
    decided_by: str | None


class ChangesOut(BaseModel):
    draw_id: str
    frozen: bool  # the pools are frozen: exclusions and proxies go through a request
    changes: list[ChangeOut]


def change_out(book: DrawBook, wanted: ChangeRequest) -> ChangeOut:
    decided = book.approvals.decisions.get(wanted.number)
    return ChangeOut(
        request=wanted.number,
        change=wanted.change,
        reason=wanted.reason,
        card=wanted.card or None,
        proxy_id=wanted.proxy_id or None,
        name=wanted.name or None,
        requested_by=actor_label(wanted.requested_by),
        state="waiting" if decided is None else decided[0].value,
        decided_by=None if decided is None else actor_label(decided[1]),
    )


async def _changes(ctx: ApiContext, promotion: str, draw: str) -> ChangesOut:
    book = await ctx.draws.book(promotion, draw)
    rows = [change_out(book, r) for r in book.approvals.requests.values()]
    return ChangesOut(draw_id=book.subject, frozen=book.frozen, changes=rows)


@router.get(f"{BASE}/changes", dependencies=[require(Role.DESK)])
async def changes(ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID]) -> ChangesOut:
    """The draw's four-eyes change requests, waiting and decided, in request order."""
    return await _changes(ctx, promotion, draw)


@router.post(f"{BASE}/changes")
async def request_change(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    body: ChangeIn,
    principal: Desk,
) -> ChangesOut:
    """Ask for a change a second staff member must approve: an exclusion or a proxy once
    the pools are frozen (before, make it directly), or (admin only) closing the entry
    bin before its scheduled time."""
    if body.change is ChangeKind.EARLY_CLOSE and principal.role is not Role.ADMIN:
        raise HTTPException(403, "closing the entry bin early is requested by an admin")
    fields = {"card": body.card or ""} if body.change is not ChangeKind.EARLY_CLOSE else {}
    if body.change is ChangeKind.PROXY:
        fields |= {"proxy_id": body.proxy_id or "", "name": body.name}
    await ctx.draws.request_change(
        promotion, draw, body.change, body.reason, actor(principal), **fields
    )
    return await _changes(ctx, promotion, draw)


@router.post(f"{BASE}/changes/{{number}}/approve")
async def approve(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    number: Annotated[int, NUMBER],
    principal: Desk,
) -> ChangesOut:
    """Approve a waiting request (not one's own): the change is made at once and recorded
    with both names; an early close freezes the pools now."""
    await ctx.draws.decide(promotion, draw, number, Decision.APPROVED, actor(principal))
    return await _changes(ctx, promotion, draw)


@router.post(f"{BASE}/changes/{{number}}/refuse")
async def refuse(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    number: Annotated[int, NUMBER],
    principal: Desk,
) -> ChangesOut:
    """Refuse a waiting request (not one's own): nothing changes; the refusal is recorded."""
    await ctx.draws.decide(promotion, draw, number, Decision.REFUSED, actor(principal))
    return await _changes(ctx, promotion, draw)
