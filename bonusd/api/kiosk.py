"""HTTP routes of the eHost kiosks and of the receipts they print (docs/kiosk.md).

A kiosk (a kiosk token) opens a *visit* for the card its reader typed, passes the PIN
where the member file has one, reads the member's standings in every running draw, and
activates and prints a draw's receipt; the visit goes with the `X-Kiosk-Visit` header,
never in a URL. The crew (or the desk) checks a receipt presented at a claim; the desk
looks any receipt up by its number. Thin: the work is `bonusd.kiosk.desk.KioskDesk`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Path

from bonusd.access.auth import Principal, Role
from bonusd.api.context import ApiContext, Ctx, Desk, require
from bonusd.api.draws import CLAIM, ID, actor
from bonusd.api.kioskmodels import (
    PinIn,
    PinOut,
    PrintIn,
    ReceiptCheckIn,
    ReceiptCheckOut,
    ReceiptOut,
    ReceiptRecordOut,
    VisitEndOut,
    VisitIn,
    VisitOut,
    check_out,
    receipt_out,
    record_out,
)
from bonusd.api.playermodels import PlayerViewOut
from bonusd.kiosk.desk import KioskDesk, KioskError

router = APIRouter(tags=["kiosk"])
Kiosk = Annotated[Principal, require(Role.KIOSK)]
CrewOrDesk = Annotated[Principal, require(Role.CREW, Role.DESK)]
VisitId = Annotated[
    str,
    Header(
        alias="X-Kiosk-Visit",
        pattern=r"^[0-9a-f]{32}$",
        description="The visit `POST /kiosk/visits` gave this kiosk",
    ),
]
NUMBER = Path(ge=1, le=1_000_000_000)


def _desk(ctx: ApiContext) -> KioskDesk:
    if ctx.kiosk is None:
        raise HTTPException(503, "the kiosks are not set up on this daemon")
    return ctx.kiosk


def _refused(exc: KioskError) -> HTTPException:
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else None
    return HTTPException(exc.status, str(exc), headers=headers)


@router.post("/kiosk/visits", status_code=201)
async def open_visit(ctx: Ctx, body: VisitIn, principal: Kiosk) -> VisitOut:
    """A card at this kiosk: the visit to send back as `X-Kiosk-Visit`, and whether the
    member's PIN is asked next. 423 (with Retry-After) for a card locked after wrong PINs."""
    desk = _desk(ctx)
    try:
        visit = await desk.open_visit(body.card, principal, ctx.clock.now())
    except KioskError as exc:
        raise _refused(exc) from exc
    return VisitOut(
        visit=visit.visit_id, needs_pin=visit.needs_pin, expires_in_s=desk.store.visit_s
    )


@router.post("/kiosk/visit/pin")
async def enter_pin(ctx: Ctx, body: PinIn, visit_id: VisitId, principal: Kiosk) -> PinOut:
    """The member's PIN: 401 with the tries left when wrong, 423 when that locks the card."""
    desk = _desk(ctx)
    try:
        visit = await desk.visit(visit_id, principal, ctx.clock.now(), opened=False)
        await desk.enter_pin(visit, body.pin, ctx.clock.now())
    except KioskError as exc:
        raise _refused(exc) from exc
    return PinOut(ok=True)


@router.get("/kiosk/visit")
async def visit_view(ctx: Ctx, visit_id: VisitId, principal: Kiosk) -> PlayerViewOut:
    """The member's standing in every running draw, in plain words, with each draw's
    receipt if one was printed. 401 once the visit ended, 403 before the PIN."""
    desk = _desk(ctx)
    try:
        visit = await desk.visit(visit_id, principal, ctx.clock.now())
    except KioskError as exc:
        raise _refused(exc) from exc
    return PlayerViewOut.model_validate(await desk.view(visit, ctx.clock.now()))


@router.post("/kiosk/visit/receipts", status_code=201)
async def print_receipt(ctx: Ctx, body: PrintIn, visit_id: VisitId, principal: Kiosk) -> ReceiptOut:
    """Activate the member's entries in the draw and print its receipt; the same draw
    again reprints the same receipt, marked REPRINT n. 409 with the reason when the draw
    takes no activation now, 429 for a reprint storm."""
    desk = _desk(ctx)
    try:
        visit = await desk.visit(visit_id, principal, ctx.clock.now())
        printed = await desk.print_receipt(visit, body.promotion, body.draw, ctx.clock.now())
    except KioskError as exc:
        raise _refused(exc) from exc
    return receipt_out(printed)


@router.delete("/kiosk/visit")
async def end_visit(ctx: Ctx, visit_id: VisitId, principal: Kiosk) -> VisitEndOut:
    """The card left the reader, or the screen went idle: the visit ends (`ended` false
    when it had ended already)."""
    desk = _desk(ctx)
    visit = await desk.store.visit(visit_id, principal.token_id, ctx.clock.now())
    if visit is not None:
        await desk.store.end_visit(visit)
    return VisitEndOut(ended=visit is not None)


@router.get("/receipts/{number}")
async def receipt(ctx: Ctx, number: Annotated[int, NUMBER], _: Desk) -> ReceiptRecordOut:
    """A receipt by its number: its fields, every print (kiosk and time) and every check
    made at a claim."""
    found, prints, checks = await _desk(ctx).lookup(number)
    return record_out(found, prints, checks)


@router.post("/promotions/{promotion}/draws/{draw}/claims/{claim}/receipt-check")
async def receipt_check(  # noqa: PLR0917 (the route's path parameters)
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    claim: Annotated[int, CLAIM],
    body: ReceiptCheckIn,
    principal: CrewOrDesk,
) -> ReceiptCheckOut:
    """Check the receipt a winner (or proxy) presents: valid, another member's, another
    draw's, another site's, or forged (reprint n of m when valid). Recorded on the claim
    in the draw's audit ledger. 422 for text that is no receipt code at all."""
    found = await _desk(ctx).check_at_claim(
        (promotion, draw, claim), body.code, actor(principal), ctx.clock.now()
    )
    return check_out(found)
