"""What a kiosk shows of a member's standing in a draw: the tickets and how they were
earned, never why a card may not take part.

A kiosk (an eHost kiosk, or the app's back end, which holds a kiosk token) answers
whoever inserts a card or types a number, so it shows no more than the cardholder would
see on it. The promotions desk keeps the whole standing, every reason and rule text
included (`standing_out` in `bonusd.api.promotionmodels`).

- A card that may not take part in the draw (excluded, under age, without the date of
  birth a promotion requires, of a tier the draw is not open to) gets the neutral
  `NOT_ELIGIBLE` answer, built from the draw alone: byte for byte the answer to a card
  that is no member at all. A kiosk cannot tell an excluded member from a stranger's card.
- Any other card: a status with a fixed message, whether it qualified and is activated,
  tickets and entries per tombola, visits, each side's points against the threshold, and
  the breakdown as (rule, tombola, side, tickets) without the desk's texts: the kiosk
  words its own screen from these numbers.
- No personal data: no name (not even a first name), date of birth, tier, exclusion,
  mobile, and not the card number either (the kiosk knows which card it asked about).

Pure: a standing (or None for a card that is no member) in, plain JSON-ready data out.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from bonusd.promotions import Standing
from bonusd.promotions.schema import Draw

NOT_ELIGIBLE = "not eligible — please see the promotions desk"


class KioskStatus(StrEnum):
    """Where the cardholder stands, as a kiosk may say it."""

    NOT_ELIGIBLE = "not_eligible"  # or no member: the same answer
    NO_TICKETS = "no_tickets"  # may take part, holds no tickets (yet)
    NOT_ACTIVATED = "not_activated"  # holds tickets that are not entered in the draw
    ENTERED = "entered"  # holds tickets, activated: they are the draw's entries


MESSAGES: dict[KioskStatus, str] = {
    KioskStatus.NOT_ELIGIBLE: NOT_ELIGIBLE,
    KioskStatus.NO_TICKETS: "no tickets in this draw yet",
    KioskStatus.NOT_ACTIVATED: "tickets earned: activate them to enter the draw",
    KioskStatus.ENTERED: "your tickets are entered in the draw",
}


def _status(standing: Standing) -> KioskStatus:
    if not standing.eligible:
        return KioskStatus.NOT_ELIGIBLE
    if not standing.tickets:
        return KioskStatus.NO_TICKETS
    return KioskStatus.ENTERED if standing.activated else KioskStatus.NOT_ACTIVATED


def kiosk_standing(promotion_id: str, draw: Draw, found: Standing | None) -> dict[str, Any]:
    """The kiosk's answer about one card in `draw`: `found` is its standing, or None for
    a card that is no member (answered exactly like one that may not take part)."""
    status = KioskStatus.NOT_ELIGIBLE if found is None else _status(found)
    if found is None or status is KioskStatus.NOT_ELIGIBLE:
        # from the draw alone: nothing of the card's record can shape this answer
        return {
            "promotion": promotion_id,
            "draw": draw.id,
            "status": status.value,
            "message": MESSAGES[status],
            "qualified": False,
            "activated": False,
            "tickets": 0,
            "entries": 0,
            "per_tombola": {str(t): 0 for t in draw.tombola_names},
            "visits": 0,
            "sides": {},
            "breakdown": [],
        }
    return {
        "promotion": promotion_id,
        "draw": draw.id,
        "status": status.value,
        "message": MESSAGES[status],
        "qualified": found.qualified,
        "activated": found.activated,
        "tickets": found.tickets,
        "entries": found.entries,
        "per_tombola": {str(t): found.per_tombola.get(t, 0) for t in draw.tombola_names},
        "visits": found.visits,
        "sides": sides_json(found),
        "breakdown": breakdown_json(found, details=False),
    }


def sides_json(found: Standing) -> dict[str, dict[str, Any]]:
    """Each side's points against its threshold (the desk's view and the kiosk's alike)."""
    return {
        str(side.side): {
            "points": side.points,
            "threshold": side.threshold,
            "qualified": side.qualified,
            "tickets": side.tickets,
        }
        for side in found.sides
    }


def breakdown_json(found: Standing, *, details: bool) -> list[dict[str, Any]]:
    """The tickets by rule; `details` adds each line's wording, which names tier caps and
    app users (the desk's view only, never a kiosk's)."""
    lines = []
    for line in found.breakdown:
        out: dict[str, Any] = {
            "rule": line.rule,
            "tombola": str(line.tombola),
            "side": str(line.side) if line.side else None,
            "tickets": line.tickets,
        }
        if details:
            out["detail"] = line.detail
        lines.append(out)
    return lines
