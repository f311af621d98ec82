"""The response models of the promotions' routes (bonusd/api/promotions.py): a promotion and
its draws' states, the draw summary, a member's standing as the desk and as a kiosk see
it, the leaderboards and the rule changes. The rules build plain data
(`bonusd.promotions.summaries`, `bonusd.promotions.kioskview`); these models describe it
field by field and carry it to the client unchanged."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel

from bonusd.api.models import IsoTime, LocalTime
from bonusd.promotions import Side, Standing, Tombola
from bonusd.promotions.kinds import DrawMode
from bonusd.promotions.kioskview import KioskStatus, breakdown_json, sides_json
from bonusd.registry.records import Tier

# where a draw stands now: before its earning window, in it, taking activations until the
# bin closes, closing (the bin is closed, the pool not frozen yet), frozen (the pool is)
DrawState = Literal["upcoming", "earning", "activation", "closing", "frozen"]


class PromotionItemOut(BaseModel):
    id: str
    name: str
    start: dt.date
    end: dt.date
    draws: int  # how many draws it holds


class RoundOut(BaseModel):
    time: LocalTime  # the floor's local time of day
    winners: dict[Tombola, int]  # winners drawn from each tombola


class DrawStateOut(BaseModel):
    id: str
    name: str
    date: dt.date
    mode: DrawMode
    window_opens: IsoTime  # play from this instant counts
    window_closes: IsoTime  # and until (not at) this one
    bin_closes: IsoTime  # no activation from then on; the pool freezes
    rounds: list[RoundOut]
    state: DrawState
    pool_sha256: str | None  # the frozen entry pool's digest, once frozen


class PromotionOut(BaseModel):
    """A promotion with each draw's window, bin close, rounds and state now."""

    id: str
    name: str
    site: str
    start: dt.date
    end: dt.date
    draws: list[DrawStateOut]


class RuleChangeOut(BaseModel):
    """The changes one reload made to one promotion."""

    at: IsoTime
    actor: str  # who reloaded: the token's name and id
    promotion: str
    changes: list[str]  # each in words: "draws.x.qualification.threshold: 20000 -> 25000"


class ReloadOut(BaseModel):
    changes: list[RuleChangeOut]  # empty when the files changed nothing


class RecordedChangeOut(BaseModel):
    """A rule change as the audit trail holds it."""

    at: str  # the audit record's time: UTC, microseconds, `Z`
    actor: str
    seq: int  # the audit record's number
    promotion: str
    changes: list[str]


class TierCountOut(BaseModel):
    qualified: int
    tickets: int


class SummaryOut(BaseModel):
    """A draw over its whole member base (`DrawSummaries.summary`)."""

    promotion: str
    draw: str
    members_with_play: int  # with play in the earning window or an activation
    eligible: int  # of those, who may take part
    qualified: int
    activated: int
    tickets: int  # everyone's, activated or not
    entries: int  # the tickets of the activated: what the draw draws from
    per_tombola: dict[Tombola, int]  # tickets per tombola
    by_tier: dict[Tier, TierCountOut]  # every tier, lowest first


class SideOut(BaseModel):
    points: int  # the side's points in the earning window
    threshold: int | None  # the points that qualify the side (None: no threshold)
    qualified: bool
    tickets: int  # from this side's points (and in a separate tombola, its visits)


class RuleLineOut(BaseModel):
    """Tickets one rule gave (or, for a cap, took) in one tombola."""

    rule: str  # points | side_visits | min_one | visits | base | app_bonus | cap
    tombola: Tombola
    side: Side | None  # set for the per-side rules (points, side_visits)
    tickets: int


class DeskRuleLineOut(RuleLineOut):
    detail: str  # the line in words (names tier caps and app users: the desk's only)


class StandingOut(BaseModel):
    """A member's standing in a draw as the desk sees it: every reason included."""

    promotion: str
    draw: str
    card: str
    eligible: bool  # may take part (not excluded, of age, of an open tier)
    qualified: bool
    activated: bool
    tickets: int
    entries: int  # the tickets once activated, else 0
    per_tombola: dict[Tombola, int]
    visits: int  # gaming visits in the earning window
    sides: dict[Side, SideOut]
    breakdown: list[DeskRuleLineOut]
    reasons: list[str]  # why it does not qualify or take part, in words


class KioskStandingOut(BaseModel):
    """What a kiosk shows the cardholder (`bonusd.promotions.kioskview`): no reasons, no
    rule texts, no personal data; a card that is no member reads as not eligible."""

    promotion: str
    draw: str
    status: KioskStatus
    message: str  # the status in the kiosk's fixed words
    qualified: bool
    activated: bool
    tickets: int
    entries: int
    per_tombola: dict[Tombola, int]  # every tombola of the draw, 0 included
    visits: int
    sides: dict[Side, SideOut]
    breakdown: list[RuleLineOut]


class BoardPlaceOut(BaseModel):
    position: int  # 1 is the leader; positions are unique
    card: str
    points: int


class LivePlaceOut(BoardPlaceOut):
    reached_at: IsoTime  # when the member reached these points (ties go to the first)


class PublishedBoardOut(BaseModel):
    """The board as last published (weekly); no entries before the first publication."""

    promotion: str
    draw: str
    side: Side
    published_at: IsoTime | None  # None: not published yet
    entries: list[BoardPlaceOut]


class LiveBoardOut(BaseModel):
    """The top of the board now: eligible members only."""

    promotion: str
    draw: str
    side: Side
    as_of: IsoTime  # the daemon's clock when read
    entries: list[LivePlaceOut]


def standing_out(standing: Standing) -> StandingOut:
    """The desk's view of a standing: the kiosk's sides, and the breakdown with its texts."""
    return StandingOut(
        promotion=standing.promotion_id,
        draw=standing.draw_id,
        card=standing.card,
        eligible=standing.eligible,
        qualified=standing.qualified,
        activated=standing.activated,
        tickets=standing.tickets,
        entries=standing.entries,
        per_tombola=dict(standing.per_tombola),
        visits=standing.visits,
        sides={Side(k): SideOut.model_validate(v) for k, v in sides_json(standing).items()},
        breakdown=[
            DeskRuleLineOut.model_validate(x) for x in breakdown_json(standing, details=True)
        ],
        reasons=list(standing.reasons),
    )
