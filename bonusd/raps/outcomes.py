"""How a RAPS jackpot ends, or waits, without a winner: an empty pool (retried, then
carried over to the session's next jackpot or skipped, as the series says), nobody left
to reselect, a jackpot time the daemon missed. Each step changes the jackpot's state and
returns the payload of its `exception` record; `RapsBook` records and replays them. Pure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from bonusd.audit.chain import Json, utc_text
from bonusd.draws.evidence import round_ref
from bonusd.draws.fairness import Pool
from bonusd.promotions.kinds import EmptyPoolAction
from bonusd.promotions.schema import EmptyPoolRule
from bonusd.raps.plan import JackpotState
from bonusd.raps.rules import RAPS_TOMBOLA, Jackpot, RapsError


def empty_pool(
    st: JackpotState,
    pool: Pool,
    rule: EmptyPoolRule,
    later: Sequence[JackpotState],
    at: dt.datetime,
) -> dict[str, Json]:
    """Nobody eligible: retry later, then skip or carry the prize to the next jackpot
    (`later`: the session's jackpots after this one that have not run)."""
    if pool.members:
        raise RapsError(f"jackpot {st.jackpot_id}: its pool is not empty")
    out = round_ref(st.jackpot_id, RAPS_TOMBOLA, st.attempt) | {"event": "empty_pool"}
    tries = f"attempt {st.attempt} of {rule.retries + 1}"
    note = f"jackpot {st.jackpot_id}: nobody eligible at {utc_text(at)} ({tries})"
    if st.attempt <= rule.retries:
        st.retry_at = at + dt.timedelta(seconds=rule.retry_seconds)
        return out | {"retry_at": utc_text(st.retry_at), "note": f"{note}; retrying"}
    if rule.then is EmptyPoolAction.CARRY_OVER and later:
        st.outcome = "carried_over"
        later[0].prizes += st.prizes
        note += f"; {st.prizes} prize(s) carried over to {later[0].jackpot_id}"
        return out | {"then": "carry_over", "carried_to": later[0].jackpot_id, "note": note}
    st.outcome = "skipped"
    return out | {"then": "skip", "note": f"{note}; the jackpot is not awarded"}


def nobody_left(st: JackpotState, jackpot: Jackpot) -> dict[str, Json]:
    """Every eligible player of the attempt was selected or excluded."""
    if not jackpot.exhausted:
        raise RapsError(f"jackpot {st.jackpot_id}: players are left to reselect")
    st.outcome = "nobody_left"
    note = f"jackpot {st.jackpot_id}: every eligible player was selected or excluded"
    out = {"event": "nobody_left", "note": note}
    return round_ref(st.jackpot_id, RAPS_TOMBOLA, st.attempt) | out


def missed(st: JackpotState, note: str) -> dict[str, Json]:
    """The jackpot did not run at its time (the daemon was down); the desk runs it."""
    if st.attempt:
        raise RapsError(f"jackpot {st.jackpot_id} has run: it was not missed")
    st.exceptions.append({"event": "missed"})
    return round_ref(st.jackpot_id, RAPS_TOMBOLA, 0) | {"event": "missed", "note": note}
