"""HTTP routes of members (desk, admin): a member's record and session, one gaming day
of their play, and the member registry import."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request
from pydantic import BaseModel

from bonusd.access.auth import Role
from bonusd.api.context import Ctx, require
from bonusd.api.floor import REFUSED_FILE, ActiveOut, ImportOut, file_body
from bonusd.registry.records import CARD_PATTERN, Member

router = APIRouter(tags=["members"])
CARD = Path(pattern=CARD_PATTERN, description="Member card number")


class MemberOut(BaseModel):
    card: str
    registered: bool  # in the member registry
    flagged_unregistered: bool  # seen on the floor without being registered
    member: Member | None
    active: ActiveOut | None  # the session while carded in


class DayOut(BaseModel):
    """A member's play on one gaming day (08:00 to 08:00 local by default)."""

    card: str
    gaming_day: dt.date
    slots_points: int
    tables_points: int
    spend_cents: int
    slots_spend_cents: int
    tables_spend_cents: int
    win_cents: int
    games: int
    ratings: int  # table ratings closed
    visit: bool  # the day counts as a gaming visit


@router.get("/members/{card}", dependencies=[require(Role.DESK)])
async def member(ctx: Ctx, card: Annotated[str, CARD]) -> MemberOut:
    """A member's record and, while carded in, their session."""
    record = await ctx.store.member(card)
    unregistered = await ctx.store.is_unregistered(card)
    session = await ctx.store.session(card)
    if record is None and not unregistered and session is None:
        raise HTTPException(404, f"card {card} is neither registered nor seen on the floor")
    return MemberOut(
        card=card,
        registered=record is not None,
        flagged_unregistered=unregistered,
        member=record,
        active=ActiveOut(**session) if session else None,
    )


@router.get("/members/{card}/days/{day}", dependencies=[require(Role.DESK)])
async def member_day(ctx: Ctx, card: Annotated[str, CARD], day: dt.date) -> DayOut:
    """A member's totals of one gaming day."""
    totals = await ctx.store.member_day(card, day)
    return DayOut(card=card, gaming_day=day, **totals)


@router.post(
    "/members/import",
    responses=REFUSED_FILE,
    dependencies=[require(Role.ADMIN)],
    openapi_extra=file_body("members", "card,name,tier,app_user,date_of_birth,..."),
)
async def import_members(ctx: Ctx, request: Request) -> ImportOut:
    """Create or update members from a CSV or JSON file; all rows valid or none written."""
    return ImportOut(imported=await ctx.importer.members(request.stream(), source="request body"))
