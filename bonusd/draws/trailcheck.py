"""The checks of a draw's trail beyond its pick streams (docs/fairness.md section 11): every
pass-over rests on a record made before it, every change after the freeze on an approved
four-eyes request, every claim on its pick, every no-show on its redraw, every sealed
reveal and prize letter on the round's revealed order, every hand-drawn ticket on the
round's printed ticket list. Pure: records and pools in, problems out.

Each problem names the record it found wrong (`seq`) and the round it belongs to, so
`Evidence.verify` reports it with that round.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bonusd.audit.chain import AuditRecord, Kind
from bonusd.draws.claims import Prize
from bonusd.draws.fairness import Pool, SkipReason
from bonusd.draws.rounds import RevealSet
from bonusd.draws.types import RoundKey

SYSTEM = "(system)"  # the actor suffix of the daemon's own records


@dataclass(frozen=True)
class TrailProblem:
    """One record of the trail that a rule of section 11 does not allow."""

    key: RoundKey
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"record {self.seq}: {self.problem}"


def _name(actor: str) -> str:
    return actor.rpartition(" (")[0] or actor


@dataclass
class _Trail:
    """What the walk has seen so far, in trail order."""

    draw_id: str
    pools: Mapping[str, Pool]
    first_key: RoundKey = ("", 0)
    frozen: bool = False
    excluded: dict[str, int] = field(default_factory=dict)  # card -> seq of its exclusion
    seated: dict[str, int] = field(default_factory=dict)
    requests: dict[int, AuditRecord] = field(default_factory=dict)
    decisions: dict[int, AuditRecord] = field(default_factory=dict)
    used: set[int] = field(default_factory=set)
    round_pools: dict[RoundKey, Pool] = field(default_factory=dict)
    seeds: dict[RoundKey, bytes] = field(default_factory=dict)
    prizes: dict[RoundKey, list[tuple[int, tuple[Prize, ...], str]]] = field(default_factory=dict)
    picks: dict[tuple[RoundKey, int], str] = field(default_factory=dict)  # -> card
    claims: dict[str, tuple[RoundKey, int, str]] = field(default_factory=dict)
    claimed: Counter[tuple[RoundKey, int]] = field(default_factory=Counter)
    owed: Counter[RoundKey] = field(default_factory=Counter)  # no-shows not yet redrawn
    won: set[str] = field(default_factory=set)
    reveals: list[tuple[AuditRecord, RoundKey, int, str]] = field(default_factory=list)
    prize_of: dict[str, str] = field(default_factory=dict)  # claim -> prize label
    manual: set[RoundKey] = field(default_factory=set)  # rounds drawn by hand
    found: list[TrailProblem] = field(default_factory=list)

    def flag(self, key: RoundKey, rec: AuditRecord, problem: str) -> None:
        self.found.append(TrailProblem(key, rec.seq, problem))


def _approved(trail: _Trail, rec: AuditRecord, change: str) -> str | None:
    """Why `rec`, a change after the freeze, is not backed by an approved request."""
    payload = rec.payload
    number = payload.get("request")
    if rec.actor.endswith(SYSTEM) and change == "exclusion" and number is None:
        return None  # the member file excluded a picked member: the daemon's own record
    if not isinstance(number, int) or number not in trail.requests:
        return f"{change} of card {payload.get('card')} after the freeze names no request"
    asked, decided = trail.requests[number], trail.decisions.get(number)
    if decided is None or decided.payload.get("decision") != "approved":
        return f"request {number} was not approved before the {change}"
    if number in trail.used:
        return f"request {number} was used twice"
    if asked.payload.get("change") != change or asked.payload.get("card") != payload.get("card"):
        return f"request {number} asked for another change"
    if _name(asked.actor) == _name(decided.actor):
        return f"request {number} was approved by the person who made it"
    names = (payload.get("requested_by"), payload.get("approved_by"))
    if names != (asked.actor, decided.actor):
        return f"the {change} names {names}, the request and approval say otherwise"
    trail.used.add(number)
    return None


def _four_eyes(trail: _Trail, rec: AuditRecord, key: RoundKey) -> None:
    payload = rec.payload
    number = payload.get("request")
    if rec.kind == Kind.REQUEST and isinstance(number, int):
        trail.requests[number] = rec
    elif rec.kind == Kind.APPROVAL and isinstance(number, int):
        if number not in trail.requests or number in trail.decisions:
            trail.flag(key, rec, f"decision on request {number}, which is not waiting")
        trail.decisions[number] = rec
    elif rec.kind == Kind.EXCEPTION and payload.get("change") == "early_close":
        why = _approved_close(trail, rec)
        if why is not None:
            trail.flag(key, rec, why)


def _approved_close(trail: _Trail, rec: AuditRecord) -> str | None:
    number = rec.payload.get("request")
    asked = trail.requests.get(number) if isinstance(number, int) else None
    decided = trail.decisions.get(number) if isinstance(number, int) else None
    if trail.frozen:
        return "an early close after the pools froze"
    if asked is None or decided is None or decided.payload.get("decision") != "approved":
        return "an early close without an approved request"
    if _name(asked.actor) == _name(decided.actor):
        return f"request {number} was approved by the person who made it"
    return None


def _pick(trail: _Trail, rec: AuditRecord, key: RoundKey) -> None:
    payload = rec.payload
    number, card = int(payload.get("number", 0)), str(payload.get("card", ""))
    for passed in payload.get("passed_over", []):
        reason, who = passed.get("reason"), passed.get("card")
        if reason == SkipReason.EXCLUDED and who not in trail.excluded:
            trail.flag(key, rec, f"card {who} passed over as excluded with no exclusion before")
        if reason == SkipReason.SEATED and who not in trail.seated:
            trail.flag(key, rec, f"card {who} passed over as seated with no seat before")
    if payload.get("manual"):
        _manual(trail, rec, key)
        trail.manual.add(key)
        trail.owed[key] -= 1 if trail.owed[key] > 0 else 0  # drawn by hand after a no-show
    elif rec.kind == Kind.REDRAW and key[0] != "raps":
        if trail.owed[key] <= 0:
            trail.flag(key, rec, "a redraw with no no-show before it")
        trail.owed[key] -= 1
    trail.picks[(key, number)] = card
    trail.won.add(card)


def _manual(trail: _Trail, rec: AuditRecord, key: RoundKey) -> None:
    """A hand-drawn ticket: its owner on the round's printed list, eligible when drawn."""
    ticket, card = rec.payload.get("ticket", 0), rec.payload.get("card")
    pool = trail.round_pools.get(key)
    if pool is None:
        trail.flag(key, rec, "a hand-drawn ticket before its round's pool froze")
    elif not 1 <= ticket <= pool.total or pool.owner(ticket - 1) != card:
        trail.flag(key, rec, f"ticket {ticket} is not card {card}'s on the printed list")
    elif card in trail.won or card in trail.excluded or card in trail.seated:
        trail.flag(key, rec, f"card {card} could not be drawn again (won, excluded or seated)")


def _claim(trail: _Trail, rec: AuditRecord) -> None:
    payload = rec.payload
    detail, claim = payload.get("detail") or {}, payload.get("claim", "")
    if payload.get("action") == "created":
        if "tombola" not in detail:
            return  # a RAPS claim: its picks are checked by its stream
        key = (detail["tombola"], int(detail["round"]))
        number = int(detail["pick"])
        trail.claims[claim] = (key, number, payload.get("card", ""))
        trail.claimed[(key, number)] += 1
        if trail.picks.get((key, number)) != payload.get("card"):
            trail.flag(
                key, rec, f"{claim} is not the card of {key[0]} round {key[1]} pick {number}"
            )
        elif trail.claimed[(key, number)] > 1:
            trail.flag(key, rec, f"a second claim on {key[0]} round {key[1]} pick {number}")
        return
    if claim not in trail.claims:
        return
    key = trail.claims[claim][0]
    if payload.get("to") == "no_show":
        trail.owed[key] += 1
    if payload.get("action") == "pick_reveal":
        trail.reveals.append((rec, key, int(detail.get("reveal", 0)), str(detail.get("prize"))))
        trail.prize_of[claim] = str(detail.get("prize"))


def _check_reveals(trail: _Trail) -> None:
    """Each picked reveal holds the prize the round's seed put there; each once."""
    taken: set[tuple[RoundKey, int]] = set()
    for rec, key, number, prize in trail.reveals:
        sets = [p for p in trail.prizes.get(key, []) if p[0] < rec.seq]
        seed = trail.seeds.get(key)
        if not sets or seed is None:
            trail.flag(key, rec, "a reveal picked with no prize set or no revealed seed")
            continue
        _, prizes, commitment = sets[-1]
        reveals = RevealSet(trail.draw_id, f"{key[0]}-{key[1]}", prizes, seed)
        if reveals.commitment != commitment:
            trail.flag(key, rec, "the prize set does not hash to its reveals commitment")
        elif not 1 <= number <= len(reveals.sealed) or reveals.sealed[number - 1].label != prize:
            trail.flag(key, rec, f"reveal {number} does not hold {prize}")
        elif (key, number) in taken:
            trail.flag(key, rec, f"reveal {number} picked twice")
        taken.add((key, number))


def _letter(trail: _Trail, rec: AuditRecord) -> None:
    claim = rec.payload.get("claim", "")
    if claim in trail.claims and trail.prize_of.get(claim) != rec.payload.get("prize"):
        key = trail.claims[claim][0]
        trail.flag(key, rec, f"the letter's prize is not the one {claim} revealed")


def _round_facts(trail: _Trail, rec: AuditRecord, key: RoundKey) -> None:
    payload = rec.payload
    if rec.kind == Kind.POOL:
        trail.frozen = True
        pool = trail.pools.get(payload.get("pool_commitment", ""))
        if pool is not None:
            trail.round_pools[key] = pool
    elif rec.kind == Kind.SEED_REVEAL:
        trail.seeds[key] = bytes.fromhex(payload.get("seed", ""))
    elif rec.kind == Kind.PRIZES:
        prizes = tuple(Prize(label, cents) for label, cents in payload.get("prizes", []))
        trail.prizes.setdefault(key, []).append(
            (rec.seq, prizes, payload.get("reveals_commitment", ""))
        )


def check_trail(
    records: Sequence[AuditRecord], draw_id: str, pools: Mapping[str, Pool]
) -> list[TrailProblem]:
    """Every problem of section 11 in the trail of `draw_id`, in trail order."""
    trail = _Trail(draw_id, pools)
    last: AuditRecord | None = None
    for rec in records:
        payload: Mapping[str, Any] = rec.payload
        if payload.get("draw_id") != draw_id:
            continue
        last = rec  # the draw's last record: where a no-show owed a redraw is flagged
        key: RoundKey = (payload.get("tombola", trail.first_key[0]), payload.get("round", 0))
        if trail.first_key == ("", 0) and "tombola" in payload:
            trail.first_key = key
        try:
            _step(trail, rec, key)
        except (KeyError, ValueError, TypeError) as exc:
            trail.flag(key, rec, f"a {rec.kind} record without its fields ({exc})")
    _check_reveals(trail)
    for key, owed in trail.owed.items():
        if owed > 0 and key[0] != "raps" and key not in trail.manual:
            assert last is not None  # (a round owes a redraw only after a record of it)
            trail.flag(key, last, f"{owed} no-show(s) in {key[0]} round {key[1]} not redrawn")
    return trail.found


def _step(trail: _Trail, rec: AuditRecord, key: RoundKey) -> None:
    kind, payload = rec.kind, rec.payload
    if kind in (Kind.POOL, Kind.SEED_REVEAL, Kind.PRIZES):
        _round_facts(trail, rec, key)
    elif kind in (Kind.REQUEST, Kind.APPROVAL, Kind.EXCEPTION):
        _four_eyes(trail, rec, key)
        if kind == Kind.EXCEPTION and "nobody left" in str(payload.get("note", "")):
            trail.owed[key] -= 1 if trail.owed[key] > 0 else 0
    elif kind in (Kind.EXCLUSION, Kind.PROXY):
        why = _approved(trail, rec, str(kind)) if trail.frozen else None
        if why is not None:
            trail.flag(trail.first_key, rec, why)
        if kind == Kind.EXCLUSION:
            trail.excluded.setdefault(payload["card"], rec.seq)
    elif kind == Kind.SEAT:
        trail.seated.setdefault(payload["card"], rec.seq)
    elif kind in (Kind.PICK, Kind.REDRAW):
        _pick(trail, rec, key)
    elif kind == Kind.CLAIM:
        _claim(trail, rec)
    elif kind == Kind.LETTER:
        _letter(trail, rec)
