"""The words the PA system says about winner events (`bonusd.notices.winnerevents`).

Owns: `Occasion` (what the words need to know about the draw or jackpot, from the
promotion file) and `pa_text`, the text a host reads out over the PA system (Golden Horse
cl. 16: "PA system will be used to announce winners and prizes won"). The SMS texts
built from the same events are in `bonusd.notices.smstext`.

Full names appear here on purpose: the text is for the crew and the desk who read it
out, never for a public screen (public screens mask names and cards; DOMAIN.md).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from bonusd.audit.chain import AuditRecord
from bonusd.errors import NotFoundError
from bonusd.notices.winnerevents import (
    JACKPOT_SUBJECT,
    EventReader,
    Moment,
    WinnerEvent,
    claim_event,
    winner_events,
)
from bonusd.promotions.schema import Promotion
from bonusd.promotions.terms import rands
from bonusd.registry.masking import mask_card

# the events themselves are read in `bonusd.notices.winnerevents`; importable from here too
__all__ = [
    "DRAW_PLACE",
    "RAPS_PLACE",
    "Announcement",
    "EventReader",
    "Moment",
    "Occasion",
    "WinnerEvent",
    "announcements",
    "called_by",
    "card_ending",
    "claim_event",
    "local_date",
    "local_time",
    "occasion_of",
    "pa_text",
    "prize_words",
    "promotion_id_of",
    "rands",
    "winner_events",
]

DRAW_PLACE = "the draw area"  # Festa cl. 10.1 "at the designated time and draw area"
RAPS_PLACE = "the place of draw"  # Festa cl. 17 "present himself or herself at the place of draw"
QUOTES = "'\""


@dataclass(frozen=True)
class Occasion:
    """What the words say about a draw or a RAPS jackpot; build it with `occasion_of`."""

    casino: str  # "Golden Horse"
    promotion: str  # "Mega Points Chase"
    name: str  # the draw's or the jackpot session's name: "Halfway draw"
    place: str  # where a called winner presents: "main stage"
    claim_seconds: int  # how long a called winner has to present
    collect_days: int  # prizes are collected within this many days of the draw
    zone: ZoneInfo  # the floor's local time, for the times said and written
    raps: bool


def promotion_id_of(draw_id: str) -> str:
    """The promotion of an audit subject (`promotion.draw`, `promotion.session.jN`)."""
    return draw_id.partition(".")[0]


def occasion_of(promotion: Promotion, draw_id: str) -> Occasion:
    """The occasion of audit subject `draw_id` in `promotion`; `NotFoundError` names it
    when the promotion (as it runs now) has no such draw or jackpot session."""
    rest = draw_id.removeprefix(f"{promotion.id}.")
    jackpot = JACKPOT_SUBJECT.match(rest)
    casino, title = promotion.casino, promotion.name
    days, zone = promotion.claims.prize_letter_days, promotion.zone
    try:
        if jackpot:
            session = promotion.jackpot_session(jackpot["session"])
            seconds = session.claim_seconds
            return Occasion(casino, title, session.name, RAPS_PLACE, seconds, days, zone, True)
        draw = promotion.draw(rest)
    except KeyError as exc:
        raise NotFoundError(f"{draw_id}: {str(exc).strip(QUOTES)}") from None
    place, seconds = draw.place or DRAW_PLACE, promotion.claims.claim_seconds
    return Occasion(casino, title, draw.name, place, seconds, days, zone, False)


# -- words -------------------------------------------------------------------------------
def card_ending(card: str) -> str:
    """The end of a card that may be shown: its last four characters, but always with
    at least four hidden (a short card shows less, or nothing)."""
    shown = min(4, max(0, len(card) - 4))
    return card[-shown:] if shown else ""


def local_time(at: dt.datetime, zone: ZoneInfo) -> str:
    return at.astimezone(zone).strftime("%H:%M:%S")


def local_date(at: dt.datetime, zone: ZoneInfo) -> str:
    day = at.astimezone(zone)
    return f"{day.day} {day:%B %Y}"


def prize_words(event: WinnerEvent) -> str:
    """The prize as said: its value when known, else its label."""
    return rands(event.value_cents) if event.value_cents is not None else event.prize


def called_by(event: WinnerEvent, occasion: Occasion) -> dt.datetime:
    """When a called winner's claim time runs out (DRAWN, CALLED)."""
    return event.deadline or event.at + dt.timedelta(seconds=occasion.claim_seconds)


def _at_device(event: WinnerEvent) -> str:
    return f" at {event.device}" if event.device else ""


def pa_text(event: WinnerEvent, occasion: Occasion, name: str) -> str | None:
    """The text a host reads out over the PA system for `event`, or None when nothing
    is announced (the crew's own steps at a device, a letter, its redemption or lapse).

    `name` is the winner's full name from the member registry ("" when the card is not
    registered); the card's last four characters are said with it (`card_ending`).
    """
    text = _words(event, occasion, name)
    return text[:1].upper() + text[1:] if text else None


def _words(event: WinnerEvent, occasion: Occasion, name: str) -> str | None:
    ending = card_ending(event.card)
    card = f"card ending {ending}" if ending else "the card drawn"
    who = f"{name}, {card}" if name else card
    first = (name.split(maxsplit=1) or ["Holder of that card"])[0]  # the full name said once
    seconds, place = occasion.claim_seconds, occasion.place
    by = local_time(called_by(event, occasion), occasion.zone)
    title = f"the {occasion.promotion} {occasion.name}"
    moment = event.moment
    if moment is Moment.DRAWN:
        where = "" if event.tombola in ("", "pooled") else f"{event.tombola} tombola, "
        which = "a redraw: the new winner" if event.redraw else "the winner"
        return (
            f"Ladies and gentlemen, {title}, {where}round {event.round}: {which} is {who}! "
            f"{first}, please come to {place} with your ID and your ticket receipt within "
            f"{seconds} seconds, by {by}. A registered proxy may present on your behalf."
        )
    if moment is Moment.PRESENTED:
        proxy = " by a registered proxy" if event.proxy else ""
        return f"{who} has presented{proxy} at {place}. Thank you!"
    if moment is Moment.VERIFIED:
        return f"{who} is verified. {first}, please pick your reveal."
    if moment is Moment.PRIZE:
        return f"Congratulations to {who}, who wins {prize_words(event)} in {title}!"
    if moment is Moment.NO_SHOW:
        return (
            f"{who} did not present within {seconds} seconds. We draw again from the same tickets."
        )
    if moment is Moment.CALLED:
        return (
            f"Ladies and gentlemen, {title}: {who}, selected{_at_device(event)}, please "
            f"present yourself at {place} within {seconds} seconds, by {by}, "
            "or the jackpot will be reselected."
        )
    if moment is Moment.WON:
        return f"Congratulations to {who}, winner of {title}!"
    if moment is Moment.DECLINED_REGISTER:
        return (
            f"{who} signed the decline register before the session: "
            f"the prize of {title} stands and is theirs."
        )
    if moment is Moment.RESELECTED and event.after_not_owner:
        return f"The card selected for {title} was not the player's. The jackpot is reselected."
    if moment is Moment.RESELECTED:
        return (
            f"{who} did not present within {seconds} seconds. "
            f"The {occasion.promotion} {occasion.name} is reselected from the same pool."
        )
    return None


@dataclass(frozen=True)
class Announcement:
    """A PA announcement as the desk and crew pages list it."""

    seq: int
    at: dt.datetime
    moment: Moment
    draw_id: str
    claim: str
    card: str  # masked: ****3456
    name: str
    text: str


def announcements(
    records: Iterable[AuditRecord], occasion: Occasion, names: Mapping[str, str]
) -> list[Announcement]:
    """The PA announcements of one draw's or session's ledger, oldest first; `names` maps
    the winners' cards to their full names (missing: said by card)."""
    out = []
    for event in winner_events(records):
        name = names.get(event.card, "")
        text = pa_text(event, occasion, name)
        if text is not None:
            card = mask_card(event.card)
            out.append(
                Announcement(
                    event.seq, event.at, event.moment, event.draw_id, event.claim, card, name, text
                )
            )
    return out
