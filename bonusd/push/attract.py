"""What a floor screen shows between events (its attract loop), computed from plain
inputs: the promotion's look (`promotion_section`: title, colours, logo, how to enter,
from the promotion file's `[signage]` table, `bonusd.promotions.branding`) and the draws
and jackpots coming up in the screen's area with their times and prizes (`upcoming`).
Pure: no I/O, no clock (the instant is an input).
"""

from __future__ import annotations

from typing import Any

from bonusd.draws.book import DrawBook
from bonusd.promotions import Channel, Draw, Promotion
from bonusd.promotions.terms import rands
from bonusd.promotions.timing import round_instants
from bonusd.push.jackpotview import jackpot_amount
from bonusd.push.viewinputs import LINGER, Inputs, drawn

UPCOMING = 6  # rows of the "coming up" slide
LOGO_PATH = "/signage/logo/{promotion}"  # bonusd.api.logos serves the file


def promotion_section(promotion: Promotion | None) -> dict[str, Any] | None:
    """The signage section `promotion`: which promotion runs, and how it looks."""
    if promotion is None:
        return None
    look = promotion.signage
    colours = look.colours
    return {
        "id": promotion.id,
        "name": promotion.name,
        "site": promotion.site,
        "title": look.title or promotion.name,
        "colours": {
            "background": colours.background,
            "panel": colours.panel,
            "ink": colours.ink,
            "accent": colours.accent,
            "on_accent": colours.on_accent,
        },
        "logo": LOGO_PATH.format(promotion=promotion.id) if look.logo else None,
        "how_to_enter": list(look.how_to_enter) or how_to_enter(promotion),
    }


def how_to_enter(promotion: Promotion) -> list[str]:
    """The steps to take part, in players' words, from the promotion's entry rules."""
    steps = []
    channels = {c for draw in promotion.draw_list for c in draw.activation.channels}
    if promotion.draw_list:
        steps.append("Card in and play to earn your draw entries")
    if Channel.KIOSK in channels:
        app = " or in the app" if Channel.APP in channels else ""
        steps.append(f"Activate your entries at any eHost{app}")
    elif Channel.APP in channels:
        steps.append("Activate your entries in the app while you play")
    series = promotion.jackpot_series.values()
    if series:
        first = next(iter(series))
        spend = rands(first.min_spend_cents)
        steps.append(f"{first.name}: spend {spend} today and be carded in when it drops")
    seconds = promotion.claims.claim_seconds
    steps.append(f"Drawn? Present yourself within {seconds} seconds with your ID")
    return steps[:4]


def _round_prizes(
    promotion: Promotion, draw: Draw, number: int, book: DrawBook | None
) -> list[int]:
    """The prize values of a round: as the desk loaded them, else as the file says."""
    if book is not None:
        loaded = [
            p.value_cents for (_, n), set_ in book.prizes.items() if n == number for p in set_
        ]
        if loaded:
            return loaded
    spec = draw.rounds[number - 1]
    name = spec.prize_set or draw.prize_set
    return list(promotion.prize_sets[name].values_cents) if name else []


def _draw_rows(inp: Inputs, promotion: Promotion) -> list[tuple[Any, ...]]:
    rows = []
    for draw in promotion.draw_list:
        book = inp.draws.get(f"{promotion.id}.{draw.id}")
        for number, at in enumerate(round_instants(promotion, draw), 1):
            if at < inp.now - LINGER or drawn(book, number):
                continue
            prizes = _round_prizes(promotion, draw, number, book)
            row = {
                "kind": "draw",
                "promotion": promotion.id,
                "draw": draw.id,
                "name": draw.name,
                "round": number,
                "at": inp.iso(at),
                "place": draw.place,
                "winners": draw.rounds[number - 1].total_winners,
                "top_prize_cents": max(prizes) if prizes else None,
            }
            rows.append((at, 0, draw.id, number, row))
    return rows


def _jackpot_rows(inp: Inputs, promotion: Promotion, area: str) -> list[tuple[Any, ...]]:
    rows = []
    for session in promotion.jackpot_sessions:
        book = inp.sessions.get(f"{promotion.id}.{session.id}")
        if book is None or area not in session.areas:
            continue
        for st in book.jackpots.values():
            if st.attempt > 0 or st.at < inp.now - LINGER:
                continue
            row = {
                "kind": "jackpot",
                "promotion": promotion.id,
                "session": session.id,
                "name": session.name,
                "number": st.number,
                "at": inp.iso(st.at),
                "amount_cents": jackpot_amount(promotion, session, st.number),
                "prizes": st.prizes,
            }
            rows.append((st.at, 1, session.id, st.number, row))
    return rows


def upcoming(inp: Inputs, area: str) -> list[dict[str, Any]]:
    """The signage section `upcoming`: the next draw rounds not drawn yet and today's
    jackpots not run yet in `area`, soonest first (at most `UPCOMING`)."""
    rows = []
    for promotion in inp.promotions:
        rows += _draw_rows(inp, promotion) + _jackpot_rows(inp, promotion, area)
    rows.sort(key=lambda r: r[:4])
    return [r[4] for r in rows[:UPCOMING]]
