"""HTTP routes of members (desk, admin): a member's record, session and kiosk PIN lock,
one gaming day of their play, lifting a PIN lock at the desk, and the member registry
import."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request
from pydantic import BaseModel, Field

from bonusd.access.auth import Role
from bonusd.api.context import Ctx, Desk, require
from bonusd.api.draws import actor
from bonusd.api.floor import REFUSED_FILE, ActiveOut, ImportOut, file_body
from bonusd.audit.chain import Kind
from bonusd.registry.records import CARD_PATTERN, Member

router = APIRouter(tags=["members"])
CARD = Path(pattern=CARD_PATTERN, description="Member card number")


class MemberOut(BaseModel):
    card: str
    registered: bool  # in the member registry
    flagged_unregistered: bool  # seen on the floor without being registered
    member: Member | None
    active: ActiveOut | None  # the session while carded in
    # the card's kiosk PIN is locked after wrong PINs for this many more seconds (0: not)
    kiosk_pin_locked_s: int = 0


class UnlockIn(BaseModel):
    """Why the desk lifts the lock: what it checked (recorded in the audit trail)."""

    reason: str = Field(min_length=10, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")


class UnlockOut(BaseModel):
    card: str
    was_locked: bool  # False: nothing to lift (recorded all the same)


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
    lock = await ctx.kiosk.lockout.state(card, ctx.clock.now()) if ctx.kiosk else None
    return MemberOut(
        card=card,
        registered=record is not None,
        flagged_unregistered=unregistered,
        member=record,
        active=ActiveOut(**session) if session else None,
        kiosk_pin_locked_s=lock.retry_after_s if lock and lock.locked else 0,
    )


@router.post("/members/{card}/kiosk-pin/unlock")
async def unlock_kiosk_pin(
    ctx: Ctx, card: Annotated[str, CARD], body: UnlockIn, principal: Desk
) -> UnlockOut:
    """Lift the card's kiosk PIN lock (and forget its wrong PINs) once the desk has checked
    the member's ID; recorded in the audit trail with who and why."""
    if ctx.kiosk is None:
        raise HTTPException(404, "this daemon runs no kiosks")
    if await ctx.store.member(card) is None:
        raise HTTPException(404, f"card {card} is not a registered member; check the card")
    now = ctx.clock.now()
    was = (await ctx.kiosk.lockout.state(card, now)).locked
    await ctx.kiosk.lockout.cleared(card)
    await ctx.audit.append(
        at=now,
        actor=str(actor(principal)),
        kind=Kind.PIN_UNLOCK,
        payload={"card": card, "was_locked": was, "reason": body.reason},
    )
    return UnlockOut(card=card, was_locked=was)


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
