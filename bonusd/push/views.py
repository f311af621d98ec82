"""What floor screens show, computed from plain inputs. Pure: no I/O, no clock (the
instant is an input).

`Inputs` is everything a view reads at one instant; `signage_view(inputs, area)` is the
public view of one area, a dict of named sections (docs/push.md) holding only JSON
values, every name and card masked (`bonusd.registry.masking`). `diff` gives the sections that
changed and `signage_events` the one-shot cues a change carries (a new winner, an
outcome, a multiplier window). `relevant_draws` / `relevant_sessions` / `board_draws` /
`cards_needed` tell the caller which books, boards and member names to read. The crew's
view of the same inputs is `bonusd.push.crewview`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from bonusd.draws.book import DrawBook
from bonusd.promotions import Draw, Promotion
from bonusd.promotions.multipliers import multiplier_windows
from bonusd.promotions.timing import round_instants
from bonusd.raps.book import RapsBook
from bonusd.raps.plan import JackpotState
from bonusd.registry.masking import public_member

View = dict[str, Any]
LINGER = dt.timedelta(minutes=15)  # a round past its time and not drawn yet stays "next"
JACKPOT_SHOWN = dt.timedelta(minutes=10)  # a settled jackpot stays on the banner this long
MAX_ANNOUNCEMENTS, BOARD_ROWS = 20, 10

SIGNAGE_SECTIONS = ("promotion", "next_draw", "multiplier", "boards", "announcements", "jackpot")
OUTCOMES = {
    "presented": "presented",
    "verified": "verified",
    "reveal_picked": "won",
    "letter_issued": "won",
    "redeemed": "won",
    "lapsed": "won",
    "no_show": "no_show",
}


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

    def iso(self, at: dt.datetime | None) -> str | None:
        return None if at is None else at.astimezone(self.zone).isoformat(timespec="seconds")


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _today(promotion: Promotion, now: dt.datetime) -> dt.date:
    return promotion.calendar.gaming_day(now)


# -- what to read -------------------------------------------------------------------------
def relevant_draws(promotions: tuple[Promotion, ...], now: dt.datetime) -> list[tuple[str, str]]:
    """(promotion, draw) of the draws whose books a view reads: those of yesterday, today
    and tomorrow (gaming days); an older or later draw has no claim or pick to show."""
    out = []
    for promotion in promotions:
        today = _today(promotion, now)
        for draw in promotion.draw_list:
            if abs((draw.date - today).days) <= 1:
                out.append((promotion.id, draw.id))
    return out


def relevant_sessions(promotions: tuple[Promotion, ...], now: dt.datetime) -> list[tuple[str, str]]:
    """(promotion, session) of today's RAPS sessions."""
    return [
        (p.id, s.id) for p in promotions for s in p.jackpot_sessions if s.date == _today(p, now)
    ]


def current_promotion(promotions: tuple[Promotion, ...], now: dt.datetime) -> Promotion | None:
    """The promotion running now (the first by start date), else the next to start."""
    running = [p for p in promotions if p.start <= _today(p, now) <= p.end]
    later = [p for p in promotions if _today(p, now) < p.start]
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
    ahead = [d for d in boards if d.date >= _today(promotion, now)]
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
        "promotion": {"id": promotion.id, "name": promotion.name, "site": promotion.site}
        if promotion
        else None,
        "next_draw": _next_draw(inp),
        "multiplier": _multiplier(inp, promotion),
        "boards": _boards(inp),
        "announcements": _announcements(inp),
        "jackpot": _jackpot(inp, area),
    }


def _drawn(book: DrawBook | None, number: int) -> bool:
    return book is not None and any(k[1] == number for k, _ in book.claim_round.values())


def _next_draw(inp: Inputs) -> dict[str, Any] | None:
    found: tuple[dt.datetime, Promotion, Draw, int] | None = None
    for promotion in inp.promotions:
        for draw in promotion.draw_list:
            book = inp.draws.get(f"{promotion.id}.{draw.id}")
            for number, at in enumerate(round_instants(promotion, draw), 1):
                if at < inp.now - LINGER or _drawn(book, number):
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
        if promotion.draw(book.plan.draw_id).date != _today(promotion, inp.now):
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


def _jackpot_shown(book: RapsBook, now: dt.datetime) -> JackpotState | None:
    ran = [st for st in book.jackpots.values() if st.attempt > 0]
    last = max(ran, key=lambda st: st.number) if ran else None
    if last is not None and (not book.settled(last.number) or now < last.at + JACKPOT_SHOWN):
        return last
    ahead = [st for st in book.jackpots.values() if st.attempt == 0 and st.at >= now - LINGER]
    return min(ahead, key=lambda st: st.at) if ahead else last


def _jackpot(inp: Inputs, area: str) -> dict[str, Any] | None:
    for promotion in inp.promotions:
        for session in promotion.jackpot_sessions:
            book = inp.sessions.get(f"{promotion.id}.{session.id}")
            if book is None or area not in session.areas:
                continue
            st = _jackpot_shown(book, inp.now)
            if st is None:
                continue
            claim = book.claims[st.claims[-1]] if st.claims else None
            won = book.won(st.number)
            if st.attempt == 0:
                state = "upcoming"
            elif won is not None:
                state, claim = "won", won
            elif claim is not None:
                state = str(claim.state)
            else:
                state = st.outcome or ("retrying" if st.retry_at else "drawn")
            values = (
                promotion.prize_sets[session.prize_set].values_cents if session.prize_set else []
            )
            return {
                "promotion": promotion.id,
                "session": session.id,
                "name": session.name,
                "number": st.number,
                "at": inp.iso(st.at),
                "amount_cents": values[(st.number - 1) % len(values)] if values else None,
                "prizes": st.prizes,
                "state": state,
                "winner": public_member(inp.names.get(claim.card, ""), claim.card)
                if claim is not None
                else None,
                "deadline": inp.iso(claim.deadline_now()) if claim is not None else None,
            }
    return None


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
