"""HTTP routes of the promotions: their draws and states, standings, leaderboards,
activations and rule reloads. Thin: the rules live in `bonusd.promotions`, the Redis
side in `bonusd.promotions.store`; the response models in bonusd/api/promotionmodels.py."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path
from pydantic import BaseModel

from bonusd.access.auth import Principal, Role
from bonusd.api.context import Admin, Ctx, require
from bonusd.api.fields import Card
from bonusd.api.playermodels import PublicBoardOut, masked_board
from bonusd.api.promotionmodels import (
    DrawState,
    DrawStateOut,
    KioskStandingOut,
    LiveBoardOut,
    LivePlaceOut,
    PromotionItemOut,
    PromotionOut,
    PublishedBoardOut,
    RecordedChangeOut,
    ReloadOut,
    RoundOut,
    RuleChangeOut,
    StandingOut,
    SummaryOut,
    standing_out,
)
from bonusd.audit.chain import Kind
from bonusd.errors import NotFoundError, ServiceUnavailableError
from bonusd.promotions import Channel, Draw, Promotion, PromotionFileError, Side, Standing
from bonusd.promotions.kioskview import kiosk_standing
from bonusd.promotions.store import ActivationRefused, PromotionStore
from bonusd.promotions.timing import earning_window
from bonusd.registry.records import CARD_PATTERN

ID = Path(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")
CARD = Path(pattern=CARD_PATTERN, description="Member card number")
# the desk page retries a summary Redis could not serve after this many seconds
SUMMARY_RETRY_AFTER_S = 5

router = APIRouter(tags=["promotions"])
# who reads a promotion and its published boards
ANYONE = (Role.SIGNAGE, Role.CREW, Role.DESK, Role.KIOSK)
Reader = Annotated[Principal, require(*ANYONE)]
DeskOrKiosk = Annotated[Principal, require(Role.DESK, Role.KIOSK)]  # a kiosk: `kioskview` only
Kiosk = Annotated[Principal, require(Role.KIOSK)]


class View(StrEnum):
    LIVE = "live"
    PUBLISHED = "published"


class ActivationIn(BaseModel):
    card: Card
    channel: Channel


class ActivationOut(BaseModel):
    promotion: str
    draw: str
    card: str
    channel: Channel
    at: dt.datetime


def _not_found(exc: NotFoundError) -> HTTPException:
    return HTTPException(404, str(exc))


@router.get("/promotions", dependencies=[require(*ANYONE)])
async def list_promotions(ctx: Ctx) -> list[PromotionItemOut]:
    """The promotions running at this site."""
    return [
        PromotionItemOut(id=p.id, name=p.name, start=p.start, end=p.end, draws=len(p.draw_list))
        for p in ctx.promotions.promotions.values()
    ]


@router.post("/promotions/reload")
async def reload(ctx: Ctx, principal: Admin) -> ReloadOut:
    """Re-read the promotion files and apply them from now on. Every change is recorded
    with who and when; a broken file is refused and the running rules stay."""
    try:
        records = await ctx.reload_promotions(f"{principal.name} (token {principal.token_id})")
    except PromotionFileError as exc:
        raise HTTPException(422, str(exc)) from exc
    return ReloadOut(changes=[RuleChangeOut.model_validate(r) for r in records])


@router.get("/promotions/changes", dependencies=[require(Role.DESK)])
async def changes(ctx: Ctx) -> list[RecordedChangeOut]:
    """Every recorded rule change, oldest first (from the audit trail)."""
    return [
        RecordedChangeOut.model_validate(
            {"at": r.time, "actor": r.actor, "seq": r.seq, **r.payload}
        )
        for r in (await ctx.audit.reads.of_kind(Kind.RULE_CHANGE)).records
    ]


@router.get("/promotions/{promotion}/draws/{draw}/summary", dependencies=[require(Role.DESK)])
async def summary(ctx: Ctx, promotion: Annotated[str, ID], draw: Annotated[str, ID]) -> SummaryOut:
    """The whole draw at a glance: members with play, eligible, qualified, activated,
    tickets and entries, per tombola and per tier. 503 with Retry-After when Redis
    timed out or could not be reached while reading it."""
    try:
        return SummaryOut.model_validate(await ctx.summaries.summary(promotion, draw))
    except NotFoundError as exc:
        raise _not_found(exc) from exc
    except ServiceUnavailableError as exc:
        retry = {"Retry-After": str(SUMMARY_RETRY_AFTER_S)}
        raise HTTPException(503, str(exc), headers=retry) from exc


async def _draw_state(
    store: PromotionStore, promotion: Promotion, draw: Draw, now: dt.datetime
) -> DrawStateOut:
    window = earning_window(promotion, draw)
    closes = store.bin_closes_at(promotion.id, draw.id)
    frozen = await store.pool(promotion.id, draw.id)
    state: DrawState
    if frozen is not None and now >= window.opens:  # on time, or closed early (four eyes)
        state = "frozen"
    elif now < window.opens:
        state = "upcoming"
    elif now < window.closes:
        state = "earning"
    elif now < closes:
        state = "activation"
    else:
        state = "frozen" if frozen else "closing"
    return DrawStateOut(
        id=draw.id,
        name=draw.name,
        date=draw.date,
        mode=draw.mode,
        window_opens=window.opens,
        window_closes=window.closes,
        bin_closes=closes,
        rounds=[RoundOut(time=rd.time, winners=dict(rd.winners)) for rd in draw.rounds],
        state=state,
        pool_sha256=frozen.sha256 if frozen else None,
    )


@router.get("/promotions/{promotion}", dependencies=[require(*ANYONE)])
async def promotion(ctx: Ctx, promotion: Annotated[str, ID]) -> PromotionOut:
    """A promotion with each draw's window, bin close, rounds and state now."""
    store = ctx.promotions
    try:
        found = store.promotion(promotion)
    except NotFoundError as exc:
        raise _not_found(exc) from exc
    now = ctx.clock.now()
    return PromotionOut(
        id=found.id,
        name=found.name,
        site=found.site,
        start=found.start,
        end=found.end,
        draws=[await _draw_state(store, found, d, now) for d in found.draw_list],
    )


@router.get("/promotions/{promotion}/draws/{draw}/standings/{card}")
async def standings(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    card: Annotated[str, CARD],
    principal: DeskOrKiosk,
) -> StandingOut | KioskStandingOut:
    """Desk: qualification, tickets (per tombola), visits, per-side points, the
    breakdown by rule, the reasons for not qualifying or not taking part, and whether
    the entry is activated.

    Kiosk: what a kiosk shows the cardholder (`bonusd.promotions.kioskview`, docs/security.md,
    "A kiosk token"): status, tickets, entries, per-side points and the breakdown, without
    reasons, rule texts or personal data; a card that may not take part and a card
    that is no member both get "not eligible — please see the promotions desk", the
    same answer. Rate limited per card and per kiosk token (429 with Retry-After)."""
    store = ctx.promotions
    if principal.role is not Role.KIOSK:
        try:
            return standing_out(await store.standing(promotion, draw, card))
        except NotFoundError as exc:
            raise _not_found(exc) from exc
    limits = ctx.tokens.limiter.limits
    over = await ctx.tokens.limiter.admit(
        [
            ("standings-lookups", f"card {card}", limits.standings_per_card),
            ("standings-lookups", f"token {principal.token_id}", limits.standings_per_token),
        ],
        ctx.clock.now(),
    )
    if over is not None:
        raise HTTPException(429, over.message(), headers={"Retry-After": str(over.retry_after_s)})
    try:
        _, spec = store.draw(promotion, draw)
    except NotFoundError as exc:
        raise _not_found(exc) from exc
    try:
        found: Standing | None = await store.standing(promotion, draw, card)
    except NotFoundError:  # no member: answered like one that may not take part
        found = None
    return KioskStandingOut.model_validate(kiosk_standing(promotion, spec, found))


@router.get("/promotions/{promotion}/draws/{draw}/leaderboards/{side}")
async def leaderboard(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    side: Side,
    principal: Reader,
    *,
    view: View = View.PUBLISHED,
) -> PublishedBoardOut | LiveBoardOut | PublicBoardOut:
    """The published weekly board (the desk: full card numbers; a screen, handheld or
    kiosk: masked as the floor screens show it), or the live board (desk)."""
    store = ctx.promotions
    desk = principal.role in (Role.DESK, Role.ADMIN)
    try:
        if view is View.PUBLISHED and desk:
            return PublishedBoardOut.model_validate(
                await store.published_board(promotion, draw, side)
            )
        if view is View.PUBLISHED:
            return await masked_board(store, promotion, draw, side)
        if not desk:
            raise HTTPException(403, "the live board needs the desk role")
        board = await store.live_board(promotion, draw, side)
    except NotFoundError as exc:
        raise _not_found(exc) from exc
    except ValueError as exc:
        raise HTTPException(404, str(exc)) from exc
    return LiveBoardOut(
        promotion=promotion,
        draw=draw,
        side=side,
        as_of=ctx.clock.now(),
        entries=[
            LivePlaceOut(position=x.position, card=x.card, points=x.points, reached_at=x.reached_at)
            for x in board
        ],
    )


@router.post("/promotions/{promotion}/draws/{draw}/activations")
async def activate(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    body: ActivationIn,
    principal: Kiosk,
) -> ActivationOut:
    """Activate a member's entries (eHost kiosk print, or app registration while the
    member is active on the floor), until the entry bin closes. Rate limited per card
    and per kiosk token (429 with Retry-After)."""
    now = ctx.clock.now()
    limits = ctx.tokens.limiter.limits
    over = await ctx.tokens.limiter.admit(
        [
            ("activations", f"card {body.card[:32]}", limits.activations_per_card),
            ("activations", f"token {principal.token_id}", limits.activations_per_token),
        ],
        now,
    )
    if over is not None:
        raise HTTPException(429, over.message(), headers={"Retry-After": str(over.retry_after_s)})
    try:
        done = await ctx.promotions.activate(promotion, draw, body.card, body.channel, now)
    except NotFoundError as exc:
        raise _not_found(exc) from exc
    except ActivationRefused as exc:
        raise HTTPException(409, str(exc)) from exc
    return ActivationOut(
        promotion=promotion, draw=draw, card=done.card, channel=done.channel, at=done.at
    )
