"""The SMS a winner who opted in receives (Festa Fortuna cl. 5), from a winner event.

Owns which winner events are texted (`SMS_MOMENTS`), the words of each text, and until
when a text is still worth sending (a "present within 90 seconds" text that could not go
out in time is dropped as expired, not sent late). A text names the promotion, the
place and the time to present by (or the date to collect by), and shows the card as
`****3456`: never the full card number, never the member's name. Pure.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from bonusd.notices.announcements import (
    Moment,
    Occasion,
    WinnerEvent,
    called_by,
    local_date,
    local_time,
    prize_words,
)
from bonusd.registry.masking import mask_card

# Golden Horse: "Winners will be issued their prize letter at the Tsogo Rewards Desk,
# which can be redeemed at the Cash Desk for cash."
PRIZE_DESK = "the Tsogo Rewards Desk"
CASH_DESK = "the Cash Desk"

SMS_MOMENTS = frozenset(
    {Moment.DRAWN, Moment.SELECTED, Moment.CALLED, Moment.DECLINED_REGISTER, Moment.LETTER}
)
"""Texted: a winner called to present (draw pick or redraw; RAPS selection and call), a
RAPS prize kept through the decline register, a prize letter issued. The other steps
happen with the winner standing in front of the crew."""


@dataclass(frozen=True)
class SmsNotice:
    text: str
    expires_at: dt.datetime  # not worth sending after this instant


def _last_day(until: dt.datetime, occasion: Occasion) -> str:
    """The last local day before `until` (a lapse at 00:00 means the day before)."""
    return local_date(until - dt.timedelta(seconds=1), occasion.zone)


def sms_notice(event: WinnerEvent, occasion: Occasion) -> SmsNotice | None:
    """The text for `event`, or None when the event is not texted."""
    head = " ".join(filter(None, (occasion.casino, occasion.promotion))) + ":"
    card = f"card {mask_card(event.card)}"
    seconds, place, name = occasion.claim_seconds, occasion.place, occasion.name
    collect_by = event.at + dt.timedelta(days=occasion.collect_days)
    moment = event.moment
    if moment is Moment.DRAWN:
        by = called_by(event, occasion)
        again = " in a redraw" if event.redraw else ""
        text = (
            f"{head} {card} has been drawn{again} in the {name}! Present yourself with ID and "
            f"your ticket receipt at {place} by {local_time(by, occasion.zone)} ({seconds} "
            "seconds from the announcement). A registered proxy may present for you."
        )
        return SmsNotice(text, by)
    if moment is Moment.SELECTED:
        text = (
            f"{head} {card} has been selected for the {name}"
            f"{f' at {event.device}' if event.device else ''}! "
            "Stay where you are playing: a promotions host is on the way to you."
        )
        return SmsNotice(text, event.at + dt.timedelta(seconds=seconds))
    if moment is Moment.CALLED:
        by = called_by(event, occasion)
        text = (
            f"{head} {card} was selected for the {name} but was not at "
            f"{event.device or 'the machine or table'}. "
            f"Present yourself at {place} by {local_time(by, occasion.zone)} ({seconds} "
            "seconds) to claim the prize."
        )
        return SmsNotice(text, by)
    if moment is Moment.DECLINED_REGISTER:
        text = (
            f"{head} {card} won the {name}. You signed the decline register, so the prize "
            f"is yours: collect it at {PRIZE_DESK} by {_last_day(collect_by, occasion)}."
        )
        return SmsNotice(text, collect_by)
    if moment is Moment.LETTER:
        until = event.expires_at or collect_by
        text = (
            f"{head} prize letter {event.letter} for {card} ({prize_words(event)}) is issued. "
            f"Redeem it at {CASH_DESK} by {_last_day(until, occasion)}, with your ID."
        )
        return SmsNotice(text, until)
    return None
