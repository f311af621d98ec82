"""The desk's change marker: a small section of the crew stream (`desk`) that changes
whenever anything the promotions desk shows may have changed. Pure: no I/O, no clock.

The desk page keeps its tables from the HTTP API; this section only tells it when to
fetch them again (docs/push.md, "The desk's change marker"). It holds the head of the
site's audit trail (`audit`: every draw, claim and RAPS step is an audit record) and the
state of every draw of the site's promotions (`draws`: upcoming, earning, activation,
closing, frozen), which also moves with the clock alone (a window opening, the bin's
scheduled close) when nothing is written.
"""

from __future__ import annotations

import datetime as dt

from bonusd.draws.book import DrawBook
from bonusd.promotions import Draw, Promotion
from bonusd.promotions.timing import bin_closes_at, earning_window
from bonusd.push.viewinputs import Inputs, View

DESK_SECTION = "desk"


def draw_state(promotion: Promotion, draw: Draw, book: DrawBook | None, now: dt.datetime) -> str:
    """The draw's state at `now`, as `GET /promotions/{id}` says it; a draw whose book is
    not among the inputs (not near today) counts as frozen once its bin's time is past."""
    window = earning_window(promotion, draw)
    closes = bin_closes_at(promotion, draw)
    if book is None:
        frozen = now >= closes
    else:
        frozen = any(rnd.pool is not None for rnd in book.draw.rounds.values())
    if frozen and now >= window.opens:
        return "frozen"
    if now < window.opens:
        return "upcoming"
    if now < window.closes:
        return "earning"
    if now < closes:
        return "activation"
    return "closing"


def desk_marker(inp: Inputs) -> View:
    """The `desk` section: `{"audit": head seq, "draws": {"promotion.draw": state}}`."""
    draws = {
        f"{promotion.id}.{draw.id}": draw_state(
            promotion, draw, inp.draws.get(f"{promotion.id}.{draw.id}"), inp.now
        )
        for promotion in inp.promotions
        for draw in promotion.draw_list
    }
    return {"audit": inp.audit_seq, "draws": draws}
