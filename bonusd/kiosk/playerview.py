"""What a member sees of themselves at an eHost kiosk or in the casino's app: their
standing in every running draw, in plain words.

`view_of` takes what the edge (`bonusd.kiosk.standings`) read: the member (or None
for a card that is no member), and for each running draw its promotion and draw, the
member's `Standing`, the activation record and the member's places on the published
boards. It words each draw from `bonusd.promotions.kioskview.kiosk_standing` (status,
tickets, sides, breakdown): "tables: 18,400 of 20,000 points — 1,600 to go",
"slots: qualified (21,250 of 20,000 points)", "+5 app bonus".

What it never says:
- why a card may not take part. An excluded member, one under age (or without the date
  of birth a promotion requires) in every running draw, and a card that is no member
  all get the same neutral view: `neutral=True`, one fixed message, no member, no draws.
  A draw that is closed to an otherwise eligible member (a tier it is not open to, an
  age reached only after it) reads "not eligible" from the draw alone;
- anything of another member: a board place is the member's own position, never who
  else is on the board;
- personal data beyond what a floor screen shows: the masked name ("T. M****") and at
  most the last four characters of the card (`bonusd.registry.masking`).

Pure: plain data and an instant in, frozen dataclasses out; `view_json` turns them into
plain data (`PlayerViewOut` in `bonusd.api.playermodels` carries it to a client field
by field).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, cast

from bonusd.promotions import Channel, Draw, Promotion, Side, Standing, exclusion_reasons
from bonusd.promotions.kinds import QualificationKind
from bonusd.promotions.kioskview import KioskStatus, kiosk_standing
from bonusd.promotions.timing import (
    activation_opens_at,
    bin_closes_at,
    earning_window,
    round_instants,
)
from bonusd.registry.masking import STARS, mask_card, public_member
from bonusd.registry.records import Member

# the one answer to an excluded, under-age or unknown card: it says nothing of which
NEUTRAL = "nothing to show for this card — please see the promotions desk"
NO_DRAWS = "no draw is running at the moment"
ENTRIES = "your standing in the draws running now"

# a breakdown line's rule (bonusd.promotions.rules.RuleLine.rule) in a player's words
_RULE_WORDS = {
    "points": "from {side} points",
    "side_visits": "for {side} gaming visits",
    "min_one": "for rated play in the window",
    "visits": "for gaming visits",
    "base": "free",
    "app_bonus": "app bonus",
    "cap": "over the draw's ticket cap",
}


@dataclass(frozen=True, slots=True)
class ActivationRecord:
    """How and when a member's entries in a draw were activated (the first activation)."""

    channel: Channel
    at: dt.datetime


@dataclass(frozen=True, slots=True)
class DrawFacts:
    """What the edge read about one member in one running draw."""

    promotion: Promotion
    draw: Draw
    standing: Standing | None  # None: no standing could be judged (no member)
    activation: ActivationRecord | None
    # the member's position on each published board of the draw (None: not on it);
    # sides without a published board are left out
    boards: Mapping[Side, int | None]


@dataclass(frozen=True, slots=True)
class PlayerMember:
    masked_name: str  # as signage masks it: "T. M****"
    card_last4: str  # at most the last four characters, at least four always hidden


@dataclass(frozen=True, slots=True)
class PlayerActivation:
    required: bool  # the draw's entries count only once activated
    activated: bool
    channel: Channel | None
    at: dt.datetime | None
    opens: dt.datetime | None  # activation opens (the draw day's `activation.opens`)
    closes: dt.datetime | None  # the entry bin closes: no activation from then on
    open_now: bool  # activation is taken now (by some channel)


@dataclass(frozen=True, slots=True)
class BoardPlace:
    side: Side
    position: int | None  # the member's place on the published board (None: not on it)


@dataclass(frozen=True, slots=True)
class ReceiptRef:
    """The member's receipt of a draw (the kiosk's store fills it in)."""

    number: int
    prints: int


@dataclass(frozen=True, slots=True)
class PlayerDraw:
    promotion: str
    promotion_name: str
    casino: str
    draw: str
    draw_name: str
    status: KioskStatus
    message: str
    tickets: int
    entries: int
    per_tombola: dict[str, int]
    lines: tuple[str, ...]  # the standing in plain words
    activation: PlayerActivation
    draw_times: tuple[dt.datetime, ...]
    boards: tuple[BoardPlace, ...]
    receipt: ReceiptRef | None = None


@dataclass(frozen=True, slots=True)
class PlayerView:
    as_of: dt.datetime
    neutral: bool
    message: str
    member: PlayerMember | None
    draws: tuple[PlayerDraw, ...]


def neutral_view(now: dt.datetime) -> PlayerView:
    """The answer to a card with nothing to show: the same for every such card."""
    return PlayerView(as_of=now, neutral=True, message=NEUTRAL, member=None, draws=())


def running_draws(
    promotions: Sequence[Promotion], now: dt.datetime
) -> list[tuple[Promotion, Draw]]:
    """The draws a member may stand in now: of a promotion that has started, with the
    earning window or the activation open (or past: a play window on the draw day opens
    after activation does), until the end of the gaming day of its last round (on the
    draw night a member reprints the receipt with the drum's ticket numbers and sees the
    draw's times). In order of their first round."""
    found = []
    for promotion in promotions:
        today = promotion.calendar.gaming_day(now)
        if today < promotion.start:
            continue
        for draw in promotion.draw_list:
            opens = min(earning_window(promotion, draw).opens, activation_opens_at(promotion, draw))
            last = promotion.calendar.gaming_day(round_instants(promotion, draw)[-1])
            if opens <= now and today <= last:
                found.append((promotion, draw))
    found.sort(key=lambda pair: (round_instants(*pair)[0], pair[0].id, pair[1].id))
    return found


def is_barred(member: Member | None, facts: Sequence[DrawFacts]) -> bool:
    """Whether the card gets the neutral view: no member, an excluded one, or one that the
    exclusions (age, a required date of birth) keep out of every running draw."""
    if member is None or member.excluded:
        return True
    return all(exclusion_reasons(f.promotion, member, f.draw.date) for f in facts)


def view_of(member: Member | None, facts: Sequence[DrawFacts], now: dt.datetime) -> PlayerView:
    """The member's view of the running draws (`facts`, in the order to show them).

    With no draw running, only an excluded member (and no member) is neutral: age is
    judged on a draw's date, so there is none to judge it on."""
    if member is None or member.excluded or (facts and is_barred(member, facts)):
        return neutral_view(now)
    shown = public_member(member.name, member.card)
    last4 = mask_card(member.card).removeprefix(STARS)
    return PlayerView(
        as_of=now,
        neutral=False,
        message=ENTRIES if facts else NO_DRAWS,
        member=PlayerMember(masked_name=shown["name"], card_last4=last4),
        draws=tuple(_draw(f, now) for f in facts),
    )


def view_json(view: PlayerView) -> dict[str, Any]:
    """The view as plain data in the shape of `PlayerViewOut`: enums as their values,
    tuples as lists, instants as aware datetimes, each draw's `receipt` None (the kiosk
    fills it in)."""
    return cast(dict[str, Any], _plain(asdict(view)))


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    return value


def _draw(facts: DrawFacts, now: dt.datetime) -> PlayerDraw:
    promotion, draw = facts.promotion, facts.draw
    kiosk = kiosk_standing(promotion.id, draw, facts.standing)
    status = KioskStatus(kiosk["status"])
    barred = status is KioskStatus.NOT_ELIGIBLE  # from the draw alone, like a stranger's card
    return PlayerDraw(
        promotion=promotion.id,
        promotion_name=promotion.name,
        casino=promotion.casino,
        draw=draw.id,
        draw_name=draw.name,
        status=status,
        message=kiosk["message"],
        tickets=kiosk["tickets"],
        entries=kiosk["entries"],
        per_tombola=dict(kiosk["per_tombola"]),
        lines=() if barred else tuple(standing_lines(draw, kiosk)),
        activation=_activation(promotion, draw, None if barred else facts.activation, now),
        draw_times=round_instants(promotion, draw),
        boards=tuple(
            BoardPlace(side, None if barred else position)
            for side, position in sorted(facts.boards.items())
        ),
    )


def _activation(
    promotion: Promotion, draw: Draw, record: ActivationRecord | None, now: dt.datetime
) -> PlayerActivation:
    opens, closes = activation_opens_at(promotion, draw), bin_closes_at(promotion, draw)
    return PlayerActivation(
        required=bool(draw.activation.channels),
        activated=record is not None,
        channel=record.channel if record else None,
        at=record.at if record else None,
        opens=opens,
        closes=closes,
        open_now=opens <= now < closes,
    )


def standing_lines(draw: Draw, kiosk: Mapping[str, Any]) -> list[str]:
    """A kiosk standing (`kiosk_standing`) in plain words: each judged side against its
    threshold, then the tickets rule by rule, then the tickets per tombola when the draw
    has several."""
    lines = side_lines(draw, kiosk)
    lines += [breakdown_line(line) for line in kiosk["breakdown"]]
    per_tombola: Mapping[str, int] = kiosk["per_tombola"]
    if len(per_tombola) > 1 and kiosk["tickets"]:
        lines += [f"{name} tombola: {_tickets(count)}" for name, count in per_tombola.items()]
    return lines


def side_lines(draw: Draw, kiosk: Mapping[str, Any]) -> list[str]:
    """Where the member stands against the draw's qualification rule."""
    kind = draw.qualification.kind
    if kind is QualificationKind.ACTIVES:
        if kiosk["qualified"]:
            return [f"qualified: {_count(kiosk['visits'], 'gaming visit')} in the window"]
        return ["no gaming visit in the window yet"]
    lines = []
    for side, state in kiosk["sides"].items():
        threshold, points = state["threshold"], state["points"]
        if kind is QualificationKind.PLAY_IN_WINDOW or threshold is None:
            lines.append(
                f"{side}: qualified (rated play in the window)"
                if state["qualified"]
                else f"{side}: no rated play in the window yet"
            )
        elif state["qualified"]:
            lines.append(f"{side}: qualified ({points:,} of {threshold:,} points)")
        else:
            lines.append(
                f"{side}: {points:,} of {threshold:,} points — {threshold - points:,} to go"
            )
    return lines


def breakdown_line(line: Mapping[str, Any]) -> str:
    """One rule line of the breakdown: "+12 from slots points", "+5 app bonus",
    "-20 over the draw's ticket cap"."""
    words = _RULE_WORDS.get(str(line["rule"]), str(line["rule"]).replace("_", " "))
    tickets = int(line["tickets"])
    text = words.format(side=line["side"] or "")
    if line["rule"] == "base":
        text = "free ticket" if tickets == 1 else "free tickets"
    sign = "+" if tickets >= 0 else "−"
    return f"{sign}{abs(tickets):,} {text}"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def _tickets(number: int) -> str:
    return _count(number, "ticket")


@dataclass(frozen=True, slots=True)
class PublicPlace:
    """A place on a published board as the floor screens show it: masked."""

    position: int
    name: str  # "T. M****"
    card: str  # "****3456"
    points: int


def public_places(
    entries: Sequence[Mapping[str, Any]], names: Mapping[str, str]
) -> tuple[PublicPlace, ...]:
    """A published board's entries (`PromotionStore.published_board`) masked as signage
    masks them (`bonusd.registry.masking.public_member`): never a full name or card.
    `names` holds the members' names by card ("" or missing: the name is not shown)."""
    places = []
    for entry in entries:
        card = str(entry["card"])
        shown = public_member(names.get(card, ""), card)
        places.append(
            PublicPlace(int(entry["position"]), shown["name"], shown["card"], int(entry["points"]))
        )
    return tuple(places)
