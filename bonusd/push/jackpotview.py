"""The RAPS jackpot a floor screen shows (the signage section `jackpot`, docs/push.md):
of today's sessions covering the screen's area, the jackpot running now or just settled,
else the next one to come. A won jackpot carries the instant it was won (`won_at`), which
the screen celebrates full-screen. Pure: no I/O, no clock (the instant is an input).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from bonusd.promotions import JackpotSession, Promotion
from bonusd.push.viewinputs import LINGER, Inputs
from bonusd.raps.book import RapsBook
from bonusd.raps.plan import JackpotState
from bonusd.registry.masking import public_member

JACKPOT_SHOWN = dt.timedelta(minutes=10)  # a settled jackpot stays on the banner this long


def jackpot_amount(promotion: Promotion, session: JackpotSession, number: int) -> int | None:
    """The cents jackpot `number` of the session pays (its prize set's values in turn)."""
    values = promotion.prize_sets[session.prize_set].values_cents if session.prize_set else []
    return values[(number - 1) % len(values)] if values else None


def jackpot_shown(book: RapsBook, now: dt.datetime) -> JackpotState | None:
    """The jackpot of a session to show at `now`: the last one run while it is open or
    settled less than `JACKPOT_SHOWN` ago, else the next one to come, else the last."""
    ran = [st for st in book.jackpots.values() if st.attempt > 0]
    last = max(ran, key=lambda st: st.number) if ran else None
    if last is not None and (not book.settled(last.number) or now < last.at + JACKPOT_SHOWN):
        return last
    ahead = [st for st in book.jackpots.values() if st.attempt == 0 and st.at >= now - LINGER]
    return min(ahead, key=lambda st: st.at) if ahead else last


def jackpot_banner(inp: Inputs, area: str) -> dict[str, Any] | None:
    """The `jackpot` section of the signage of `area`, or None."""
    for promotion in inp.promotions:
        for session in promotion.jackpot_sessions:
            book = inp.sessions.get(f"{promotion.id}.{session.id}")
            if book is None or area not in session.areas:
                continue
            st = jackpot_shown(book, inp.now)
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
            return {
                "promotion": promotion.id,
                "session": session.id,
                "name": session.name,
                "number": st.number,
                "at": inp.iso(st.at),
                "amount_cents": jackpot_amount(promotion, session, st.number),
                "prizes": st.prizes,
                "state": state,
                "winner": public_member(inp.names.get(claim.card, ""), claim.card)
                if claim is not None
                else None,
                "deadline": inp.iso(claim.deadline_now()) if claim is not None else None,
                "won_at": inp.iso(won.history[-1].at) if won is not None else None,
            }
    return None
