"""The response models of the player's side: what a member sees of themselves at an eHost
kiosk (bonusd/api/kiosk.py) and what the casino's app reads (bonusd/api/appapi.py).

`PlayerViewOut` carries the player's view (`bonusd.kiosk.standings.player_view`, plain
data, or a `bonusd.kiosk.playerview.PlayerView`) field by field: `PlayerViewOut.
model_validate(view)`. The kiosk fills each draw's `receipt`; the app's answer leaves it
null.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bonusd.api.models import IsoTime
from bonusd.kiosk.standings import public_board
from bonusd.promotions import Channel, Side, Tombola
from bonusd.promotions.kioskview import KioskStatus
from bonusd.promotions.store import PromotionStore


class _FromView(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class PlayerMemberOut(_FromView):
    masked_name: str = Field(description='The name as floor screens mask it: "T. M****"')
    card_last4: str = Field(description="At most the card's last four characters")


class PlayerActivationOut(_FromView):
    required: bool = Field(description="The draw's tickets count only once activated")
    activated: bool
    channel: Channel | None = Field(description="How the entries were activated (first wins)")
    at: IsoTime | None = Field(description="When they were activated")
    opens: IsoTime | None = Field(description="Activation opens (on the draw day)")
    closes: IsoTime | None = Field(description="The entry bin closes: no activation after")
    open_now: bool = Field(description="Activation is taken now")


class BoardPositionOut(_FromView):
    side: Side
    position: int | None = Field(
        description="The member's own place on the published board (null: not on it)"
    )


class ReceiptRefOut(_FromView):
    number: int = Field(description="The site's receipt number")
    prints: int = Field(description="How many times it was printed (the original included)")


class PlayerDrawOut(_FromView):
    """The member's standing in one running draw, in numbers and in plain words."""

    promotion: str
    promotion_name: str
    casino: str
    draw: str
    draw_name: str
    status: KioskStatus
    message: str = Field(description="The status in fixed words")
    tickets: int = Field(description="Tickets earned so far")
    entries: int = Field(description="Tickets in the draw: all of them once activated, else 0")
    per_tombola: dict[Tombola, int] = Field(description="Tickets per tombola, 0 included")
    lines: list[str] = Field(
        description="The standing in plain words, each side against its threshold and the "
        'tickets rule by rule: "tables: 18,400 of 20,000 points — 1,600 to go", '
        '"+5 app bonus"'
    )
    activation: PlayerActivationOut
    draw_times: list[IsoTime] = Field(description="The draw's rounds")
    boards: list[BoardPositionOut] = Field(description="The draw's published boards, if any")
    receipt: ReceiptRefOut | None = Field(
        default=None, description="The member's receipt of this draw (kiosk only)"
    )


_EXAMPLE: dict[str, Any] = {
    "as_of": "2026-11-07T12:00:00+02:00",
    "neutral": False,
    "message": "your standing in the draws running now",
    "member": {"masked_name": "T. M****", "card_last4": "1001"},
    "draws": [
        {
            "promotion": "golden-horse-mega-points-chase",
            "promotion_name": "Mega Points Chase",
            "casino": "Golden Horse",
            "draw": "halfway",
            "draw_name": "Halfway draw",
            "status": "not_activated",
            "message": "tickets earned: activate them to enter the draw",
            "tickets": 26,
            "entries": 0,
            "per_tombola": {"pooled": 26},
            "lines": [
                "slots: qualified (21,250 of 20,000 points)",
                "tables: 18,400 of 20,000 points — 1,600 to go",
                "+21 from slots points",
                "+5 app bonus",
            ],
            "activation": {
                "required": True,
                "activated": False,
                "channel": None,
                "at": None,
                "opens": "2026-11-07T08:00:00+02:00",
                "closes": "2026-11-07T19:00:00+02:00",
                "open_now": True,
            },
            "draw_times": ["2026-11-07T19:00:00+02:00", "2026-11-07T20:00:00+02:00"],
            "boards": [{"side": "slots", "position": 3}, {"side": "tables", "position": None}],
            "receipt": None,
        }
    ],
}
_NEUTRAL: dict[str, Any] = {
    "as_of": "2026-11-07T12:00:00+02:00",
    "neutral": True,
    "message": "nothing to show for this card — please see the promotions desk",
    "member": None,
    "draws": [],
}


class PlayerViewOut(_FromView):
    """What the cardholder sees: their standing in every running draw. An excluded member,
    one under age, and a card that is no member all read the same neutral answer
    (`neutral`: true, no member, no draws, no reason)."""

    model_config = ConfigDict(
        from_attributes=True, json_schema_extra={"examples": [_EXAMPLE, _NEUTRAL]}
    )

    as_of: IsoTime = Field(description="The daemon's clock when read")
    neutral: bool = Field(description="Nothing to show for this card (no reason given)")
    message: str
    member: PlayerMemberOut | None = Field(description="null when neutral")
    draws: list[PlayerDrawOut] = Field(description="In the order of their first round")


class AppActivationIn(BaseModel):
    """Which draw to enter the member in."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"promotion": "golden-horse-mega-points-chase", "draw": "halfway"}]
        }
    )

    promotion: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")
    draw: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")


class AppActivationOut(BaseModel):
    """The member's activation in the draw: the first one stands, through whichever
    channel it came (a receipt printed at a kiosk before reads `kiosk`)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "promotion": "golden-horse-mega-points-chase",
                    "draw": "halfway",
                    "channel": "app",
                    "at": "2026-11-07T18:12:31+02:00",
                }
            ]
        }
    )

    promotion: str
    draw: str
    channel: Channel = Field(description="How the entries were activated first")
    at: IsoTime = Field(description="When")


class PublicPlaceOut(_FromView):
    position: int = Field(description="1 is the leader")
    name: str = Field(description='Masked as on the floor screens: "T. M****"')
    card: str = Field(description='Masked as on the floor screens: "****3456"')
    points: int


class PublicBoardOut(BaseModel):
    """A published board as the floor screens show it: every name and card masked."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "promotion": "golden-horse-mega-points-chase",
                    "draw": "halfway",
                    "side": "slots",
                    "published_at": "2026-11-06T08:00:00+02:00",
                    "entries": [
                        {"position": 1, "name": "S. N****", "card": "****1003", "points": 61200},
                        {"position": 2, "name": "T. M****", "card": "****1001", "points": 48100},
                    ],
                }
            ]
        }
    )

    promotion: str
    draw: str
    side: Side
    published_at: IsoTime | None = Field(description="null: not published yet")
    entries: list[PublicPlaceOut]


async def masked_board(
    promotions: PromotionStore, promotion: str, draw: str, side: Side
) -> PublicBoardOut:
    """A draw's published board masked as the floor screens show it (NotFoundError for an
    unknown draw): the app's and the floor devices' view of it."""
    board, places = await public_board(promotions, promotion, draw, side)
    return PublicBoardOut(
        promotion=promotion,
        draw=draw,
        side=side,
        published_at=board.get("published_at"),
        entries=[PublicPlaceOut.model_validate(p) for p in places],
    )
