"""Winner events read from the audit trail: `WinnerEvent` (one winner announcement or
claim outcome, as read from its audit record by `EventReader`, or from a book's claims
by `claim_event`). The words said and sent about them are in `bonusd.notices.announcements` and
`bonusd.notices.smstext`. Pure: no I/O, no clock."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from bonusd.audit.chain import AuditRecord, Kind
from bonusd.draws.claims import DrawClaim
from bonusd.draws.plan import parse_time
from bonusd.raps.rules import RapsClaim

# a RAPS jackpot's subject after the promotion: `session.jN`
JACKPOT_SUBJECT = re.compile(r"^(?P<session>[a-z0-9][a-z0-9-]*)\.j(?P<number>[0-9]+)$")


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
        payload = record.payload
        draw_id = payload.get("draw_id")
        if not isinstance(draw_id, str):
            return None
        before = self._before.get(draw_id, "")
        self._before[draw_id] = record.kind
        if record.kind == Kind.PRIZES:
            for label, cents in payload.get("prizes", []):
                self._values[(draw_id, label)] = cents
            return None
        if record.kind == Kind.LETTER:
            return self._letter(record, draw_id)
        if record.kind != Kind.CLAIM:
            return None
        raps = bool(JACKPOT_SUBJECT.match(draw_id.partition(".")[2]))
        moment = (_RAPS_ACTIONS if raps else _DRAW_ACTIONS).get(payload.get("action", ""))
        if moment is None:
            return None
        detail: Mapping[str, Any] = payload.get("detail", {})
        if raps and "device" in detail:
            self._places[(draw_id, payload.get("claim", ""))] = detail
        where = self._places.get((draw_id, payload.get("claim", "")), {}) if raps else detail
        prize = detail.get("prize", "")
        return WinnerEvent(
            seq=record.seq,
            at=parse_time(record.time),
            moment=moment,
            draw_id=draw_id,
            claim=payload.get("claim", ""),
            card=payload.get("card", ""),
            raps=raps,
            redraw=payload.get("action") == "created" and before == Kind.REDRAW,
            tombola=detail.get("tombola", ""),
            round=int(detail.get("round", 0) or 0),
            deadline=parse_time(detail["deadline"]) if "deadline" in detail else None,
            device=where.get("device", ""),
            area=where.get("area", ""),
            bank=where.get("bank", ""),
            prize=prize,
            value_cents=self._values.get((draw_id, prize)) if prize else None,
            letter=detail.get("letter", ""),
            proxy=detail.get("presenter", "")
            if detail.get("presenter", "winner") != "winner"
            else "",
            after_not_owner=payload.get("from") == "not_owner",
        )

    def _letter(self, record: AuditRecord, draw_id: str) -> WinnerEvent:
        payload = record.payload
        return WinnerEvent(
            seq=record.seq,
            at=parse_time(record.time),
            moment=Moment.LETTER,
            draw_id=draw_id,
            claim=payload.get("claim", ""),
            card=payload.get("winner", ""),
            raps=False,
            prize=payload.get("prize", ""),
            value_cents=payload.get("value_cents"),
            letter=payload.get("number", ""),
            expires_at=parse_time(payload["expires_at"]) if "expires_at" in payload else None,
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
    detail = move.detail
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
        letter=detail.get("letter", ""),
        proxy=detail.get("presenter", "") if detail.get("presenter", "winner") != "winner" else "",
        after_not_owner=move.before == "not_owner",
    )


def winner_events(records: Iterable[AuditRecord]) -> list[WinnerEvent]:
    """Every winner event of `records` (in chain order), oldest first."""
    reader = EventReader()
    return [e for e in map(reader.read, records) if e is not None]
