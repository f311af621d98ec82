"""Winner events read from the audit trail, and the words the PA system says about them.

Owns: `WinnerEvent` (one winner announcement or claim outcome, as read from its audit
record by `EventReader`), `Occasion` (what the words need to know about the draw or
jackpot, from the promotion file) and `pa_text`, the text a host reads out over the PA
system (Golden Horse cl. 16: "PA system will be used to announce winners and prizes
won"). `claim_event` gives the same events from a book's claims. The SMS texts built
from the same events are in `bonusd.smstext`.

Full names appear here on purpose: the text is for the crew and the desk who read it
out, never for a public screen (public screens mask names and cards; DOMAIN.md).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from bonusd.audit import AuditRecord, Kind
from bonusd.claims import DrawClaim
from bonusd.drawbook import parse_time
from bonusd.errors import NotFoundError
from bonusd.masking import mask_card
from bonusd.promotions.schema import Promotion
from bonusd.raps import RapsClaim

DRAW_PLACE = "the draw area"  # Festa cl. 10.1 "at the designated time and draw area"
RAPS_PLACE = "the place of draw"  # Festa cl. 17 "present himself or herself at the place of draw"
QUOTES = "'\""
_JACKPOT = re.compile(r"^(?P<session>[a-z0-9][a-z0-9-]*)\.j(?P<number>[0-9]+)$")


class Moment(StrEnum):
    """What happened to a winner. Draws: drawn → presented → verified → prize → letter →
    redeemed / lapsed, or no_show. RAPS: selected → crew_at_device → won, or
    not_at_device → called → presented → won / declined_register / reselected."""

    DRAWN = "drawn"  # a pick (or redraw) announced; the claim time runs
    PRESENTED = "presented"
    VERIFIED = "verified"
    PRIZE = "prize"  # the winner picked a reveal: the prize is known
    NO_SHOW = "no_show"
    LETTER = "letter"  # the prize letter issued (from the LETTER record)
    REDEEMED = "redeemed"
    LAPSED = "lapsed"
    SELECTED = "selected"  # RAPS: the crew is alerted to the device
    CREW_AT_DEVICE = "crew_at_device"
    NOT_AT_DEVICE = "not_at_device"
    NOT_OWNER = "not_owner"
    CALLED = "called"  # RAPS: the announcement; the claim time runs
    WON = "won"  # RAPS: verified at the device or at the place of draw
    DECLINED_REGISTER = "declined_register"  # RAPS: absent, but signed the register: wins
    RESELECTED = "reselected"


_DRAW_ACTIONS = {
    "created": Moment.DRAWN,
    "present": Moment.PRESENTED,
    "verify": Moment.VERIFIED,
    "pick_reveal": Moment.PRIZE,
    "no_show": Moment.NO_SHOW,
    "redeem": Moment.REDEEMED,
    "lapse": Moment.LAPSED,
}  # "issue_letter" is read from the LETTER record that follows it, which has the facts
_RAPS_ACTIONS = {
    "created": Moment.SELECTED,
    "crew_arrived": Moment.CREW_AT_DEVICE,
    "verify_at_device": Moment.WON,
    "not_at_device": Moment.NOT_AT_DEVICE,
    "not_owner": Moment.NOT_OWNER,
    "announce": Moment.CALLED,
    "present": Moment.PRESENTED,
    "verify": Moment.WON,
    "declined_register": Moment.DECLINED_REGISTER,
    "reselect": Moment.RESELECTED,
}


@dataclass(frozen=True)
class WinnerEvent:
    """One winner announcement or claim outcome, from audit record `seq`."""

    seq: int
    at: dt.datetime
    moment: Moment
    draw_id: str  # the audit subject: `promotion.draw` or `promotion.session.jN`
    claim: str  # "claim 3", "RAPS claim 2"
    card: str
    raps: bool
    redraw: bool = False  # a draw's redraw or a RAPS reselection (the pick followed a REDRAW)
    tombola: str = ""
    round: int = 0
    deadline: dt.datetime | None = None  # DRAWN: present by then
    device: str = ""  # RAPS: where the crew finds the winner
    area: str = ""
    bank: str = ""
    prize: str = ""  # PRIZE, LETTER: the prize's label
    value_cents: int | None = None  # PRIZE (when the round's prizes were read), LETTER
    letter: str = ""  # LETTER, REDEEMED, LAPSED: the letter's number
    expires_at: dt.datetime | None = None  # LETTER: redeemable until then
    proxy: str = ""  # PRESENTED: the registered proxy's ID number, if a proxy presented
    after_not_owner: bool = False  # RESELECTED straight after a card not its holder's


class EventReader:
    """Reads winner events from audit records given in chain order: a draw's or session's
    ledger, or the site's whole trail. Keeps only what later records need: which record
    came before (a claim created after a REDRAW is a redraw), the values of each round's
    prizes (a reveal's record names its prize's label only) and where each RAPS winner
    was found (only the claim's first record says)."""

    def __init__(self) -> None:
        self._before: dict[str, str] = {}  # draw_id -> kind of its previous record
        self._values: dict[tuple[str, str], int] = {}  # (draw_id, prize label) -> cents
        self._places: dict[tuple[str, str], Mapping[str, Any]] = {}  # (draw_id, claim) -> detail

    def read(self, record: AuditRecord) -> WinnerEvent | None:
        """The winner event `record` is, or None (commitments, pools, seeds, ...)."""
        p = record.payload
        draw_id = p.get("draw_id")
        if not isinstance(draw_id, str):
            return None
        before = self._before.get(draw_id, "")
        self._before[draw_id] = record.kind
        if record.kind == Kind.PRIZES:
            for label, cents in p.get("prizes", []):
                self._values[(draw_id, label)] = cents
            return None
        if record.kind == Kind.LETTER:
            return self._letter(record, draw_id)
        if record.kind != Kind.CLAIM:
            return None
        raps = bool(_JACKPOT.match(draw_id.partition(".")[2]))
        moment = (_RAPS_ACTIONS if raps else _DRAW_ACTIONS).get(p.get("action", ""))
        if moment is None:
            return None
        d: Mapping[str, Any] = p.get("detail", {})
        if raps and "device" in d:
            self._places[(draw_id, p.get("claim", ""))] = d
        where = self._places.get((draw_id, p.get("claim", "")), {}) if raps else d
        prize = d.get("prize", "")
        return WinnerEvent(
            seq=record.seq,
            at=parse_time(record.time),
            moment=moment,
            draw_id=draw_id,
            claim=p.get("claim", ""),
            card=p.get("card", ""),
            raps=raps,
            redraw=p.get("action") == "created" and before == Kind.REDRAW,
            tombola=d.get("tombola", ""),
            round=int(d.get("round", 0) or 0),
            deadline=parse_time(d["deadline"]) if "deadline" in d else None,
            device=where.get("device", ""),
            area=where.get("area", ""),
            bank=where.get("bank", ""),
            prize=prize,
            value_cents=self._values.get((draw_id, prize)) if prize else None,
            letter=d.get("letter", ""),
            proxy=d.get("presenter", "") if d.get("presenter", "winner") != "winner" else "",
            after_not_owner=p.get("from") == "not_owner",
        )

    def _letter(self, record: AuditRecord, draw_id: str) -> WinnerEvent:
        p = record.payload
        return WinnerEvent(
            seq=record.seq,
            at=parse_time(record.time),
            moment=Moment.LETTER,
            draw_id=draw_id,
            claim=p.get("claim", ""),
            card=p.get("winner", ""),
            raps=False,
            prize=p.get("prize", ""),
            value_cents=p.get("value_cents"),
            letter=p.get("number", ""),
            expires_at=parse_time(p["expires_at"]) if "expires_at" in p else None,
        )


def claim_event(
    draw_id: str, claim: DrawClaim | RapsClaim, *, tombola: str = "", round_no: int = 0
) -> WinnerEvent | None:
    """The event of a claim's latest step, for callers holding a draw's or session's
    book rather than its records (`book.subject`, `book.claims[n]`; for a draw also the
    round from `book.claim_round[n]`). `seq` is 0: a claim's steps carry no record seq.
    Not known from a claim alone: whether its pick was a redraw."""
    move = claim.history[-1]
    raps = isinstance(claim, RapsClaim)
    moment = (_RAPS_ACTIONS if raps else _DRAW_ACTIONS).get(move.action)
    if isinstance(claim, DrawClaim) and claim.letter is not None and move.action == "issue_letter":
        lt = claim.letter
        event = WinnerEvent(0, move.at, Moment.LETTER, draw_id, claim.subject, claim.card, False)
        return replace(
            event,
            prize=lt.prize.label,
            value_cents=lt.prize.value_cents,
            letter=lt.number,
            expires_at=lt.expires_at,
        )
    if moment is None:
        return None
    d = move.detail
    won = claim.prize if isinstance(claim, DrawClaim) else None
    return WinnerEvent(
        seq=0,
        at=move.at,
        moment=moment,
        draw_id=draw_id,
        claim=claim.subject,
        card=claim.card,
        raps=raps,
        tombola=tombola,
        round=round_no,
        deadline=claim.deadline if isinstance(claim, DrawClaim) else claim.deadline_now(),
        device=claim.device if isinstance(claim, RapsClaim) else "",
        area=claim.area if isinstance(claim, RapsClaim) else "",
        bank=claim.bank if isinstance(claim, RapsClaim) else "",
        prize=won.label if won else "",
        value_cents=won.value_cents if won else None,
        letter=d.get("letter", ""),
        proxy=d.get("presenter", "") if d.get("presenter", "winner") != "winner" else "",
        after_not_owner=move.before == "not_owner",
    )


def winner_events(records: Iterable[AuditRecord]) -> list[WinnerEvent]:
    """Every winner event of `records` (in chain order), oldest first."""
    reader = EventReader()
    return [e for e in map(reader.read, records) if e is not None]


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
    jackpot = _JACKPOT.match(rest)
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


def rands(cents: int) -> str:
    """R5,000 or R5,000.50."""
    whole, part = divmod(cents, 100)
    return f"R{whole:,}" + (f".{part:02d}" if part else "")


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
    first = name or f"Holder of {card}"
    seconds, place = occasion.claim_seconds, occasion.place
    by = local_time(called_by(event, occasion), occasion.zone)
    title = f"the {occasion.promotion} {occasion.name}"
    m = event.moment
    if m is Moment.DRAWN:
        where = "" if event.tombola in ("", "pooled") else f"{event.tombola} tombola, "
        which = "a redraw: the new winner" if event.redraw else "the winner"
        return (
            f"Ladies and gentlemen, {title}, {where}round {event.round}: {which} is {who}! "
            f"{first}, please come to {place} with your ID and your ticket receipt within "
            f"{seconds} seconds, by {by}. A registered proxy may present on your behalf."
        )
    if m is Moment.PRESENTED:
        proxy = " by a registered proxy" if event.proxy else ""
        return f"{who} has presented{proxy} at {place}. Thank you!"
    if m is Moment.VERIFIED:
        return f"{who} is verified. {first}, please pick your reveal."
    if m is Moment.PRIZE:
        return f"Congratulations to {who}, who wins {prize_words(event)} in {title}!"
    if m is Moment.NO_SHOW:
        return (
            f"{who} did not present within {seconds} seconds. We draw again from the same tickets."
        )
    if m is Moment.CALLED:
        return (
            f"Ladies and gentlemen, {title}: {who}, selected{_at_device(event)}, please "
            f"present yourself at {place} within {seconds} seconds, by {by}, "
            "or the jackpot will be reselected."
        )
    if m is Moment.WON:
        return f"Congratulations to {who}, winner of {title}!"
    if m is Moment.DECLINED_REGISTER:
        return (
            f"{who} signed the decline register before the session: "
            f"the prize of {title} stands and is theirs."
        )
    if m is Moment.RESELECTED and event.after_not_owner:
        return f"The card selected for {title} was not the player's. The jackpot is reselected."
    if m is Moment.RESELECTED:
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
