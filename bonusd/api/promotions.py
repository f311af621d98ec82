"""HTTP routes of the promotions: their draws and states, standings, leaderboards,
activations and rule reloads. Thin: the rules live in `bonusd.promotions`, the Redis
side in `bonusd.promotions.store`."""

from __future__ import annotations

import datetime as dt
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, HTTPException, Path
from pydantic import BaseModel

from bonusd.access.auth import Principal, Role
from bonusd.api.fields import Card
from bonusd.audit.chain import Kind
from bonusd.errors import NotFoundError, ServiceUnavailableError
from bonusd.promotions import Channel, PromotionFileError, Side, Standing
from bonusd.promotions.kioskview import breakdown_json, kiosk_standing, sides_json
from bonusd.promotions.store import ActivationRefused
from bonusd.promotions.timing import earning_window
from bonusd.registry.records import CARD_PATTERN

if TYPE_CHECKING:
    from bonusd.api.context import ApiContext

ID = Path(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")
CARD = Path(pattern=CARD_PATTERN, description="Member card number")
# the desk page retries a summary Redis could not serve after this many seconds
SUMMARY_RETRY_AFTER_S = 5


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


def standing_json(s: Standing) -> dict[str, Any]:
    return {
        "promotion": s.promotion_id,
        "draw": s.draw_id,
        "card": s.card,
        "eligible": s.eligible,
        "qualified": s.qualified,
        "activated": s.activated,
        "tickets": s.tickets,
        "entries": s.entries,
        "per_tombola": {str(k): v for k, v in s.per_tombola.items()},
        "visits": s.visits,
        "sides": sides_json(s),
        "breakdown": breakdown_json(s, details=True),
        "reasons": list(s.reasons),
    }


def add_promotion_routes(app: FastAPI, ctx: ApiContext, guard: Any) -> None:
    """The /promotions routes, guarded with `guard(ctx, *roles)` like the rest of the API.
    (Registered on the app itself, so the route table lists every route and its guard.)"""
    tags: list[str | Enum] = ["promotions"]
    anyone = guard(ctx, Role.SIGNAGE, Role.CREW, Role.DESK, Role.KIOSK)
    desk_or_kiosk = guard(ctx, Role.DESK, Role.KIOSK)  # a kiosk gets `kioskview` only
    desk = guard(ctx, Role.DESK)
    admin = guard(ctx, Role.ADMIN)
    store = ctx.promotions

    def nf(exc: NotFoundError) -> HTTPException:
        return HTTPException(404, str(exc))

    @app.get("/promotions", tags=tags, dependencies=[anyone])
    async def list_promotions() -> list[dict[str, Any]]:
        """The promotions running at this site."""
        return [
            {"id": p.id, "name": p.name, "start": p.start, "end": p.end, "draws": len(p.draw_list)}
            for p in store.promotions.values()
        ]

    @app.post("/promotions/reload", tags=tags)
    async def reload(principal: Principal = admin) -> dict[str, Any]:
        """Re-read the promotion files and apply them from now on. Every change is recorded
        with who and when; a broken file is refused and the running rules stay."""
        try:
            records = await ctx.reload_promotions(f"{principal.name} (token {principal.token_id})")
        except PromotionFileError as exc:
            raise HTTPException(422, str(exc)) from exc
        return {"changes": records}

    @app.get("/promotions/changes", tags=tags, dependencies=[desk])
    async def changes() -> list[dict[str, Any]]:
        """Every recorded rule change, oldest first (from the audit trail)."""
        return [
            {"at": r.time, "actor": r.actor, "seq": r.seq, **r.payload}
            for r in await ctx.audit.of_kind(Kind.RULE_CHANGE)
        ]

    @app.get("/promotions/{promotion}/draws/{draw}/summary", tags=tags, dependencies=[desk])
    async def summary(promotion: Annotated[str, ID], draw: Annotated[str, ID]) -> dict[str, Any]:
        """The whole draw at a glance: members with play, eligible, qualified, activated,
        tickets and entries, per tombola and per tier. 503 with Retry-After when Redis
        timed out or could not be reached while reading it."""
        try:
            return await ctx.summaries.summary(promotion, draw)
        except NotFoundError as exc:
            raise nf(exc) from exc
        except ServiceUnavailableError as exc:
            retry = {"Retry-After": str(SUMMARY_RETRY_AFTER_S)}
            raise HTTPException(503, str(exc), headers=retry) from exc

    @app.get("/promotions/{promotion}", tags=tags, dependencies=[anyone])
    async def promotion(promotion: Annotated[str, ID]) -> dict[str, Any]:
        """A promotion with each draw's window, bin close, rounds and state now."""
        try:
            p = store.promotion(promotion)
        except NotFoundError as exc:
            raise nf(exc) from exc
        now = ctx.clock.now()
        draws = []
        for d in p.draw_list:
            window = earning_window(p, d)
            closes = store.bin_closes_at(p.id, d.id)
            frozen = await store.pool(p.id, d.id)
            if now < window.opens:
                state = "upcoming"
            elif now < window.closes:
                state = "earning"
            elif now < closes:
                state = "activation"
            else:
                state = "frozen" if frozen else "closing"
            draws.append(
                {
                    "id": d.id,
                    "name": d.name,
                    "date": d.date,
                    "mode": str(d.mode),
                    "window_opens": window.opens,
                    "window_closes": window.closes,
                    "bin_closes": closes,
                    "rounds": [{"time": rd.time, "winners": rd.winners} for rd in d.rounds],
                    "state": state,
                    "pool_sha256": frozen.sha256 if frozen else None,
                }
            )
        return {
            "id": p.id,
            "name": p.name,
            "site": p.site,
            "start": p.start,
            "end": p.end,
            "draws": draws,
        }

    @app.get("/promotions/{promotion}/draws/{draw}/standings/{card}", tags=tags)
    async def standings(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        card: Annotated[str, CARD],
        principal: Principal = desk_or_kiosk,
    ) -> dict[str, Any]:
        """Desk: qualification, tickets (per tombola), visits, per-side points, the
        breakdown by rule, the reasons for not qualifying or not taking part, and whether
        the entry is activated.

        Kiosk: what a kiosk shows the cardholder (`bonusd.promotions.kioskview`, docs/security.md,
        "A kiosk token"): status, tickets, entries, per-side points and the breakdown, without
        reasons, rule texts or personal data; a card that may not take part and a card
        that is no member both get "not eligible — please see the promotions desk", the
        same answer. Rate limited per card and per kiosk token (429 with Retry-After)."""
        if principal.role is not Role.KIOSK:
            try:
                return standing_json(await store.standing(promotion, draw, card))
            except NotFoundError as exc:
                raise nf(exc) from exc
        limits = ctx.tokens.limiter.limits
        over = await ctx.tokens.limiter.admit(
            [
                ("standings-lookups", f"card {card}", limits.standings_per_card),
                ("standings-lookups", f"token {principal.token_id}", limits.standings_per_token),
            ],
            ctx.clock.now(),
        )
        if over is not None:
            raise HTTPException(
                429, over.message(), headers={"Retry-After": str(over.retry_after_s)}
            )
        try:
            _, spec = store.draw(promotion, draw)
        except NotFoundError as exc:
            raise nf(exc) from exc
        try:
            found: Standing | None = await store.standing(promotion, draw, card)
        except NotFoundError:  # no member: answered like one that may not take part
            found = None
        return kiosk_standing(promotion, spec, found)

    @app.get(
        "/promotions/{promotion}/draws/{draw}/leaderboards/{side}",
        tags=tags,
    )
    async def leaderboard(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        side: Side,
        view: View = View.PUBLISHED,
        principal: Principal = anyone,
    ) -> dict[str, Any]:
        """The published weekly board (anyone), or the live board (desk)."""
        try:
            if view is View.PUBLISHED:
                return await store.published_board(promotion, draw, side)
            if principal.role not in (Role.DESK, Role.ADMIN):
                raise HTTPException(403, "the live board needs the desk role")
            board = await store.live_board(promotion, draw, side)
        except NotFoundError as exc:
            raise nf(exc) from exc
        except ValueError as exc:
            raise HTTPException(404, str(exc)) from exc
        return {
            "promotion": promotion,
            "draw": draw,
            "side": side.value,
            "as_of": ctx.clock.now().isoformat(),
            "entries": [
                {
                    "position": x.position,
                    "card": x.card,
                    "points": x.points,
                    "reached_at": x.reached_at.isoformat(),
                }
                for x in board
            ],
        }

    kiosk = guard(ctx, Role.KIOSK)

    @app.post(
        "/promotions/{promotion}/draws/{draw}/activations",
        tags=tags,
        response_model=ActivationOut,
    )
    async def activate(
        promotion: Annotated[str, ID],
        draw: Annotated[str, ID],
        body: ActivationIn,
        principal: Principal = kiosk,
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
            raise HTTPException(
                429, over.message(), headers={"Retry-After": str(over.retry_after_s)}
            )
        try:
            done = await store.activate(promotion, draw, body.card, body.channel, now)
        except NotFoundError as exc:
            raise nf(exc) from exc
        except ActivationRefused as exc:
            raise HTTPException(409, str(exc)) from exc
        return ActivationOut(
            promotion=promotion, draw=draw, card=done.card, channel=done.channel, at=done.at
        )
