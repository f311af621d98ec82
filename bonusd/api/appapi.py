"""HTTP routes of the casino app's back end (an `app` token, one per app server;
docs/app-api.md): a member's standing in every running draw, activation with channel
`app`, and the published boards as the floor screens show them.

The app answers its own members, so it reads exactly what the member would see at an
eHost kiosk (`bonusd.kiosk.standings.player_view`) and never another member's data: a
board comes masked ("T. M****", "****3456"), like signage. An excluded member, one under
age, and a card that is no member all read the same neutral answer, and an activation
for any of them is refused with the same neutral words.

Reads are rate limited per card and per token (`BONUSD_LIMIT_STANDINGS_*`), activations
per card and per token (`BONUSD_LIMIT_ACTIVATION*`, counted with the kiosks' activations
of the same card): 429 with Retry-After.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path

from bonusd.access.auth import Principal, Role
from bonusd.access.ratelimit import Check
from bonusd.api.context import ApiContext, Ctx, require
from bonusd.api.playermodels import (
    AppActivationIn,
    AppActivationOut,
    PlayerViewOut,
    PublicBoardOut,
    masked_board,
)
from bonusd.errors import NotFoundError
from bonusd.kiosk.standings import player_view
from bonusd.promotions import Channel, Side
from bonusd.promotions.kioskview import NOT_ELIGIBLE
from bonusd.promotions.store import ActivationRefused
from bonusd.registry.records import CARD_PATTERN

router = APIRouter(tags=["app"])
App = Annotated[Principal, require(Role.APP)]
CARD = Path(pattern=CARD_PATTERN, description="The member's card number")
ID = Path(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")


async def _admit(ctx: ApiContext, checks: list[Check]) -> None:
    """Count the request against `checks`; 429 with Retry-After past any of them."""
    over = await ctx.tokens.limiter.admit(checks, ctx.clock.now())
    if over is not None:
        raise HTTPException(429, over.message(), headers={"Retry-After": str(over.retry_after_s)})


@router.get("/app/members/{card}")
async def member_view(ctx: Ctx, card: Annotated[str, CARD], principal: App) -> PlayerViewOut:
    """The member's standing in every running draw: tickets, entries, the breakdown in
    plain words, activation and its window, the draw times and the member's own places on
    the published boards. A card that is no member, an excluded member and one under age
    all get the same neutral answer (`neutral`: true, no member, no draws). Rate limited
    per card and per token (429 with Retry-After)."""
    limits = ctx.tokens.limiter.limits
    await _admit(
        ctx,
        [
            ("app-lookups", f"card {card}", limits.standings_per_card),
            ("app-lookups", f"token {principal.token_id}", limits.standings_per_token),
        ],
    )
    return PlayerViewOut.model_validate(await player_view(ctx.promotions, card, ctx.clock.now()))


@router.post("/app/members/{card}/activations")
async def activate(
    ctx: Ctx, card: Annotated[str, CARD], body: AppActivationIn, principal: App
) -> AppActivationOut:
    """Register the member's entries in a draw through the app: only while the member is
    active on the floor (carded in at an EGM or rated at a table), from the draw day's
    activation opening until the entry bin closes. A refusal is 409 with the reason
    ("the app registers entries only while you are playing (carded in or rated)", "the
    entry bin closed at 19:00 on 07 Nov 2026"); a card that may not take part (or is no
    member) gets 409 "not eligible — please see the promotions desk". A second activation
    changes nothing and answers the first. Rate limited per card and per token."""
    now = ctx.clock.now()
    limits = ctx.tokens.limiter.limits
    await _admit(
        ctx,
        [
            ("activations", f"card {card}", limits.activations_per_card),
            ("activations", f"token {principal.token_id}", limits.activations_per_token),
        ],
    )
    store = ctx.promotions
    store.draw(body.promotion, body.draw)  # NotFoundError (404): no such promotion or draw
    try:
        standing = await store.standing(body.promotion, body.draw, card)
    except NotFoundError:  # no member: refused like one that may not take part
        standing = None
    if standing is None or not standing.eligible:
        raise HTTPException(409, NOT_ELIGIBLE)
    try:
        done = await store.activate(body.promotion, body.draw, card, Channel.APP, now)
    except ActivationRefused as exc:
        raise HTTPException(409, str(exc)) from exc
    return AppActivationOut(
        promotion=body.promotion, draw=body.draw, channel=done.channel, at=done.at
    )


@router.get("/app/promotions/{promotion}/draws/{draw}/leaderboards/{side}")
async def leaderboard(
    ctx: Ctx,
    promotion: Annotated[str, ID],
    draw: Annotated[str, ID],
    side: Side,
    principal: App,
) -> PublicBoardOut:
    """The board as last published (weekly), masked as the floor screens show it: no
    entries before the first publication. Rate limited per token."""
    limits = ctx.tokens.limiter.limits
    await _admit(ctx, [("app-lookups", f"token {principal.token_id}", limits.standings_per_token)])
    return await masked_board(ctx.promotions, promotion, draw, side)
