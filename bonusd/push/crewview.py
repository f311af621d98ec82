"""The crew's view of the site: every open claim as an alert, by urgency, with where to
find the winner, the actions its state allows now, what to say over the PA and, for a
RAPS jackpot, the crew's reselections left and when the next is allowed. Pure.

Computed from the same `views.Inputs` as the public views, but nothing is masked here:
the crew needs the name to ask for. The words of the PA come from
`bonusd.notices.announcements`; the endpoints of the actions are those of `bonusd.api.draws`
and `bonusd.api.jackpots` (the tests hold the tables here to theirs).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from bonusd.draws.book import DrawBook
from bonusd.draws.claims import ClaimRole, Machine
from bonusd.errors import NotFoundError
from bonusd.notices.announcements import Moment, WinnerEvent, occasion_of, pa_text
from bonusd.promotions import JackpotSession, Promotion
from bonusd.push.deskview import DESK_SECTION, desk_marker
from bonusd.push.views import OUTCOMES, Inputs, View, draw_claims
from bonusd.raps.book import RapsBook
from bonusd.raps.plan import JackpotState
from bonusd.raps.reselection import REASONED
from bonusd.raps.rules import RapsClaim

CREW_SECTIONS = ("alerts", "recent", DESK_SECTION)
RECENT = dt.timedelta(minutes=30)  # settled claims stay in "recent" this long
MAX_RECENT = 10
OPEN_DRAW = frozenset({"announced", "presented", "verified"})
OPEN_RAPS = frozenset(
    {"alerted", "crew_at_device", "not_at_device", "not_owner", "announced", "presented"}
)
# claim action -> (HTTP path segment, roles); the same table as api_draws / api_jackpots
DRAW_ACTIONS = {
    "present": ("present", ("crew",)),
    "verify": ("verify", ("crew",)),
    "pick_reveal": ("reveal", ("crew",)),
    "no_show": ("no-show", ("crew",)),
    "issue_letter": ("letter", ("desk",)),
    "redeem": ("redeem", ("desk",)),
    "lapse": ("lapse", ("desk",)),
}
RAPS_ACTIONS = {
    "crew_arrived": ("at-device", ("crew",)),
    "verify_at_device": ("verified-at-device", ("crew",)),
    "not_at_device": ("not-at-device", ("crew",)),
    "not_owner": ("not-owner", ("crew",)),
    "announce": ("announce", ("crew", "desk")),
    "present": ("present", ("crew",)),
    "verify": ("verify", ("crew",)),
    "declined_register": ("declined-register", ("crew", "desk")),
    "reselect": ("reselect", ("crew", "desk")),
}

# -- crew ---------------------------------------------------------------------------------
Row = tuple[bool, dt.datetime | None, dt.datetime, dt.datetime, dict[str, Any]]
"""(open, deadline, since, last change, the row) of one claim, for sorting."""


def crew_view(inp: Inputs) -> View:
    """The crew's view of the site: open claims by urgency (soonest deadline first), and
    the claims settled in the last half hour, newest first; and the desk's change marker
    (`bonusd.push.deskview`)."""
    rows = list(_draw_alerts(inp)) + list(_raps_alerts(inp))
    far = dt.datetime.max.replace(tzinfo=dt.UTC)
    alerts = sorted(
        (r for r in rows if r[0]),
        key=lambda r: (r[1] or far, r[2], r[4]["subject"], r[4]["claim"]),
    )
    recent = sorted(
        (r for r in rows if not r[0] and r[3] >= inp.now - RECENT),
        key=lambda r: (r[3], r[4]["subject"], r[4]["claim"]),
        reverse=True,
    )
    return {
        "alerts": [r[4] for r in alerts],
        "recent": [r[4] for r in recent[:MAX_RECENT]],
        DESK_SECTION: desk_marker(inp),  # when the desk fetches its tables again
    }


def _actions(
    claim: Machine,
    claim_id: int,
    table: Mapping[str, tuple[str, tuple[str, ...]]],
    base: str,
    now: dt.datetime,
) -> dict[str, str]:
    """action -> its endpoint, for the actions the claim's state, the crew's or desk's
    role and the time allow now (in the state machine's order)."""
    out = {}
    deadline = claim.deadline_now()
    for action, rule in claim.RULES.items():
        if claim.state not in rule.starts or action not in table:
            continue
        if not rule.roles & {ClaimRole.CREW, ClaimRole.DESK}:
            continue
        if deadline is not None and rule.timing == "by" and now > deadline:
            continue
        if deadline is not None and rule.timing == "after" and now <= deadline:
            continue
        out[action] = f"{base}/claims/{claim_id}/{table[action][0]}"
    return out


def _draw_alerts(inp: Inputs) -> Iterator[Row]:
    for promotion, book, cid in draw_claims(inp):
        claim = book.claims[cid]
        (tombola, number), _ = book.claim_round[cid]
        state, place = str(claim.state), inp.places.get(claim.card)
        name = inp.names.get(claim.card, "")
        title = f"{book.plan.name}, round {number}"
        base = f"/promotions/{promotion.id}/draws/{book.plan.draw_id}"
        is_open = state in OPEN_DRAW
        deadline = claim.deadline if state == "announced" else None
        since, changed = claim.history[0].at, claim.history[-1].at
        endpoints = _actions(claim, cid, DRAW_ACTIONS, base, inp.now) if is_open else {}
        row = {
            "subject": book.subject,
            "claim": cid,
            "kind": "draw",
            "promotion": promotion.id,
            "draw": book.plan.draw_id,
            "title": title,
            "round": number,
            "tombola": tombola,
            "state": state,
            "since": inp.iso(since),
            "changed": inp.iso(changed),
            "deadline": inp.iso(deadline),
            "name": name,
            "card": claim.card,
            "area": place.area if place else None,
            "bank": place.bank if place else None,
            "device": place.device if place else None,
            "seat": place.seat if place else None,
            "actions": list(endpoints),
            "endpoints": endpoints,
            "announcement": _draw_pa(promotion, book, cid, name),
            "outcome": OUTCOMES.get(state),
        }
        yield is_open, deadline, since, changed, row


def _raps_alerts(inp: Inputs) -> Iterator[Row]:
    for promotion in inp.promotions:
        for session in promotion.jackpot_sessions:
            book = inp.sessions.get(f"{promotion.id}.{session.id}")
            if book is not None:
                for cid in book.claims:
                    yield _raps_alert(inp, promotion, session, book, cid)


def _raps_alert(
    inp: Inputs, promotion: Promotion, session: JackpotSession, book: RapsBook, cid: int
) -> Row:
    claim = book.claims[cid]
    number = book.claim_jackpot[cid]
    st = book.jackpot(number)
    seat = int(claim.seat) if claim.seat.isdigit() else None  # where it was picked (tables)
    state, name = str(claim.state), inp.names.get(claim.card, "")
    is_open = state in OPEN_RAPS
    endpoints: dict[str, str] = {}
    if is_open:
        base = f"/promotions/{promotion.id}/jackpots/{session.id}"
        endpoints = _actions(claim, cid, RAPS_ACTIONS, base, inp.now)
        signed = book.register.has_declined(claim.card)
        if not signed:
            endpoints.pop("declined_register", None)
        elif state == "announced":
            endpoints.pop("reselect", None)  # a signed member still wins
    since, changed, deadline = claim.history[0].at, claim.history[-1].at, claim.deadline_now()
    allowance = st.reselections
    if allowance.refusal(since, inp.now):  # too soon after the selection, or none left
        for action in REASONED:
            endpoints.pop(action, None)
    row = {
        "subject": book.subject,
        "claim": cid,
        "kind": "raps",
        "promotion": promotion.id,
        "session": session.id,
        "title": f"{session.name} #{number}",
        "jackpot": number,
        "state": state,
        "since": inp.iso(since),
        "changed": inp.iso(changed),
        "deadline": inp.iso(deadline),
        "name": name,
        "card": claim.card,
        "area": claim.area,
        "bank": claim.bank,
        "device": claim.device,
        "seat": seat,
        "actions": list(endpoints),
        "endpoints": endpoints,
        "reselections": {
            "left": allowance.remaining,
            "allowed": allowance.allowed,
            "from": inp.iso(allowance.next_at(since)),
        },
        "announcement": _raps_pa(promotion, st, claim, name),
        "outcome": "won" if claim.won else ("reselected" if state == "reselected" else None),
    }
    return is_open, deadline, since, changed, row


# -- the PA text (bonusd.notices.announcements owns the words) ------------------------------------
_DRAW_MOMENTS = {
    "created": Moment.DRAWN,
    "present": Moment.PRESENTED,
    "verify": Moment.VERIFIED,
    "pick_reveal": Moment.PRIZE,
    "no_show": Moment.NO_SHOW,
}
_RAPS_MOMENTS = {
    "announce": Moment.CALLED,
    "present": Moment.PRESENTED,
    "verify": Moment.WON,
    "verify_at_device": Moment.WON,
    "declined_register": Moment.DECLINED_REGISTER,
    "reselect": Moment.RESELECTED,
}


def _draw_pa(promotion: Promotion, book: DrawBook, cid: int, name: str) -> str | None:
    """What the host says now about a draw claim (its latest step), or None."""
    claim = book.claims[cid]
    last = claim.history[-1]
    moment = _DRAW_MOMENTS.get(last.action)
    if moment is None:
        return None
    key, _ = book.claim_round[cid]
    earlier = [c for c in book.claims if c < cid and book.claim_round[c][0] == key]
    winners = book.plan.round(key[1]).winners.get(key[0], 0)
    event = WinnerEvent(
        seq=0,
        at=last.at,
        moment=moment,
        draw_id=book.subject,
        claim=claim.subject,
        card=claim.card,
        raps=False,
        redraw=len(earlier) >= winners,
        tombola=key[0],
        round=key[1],
        deadline=claim.deadline,
        prize=claim.prize.label if claim.prize else "",
        value_cents=claim.prize.value_cents if claim.prize else None,
        proxy=claim.presenter if claim.presenter not in (None, claim.card) else "",
    )
    return _say(promotion, book.subject, event, name)


def _raps_pa(promotion: Promotion, st: JackpotState, claim: RapsClaim, name: str) -> str | None:
    """What the host says now about a RAPS claim, or None (the crew's own steps at the
    device are not announced)."""
    last = claim.history[-1]
    moment = _RAPS_MOMENTS.get(last.action)
    if moment is None:
        return None
    event = WinnerEvent(
        seq=0,
        at=last.at,
        moment=moment,
        draw_id=st.jackpot_id,
        claim=claim.subject,
        card=claim.card,
        raps=True,
        deadline=claim.deadline,
        device=claim.device,
        area=claim.area,
        bank=claim.bank,
        after_not_owner=last.before == "not_owner",
    )
    return _say(promotion, st.jackpot_id, event, name)


def _say(promotion: Promotion, draw_id: str, event: WinnerEvent, name: str) -> str | None:
    try:
        return pa_text(event, occasion_of(promotion, draw_id), name)
    except NotFoundError:
        return None


def crew_events(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One-shot cues: a new alert (vibrate), an alert changing state, an alert settled."""
    if old is None:
        return []

    def keyed(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
        return {(r["subject"], r["claim"]): r for r in rows}

    before, after = keyed(old.get("alerts", [])), keyed(new.get("alerts", []))
    events: list[dict[str, Any]] = []
    for key, row in after.items():
        cue = {"subject": row["subject"], "claim": row["claim"], "alert": row["kind"]}
        if key not in before:
            events.append({"kind": "alert", **cue, "state": row["state"], "name": row["name"]})
        elif before[key]["state"] != row["state"]:
            events.append({"kind": "state", **cue, "state": row["state"]})
    for key, row in before.items():
        if key not in after:
            settled = next(
                (r for r in new.get("recent", []) if (r["subject"], r["claim"]) == key), row
            )
            cue = {"subject": row["subject"], "claim": row["claim"], "alert": row["kind"]}
            events.append({"kind": "settled", **cue, "state": settled["state"]})
    return events
