"""What floor screens show, computed from plain inputs. Pure: no I/O, no clock (the
instant is an input).

`Inputs` is everything a view reads at one instant; `signage_view(inputs, area)` is the
public view of one area, a dict of named sections (docs/push.md) holding only JSON
values, every name and card masked (`bonusd.registry.masking`). `diff` gives the sections that
changed and `signage_events` the one-shot cues a change carries (a new winner, an
outcome, a multiplier window). `relevant_draws` / `relevant_sessions` / `board_draws` /
`cards_needed` tell the caller which books, boards and member names to read. The sections
of the attract loop (the promotion's look, what is coming up) are `bonusd.push.attract`,
the RAPS jackpot's `bonusd.push.jackpotview`; the crew's view of the same inputs is
`bonusd.push.crewview`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from bonusd.draws.book import DrawBook
from bonusd.promotions import Draw, Promotion
from bonusd.promotions.multipliers import multiplier_windows
from bonusd.promotions.timing import round_instants
from bonusd.push.attract import promotion_section, upcoming
from bonusd.push.jackpotview import jackpot_banner
from bonusd.push.viewinputs import LINGER, Inputs, Place, View, drawn, today
from bonusd.raps.book import RapsBook
from bonusd.registry.masking import public_member

__all__ = [  # Inputs, Place and View live in bonusd.push.viewinputs; importable from here
    "OUTCOMES",
    "SIGNAGE_SECTIONS",
    "Inputs",
    "Place",
    "View",
    "board_draws",
    "cards_needed",
    "current_promotion",
    "diff",
    "draw_claims",
    "relevant_draws",
    "relevant_sessions",
    "signage_events",
    "signage_view",
]
MAX_ANNOUNCEMENTS, BOARD_ROWS = 20, 10

SIGNAGE_SECTIONS = (
    "promotion",
    "next_draw",
    "multiplier",
    "boards",
    "announcements",
    "jackpot",
    "upcoming",
)
OUTCOMES = {
    "presented": "presented",
    "verified": "verified",
    "reveal_picked": "won",
    "letter_issued": "won",
    "redeemed": "won",
    "lapsed": "won",
    "no_show": "no_show",
}


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


# -- what to read -------------------------------------------------------------------------
def relevant_draws(promotions: tuple[Promotion, ...], now: dt.datetime) -> list[tuple[str, str]]:
    """(promotion, draw) of the draws whose books a view reads: those of yesterday, today
    and tomorrow (gaming days); an older or later draw has no claim or pick to show."""
    out = []
    for promotion in promotions:
        day = today(promotion, now)
        for draw in promotion.draw_list:
            if abs((draw.date - day).days) <= 1:
                out.append((promotion.id, draw.id))
    return out


def relevant_sessions(promotions: tuple[Promotion, ...], now: dt.datetime) -> list[tuple[str, str]]:
    """(promotion, session) of today's RAPS sessions."""
    return [(p.id, s.id) for p in promotions for s in p.jackpot_sessions if s.date == today(p, now)]


def current_promotion(promotions: tuple[Promotion, ...], now: dt.datetime) -> Promotion | None:
    """The promotion running now (the first by start date), else the next to start."""
    running = [p for p in promotions if p.start <= today(p, now) <= p.end]
    later = [p for p in promotions if today(p, now) < p.start]
    for group in (running, later):
        if group:
            return min(group, key=lambda p: (p.start, p.id))
    return None


def board_draws(promotions: tuple[Promotion, ...], now: dt.datetime) -> list[tuple[str, str]]:
    """(promotion, draw) whose published boards signage shows: of the current promotion,
    the first draw with public boards not yet past, else its last one."""
    promotion = current_promotion(promotions, now)
    if promotion is None:
        return []
    boards = [d for d in promotion.draw_list if d.leaderboard]
    if not boards:
        return []
    ahead = [d for d in boards if d.date >= today(promotion, now)]
    return [(promotion.id, (ahead[0] if ahead else boards[-1]).id)]


def cards_needed(
    draws: Mapping[str, DrawBook],
    sessions: Mapping[str, RapsBook],
    boards: Mapping[tuple[str, str, str], Mapping[str, Any]],
) -> set[str]:
    """Cards whose member names the views show."""
    cards = {c.card for b in draws.values() for c in b.claims.values()}
    cards |= {c.card for b in sessions.values() for c in b.claims.values()}
    cards |= {str(e["card"]) for board in boards.values() for e in board.get("entries", ())}
    return cards


# -- signage ------------------------------------------------------------------------------
def signage_view(inp: Inputs, area: str) -> View:
    """The public view of one area: masked, no full name and no full card number."""
    promotion = current_promotion(inp.promotions, inp.now)
    return {
        "promotion": promotion_section(promotion),
        "next_draw": _next_draw(inp),
        "multiplier": _multiplier(inp, promotion),
        "boards": _boards(inp),
        "announcements": _announcements(inp),
        "jackpot": jackpot_banner(inp, area),
        "upcoming": upcoming(inp, area),
    }


def _next_draw(inp: Inputs) -> dict[str, Any] | None:
    found: tuple[dt.datetime, Promotion, Draw, int] | None = None
    for promotion in inp.promotions:
        for draw in promotion.draw_list:
            book = inp.draws.get(f"{promotion.id}.{draw.id}")
            for number, at in enumerate(round_instants(promotion, draw), 1):
                if at < inp.now - LINGER or drawn(book, number):
                    continue
                if found is None or at < found[0]:
                    found = (at, promotion, draw, number)
    if found is None:
        return None
    at, promotion, draw, number = found
    book = inp.draws.get(f"{promotion.id}.{draw.id}")
    commitments = {}
    if book is not None:
        commitments = {
            t: r.seed_commitment for (t, n), r in book.draw.rounds.items() if n == number
        }
    return {
        "promotion": promotion.id,
        "draw": draw.id,
        "name": draw.name,
        "round": number,
        "at": inp.iso(at),
        "place": draw.place,
        "manual": draw.mode.value == "manual",
        "commitment": next(iter(commitments.values()), None),
        "commitments": commitments,
    }


def _multiplier(inp: Inputs, current: Promotion | None) -> dict[str, Any] | None:
    ordered = sorted(inp.promotions, key=lambda p: p is not current)
    for promotion in ordered:
        for window in multiplier_windows(promotion):
            if window.opens <= inp.now < window.closes:
                factor = _number(window.factor)
                return {
                    "factor": factor,
                    "starts_at": inp.iso(window.opens),
                    "ends_at": inp.iso(window.closes),
                    "label": f"{factor}x points",
                    "promotion": promotion.id,
                    "id": window.id,
                    "sides": sorted(s.value for s in window.sides),
                }
    return None


def _boards(inp: Inputs) -> dict[str, Any] | None:
    found = board_draws(inp.promotions, inp.now)
    if not found:
        return None
    pid, draw_id = found[0]
    out: dict[str, Any] = {"promotion": pid, "draw": draw_id, "published_at": None}
    for side in ("slots", "tables"):
        board = inp.boards.get((pid, draw_id, side), {})
        rows = []
        for entry in list(board.get("entries", ()))[:BOARD_ROWS]:
            shown = public_member(inp.names.get(str(entry["card"]), ""), str(entry["card"]))
            rows.append({"rank": entry["position"], **shown, "points": entry["points"]})
        out[side] = rows
        if board.get("published_at"):
            at = inp.iso(dt.datetime.fromisoformat(board["published_at"]))
            out["published_at"] = max(out["published_at"] or "", at or "")
    return out


def draw_claims(inp: Inputs) -> Iterator[tuple[Promotion, DrawBook, int]]:
    for promotion in inp.promotions:
        for draw in promotion.draw_list:
            book = inp.draws.get(f"{promotion.id}.{draw.id}")
            if book is not None:
                for cid in book.claims:
                    yield promotion, book, cid


def _announcements(inp: Inputs) -> list[dict[str, Any]]:
    rows = []
    for promotion, book, cid in draw_claims(inp):
        if promotion.draw(book.plan.draw_id).date != today(promotion, inp.now):
            continue
        claim = book.claims[cid]
        (tombola, number), _ = book.claim_round[cid]
        state = str(claim.state)
        row = {
            "promotion": promotion.id,
            "draw": book.plan.draw_id,
            "title": book.plan.name,
            "claim": cid,
            "tombola": tombola,
            "round": number,
            **public_member(inp.names.get(claim.card, ""), claim.card),
            "prize": claim.prize.label if claim.prize else None,
            "state": state,
            "at": inp.iso(claim.history[0].at),
            "deadline": inp.iso(claim.deadline) if state == "announced" else None,
            "outcome": OUTCOMES.get(state),
        }
        rows.append((claim.history[0].at, cid, row))
    rows.sort(key=lambda r: (r[0], r[1]), reverse=True)
    return [r for _, _, r in rows[:MAX_ANNOUNCEMENTS]]


# -- changes ------------------------------------------------------------------------------
def diff(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """The sections of `new` that differ from `old` (all of them when there is no old)."""
    if old is None:
        return dict(new)
    return {k: v for k, v in new.items() if k not in old or old[k] != v}


def _claims(rows: list[dict[str, Any]] | None) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(r["promotion"], r["draw"], r["claim"]): r for r in rows or ()}


def signage_events(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One-shot cues: new winners, claim outcomes, a jackpot's winner or outcome, a
    multiplier window opening or closing, boards published."""
    if old is None:
        return []
    events: list[dict[str, Any]] = []
    before = _claims(old.get("announcements"))
    for key, row in reversed(_claims(new.get("announcements")).items()):
        if key not in before:
            events.append({"kind": "winner", **row})
        elif before[key]["state"] != row["state"]:
            events.append({"kind": "outcome", **row})
    was, now = old.get("jackpot"), new.get("jackpot")
    fields = ("session", "number", "state", "winner")
    if now is not None and (was is None or [was[f] for f in fields] != [now[f] for f in fields]):
        events.append({"kind": "jackpot", **now})
    if (old.get("multiplier") is None) != (new.get("multiplier") is None):
        active = new.get("multiplier") is not None
        events.append({"kind": "multiplier", "active": active, **(new["multiplier"] or {})})
    old_boards, new_boards = old.get("boards") or {}, new.get("boards") or {}
    if new_boards.get("published_at") != old_boards.get("published_at"):
        events.append({"kind": "boards", "published_at": new_boards.get("published_at")})
    return events
