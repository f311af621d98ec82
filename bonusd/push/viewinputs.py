"""What the screens' views are computed from: `Inputs`, everything read at one instant
(the books of the draws and RAPS sessions near today, the published boards, the names
and places of the members shown), and the small facts every view module asks of them
(the gaming day of a promotion, whether a round is drawn). Pure: no I/O, no clock.

`bonusd.push.views` (signage), `bonusd.push.jackpotview`, `bonusd.push.attract` and
`bonusd.push.crewview` read these; `bonusd.push.hub` builds them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from bonusd.draws.book import DrawBook
from bonusd.promotions import Promotion
from bonusd.raps.book import RapsBook

View = dict[str, Any]
LINGER = dt.timedelta(minutes=15)  # a round past its time and not drawn yet stays "next"


@dataclass(frozen=True)
class Place:
    """Where a member is on the floor now."""

    area: str
    bank: str
    device: str
    seat: int | None = None


@dataclass(frozen=True)
class Inputs:
    """Everything a view is computed from, read at one instant."""

    now: dt.datetime
    zone: ZoneInfo
    site: str
    promotions: tuple[Promotion, ...]
    draws: Mapping[str, DrawBook] = field(default_factory=dict)  # subject -> book
    sessions: Mapping[str, RapsBook] = field(default_factory=dict)  # subject -> book
    boards: Mapping[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)  # card -> full name
    places: Mapping[str, Place] = field(default_factory=dict)  # card -> where, if active
    audit_seq: int = 0  # the head of the site's audit trail (the desk's change marker)

    def iso(self, at: dt.datetime | None) -> str | None:
        return None if at is None else at.astimezone(self.zone).isoformat(timespec="seconds")


def today(promotion: Promotion, now: dt.datetime) -> dt.date:
    """The promotion's gaming day at `now`."""
    return promotion.calendar.gaming_day(now)


def drawn(book: DrawBook | None, number: int) -> bool:
    """Whether round `number` of the draw has winners (in any of its tombolas)."""
    return book is not None and any(k[1] == number for k, _ in book.claim_round.values())
