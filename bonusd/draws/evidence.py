"""A draw's evidence in the audit trail: the payloads its records carry (commitments, seeds,
pools, picks, claims), the evidence an auditor rebuilds from them, and the draw report.
The hash chain itself is `bonusd.audit.chain`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bonusd.audit.chain import AuditRecord, ChainCheck, Json, Kind, canonical_json, verify_chain
from bonusd.draws.claims import ClaimRole, Transition
from bonusd.draws.fairness import PassedOver, Pick, Pool, SkipReason
from bonusd.draws.rounds import ManualPick, RoundKey, RoundRecord, verify_draw
from bonusd.draws.trailcheck import TrailProblem, check_trail
from bonusd.draws.verify import Mismatch, Verification


def round_ref(draw_id: str, tombola: str, round_no: int) -> dict[str, Json]:
    return {"draw_id": draw_id, "tombola": tombola, "round": round_no}


def commitment_payload(draw_id: str, key: RoundKey, seed_commitment: str) -> dict[str, Json]:
    """Kind COMMITMENT: published while the round's bin is open."""
    return round_ref(draw_id, *key) | {"seed_commitment": seed_commitment}


def seed_payload(draw_id: str, key: RoundKey, seed: bytes) -> dict[str, Json]:
    """Kind SEED_REVEAL: published once the draw is over."""
    return round_ref(draw_id, *key) | {"seed": seed.hex()}


def pool_payload(pool: Pool) -> dict[str, Json]:
    """Kind POOL; the pool file itself is archived under its commitment."""
    facts = {"pool_commitment": pool.commitment, "members": pool.members, "tickets": pool.total}
    return round_ref(pool.draw_id, pool.tombola, pool.round_no) | facts


def pick_payload(pool: Pool, pick: Pick) -> dict[str, Json]:
    """Kind PICK for the round's winners, REDRAW for an alternate after a no-show."""
    skipped = [
        {"counter": p.counter, "ticket": p.ticket + 1, "card": p.card, "reason": str(p.reason)}
        for p in pick.passed_over
    ]
    return round_ref(pool.draw_id, pool.tombola, pool.round_no) | {
        "number": pick.number,
        "counter": pick.counter,
        "ticket": pick.ticket_number,
        "card": pick.card,
        "passed_over": skipped,
    }


def manual_pick_payload(draw_id: str, key: RoundKey, pick: ManualPick) -> dict[str, Json]:
    fields = {"number": pick.number, "ticket": pick.ticket_number, "card": pick.card}
    return round_ref(draw_id, *key) | fields | {"manual": True}


def claim_payload(draw_id: str, card: str, move: Transition) -> dict[str, Json]:
    """Kind CLAIM: one transition of a claim (draw or RAPS jackpot id as `draw_id`)."""
    return {
        "draw_id": draw_id,
        "card": card,
        "claim": move.subject,
        "action": move.action,
        "from": move.before,
        "to": move.after,
        "detail": dict(move.detail),
    }


def pick_from_payload(payload: Mapping[str, Json]) -> Pick:
    skipped = tuple(
        PassedOver(p["counter"], p["ticket"] - 1, p["card"], SkipReason(p["reason"]))
        for p in payload["passed_over"]
    )
    return Pick(
        payload["number"], payload["counter"], payload["ticket"] - 1, payload["card"], skipped
    )


@dataclass
class Evidence:
    """One draw's rounds rebuilt from the audit log, ready for `draws.verify_draw`."""

    rounds: list[RoundRecord] = field(default_factory=list)
    order: list[tuple[RoundKey, int]] = field(default_factory=list)
    seated: set[str] = field(default_factory=set)
    excluded: set[str] = field(default_factory=set)
    manual: dict[RoundKey, list[ManualPick]] = field(default_factory=dict)
    missing: dict[RoundKey, str] = field(default_factory=dict)  # rounds that cannot be checked
    trail: list[TrailProblem] = field(default_factory=list)  # section 11 of docs/fairness.md

    def verify(self) -> dict[RoundKey, Verification]:
        """`verify_draw`, with a failed verification for each round lacking evidence."""
        ev = (self.rounds, self.order)
        result = verify_draw(*ev, seated=self.seated, excluded=self.excluded, manual=self.manual)
        for key, why in self.missing.items():
            result[key] = Verification(0, (Mismatch("evidence", None, "seed and pool", why),))
        for problem in self.trail:
            had = result.get(problem.key, Verification(0, ()))
            found = Mismatch("trail", None, problem.problem, str(problem.seq), str(problem))
            result[problem.key] = Verification(had.picks_checked, (*had.mismatches, found))
        return result


def evidence(records: Sequence[AuditRecord], draw_id: str, pools: Mapping[str, Pool]) -> Evidence:
    """Rebuild the electronic rounds of `draw_id`; `pools` maps each recorded pool
    commitment to the pool read from the archive (`parse_pool`)."""
    ev, seen = Evidence(), [r for r in records if r.payload.get("draw_id") == draw_id]
    facts: dict[RoundKey, dict[str, Any]] = {}
    for rec in seen:
        payload = rec.payload
        key = (payload.get("tombola", ""), payload.get("round", 0))
        if rec.kind in (Kind.COMMITMENT, Kind.POOL, Kind.SEED_REVEAL):
            facts.setdefault(key, {"picks": []}).update(payload)
        elif rec.kind in (Kind.PICK, Kind.REDRAW) and payload.get("manual"):
            ev.manual.setdefault(key, []).append(
                ManualPick(payload["number"], payload["ticket"], payload["card"])
            )
            ev.order.append((key, payload["number"]))
        elif rec.kind in (Kind.PICK, Kind.REDRAW):
            facts.setdefault(key, {"picks": []})["picks"].append(pick_from_payload(payload))
            ev.order.append((key, payload["number"]))
        elif rec.kind in (Kind.SEAT, Kind.EXCLUSION):
            (ev.seated if rec.kind == Kind.SEAT else ev.excluded).add(payload["card"])
    for key, round_facts in facts.items():
        pool = pools.get(round_facts.get("pool_commitment", ""))
        if round_facts["picks"] and ("seed" not in round_facts or pool is None):
            ev.missing[key] = (
                "no seed_reveal record" if "seed" not in round_facts else "no pool file"
            )
        elif round_facts["picks"] and pool is not None:
            commits = (round_facts.get("seed_commitment", ""), round_facts["pool_commitment"])
            seed = bytes.fromhex(round_facts["seed"])
            ev.rounds.append(RoundRecord(pool, seed, *commits, tuple(round_facts["picks"])))
    ev.trail = check_trail(records, draw_id, pools)
    return ev


# -- the draw report -------------------------------------------------------------------
@dataclass(frozen=True)
class ReportLine:
    called_at: str
    where: str  # tombola, round and pick number, e.g. "slots r1 #2"
    ticket: int
    card: str
    how: str  # "pick", "redraw" or "manual"
    outcome: str  # the claim's last state


@dataclass(frozen=True)
class DrawReport:
    draw_id: str
    chain: ChainCheck
    commitments: list[str] = field(default_factory=list)
    picks: list[ReportLine] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    receipt_checks: list[str] = field(default_factory=list)  # receipts presented at claims
    staff_actions: list[str] = field(default_factory=list)  # every step a person took, by whom

    def render(self) -> str:
        out = [f"DRAW REPORT {self.draw_id}", f"audit chain: {self.chain}", "", "COMMITMENTS"]
        out += [f"  {c}" for c in self.commitments] or ["  none"]
        out += ["", "PICKS IN DRAW ORDER"]
        out += [
            f"  {n:>3}  {p.called_at}  {p.where}  ticket {p.ticket}  card {p.card}"
            f"  {p.how} -> {p.outcome}"
            for n, p in enumerate(self.picks, 1)
        ] or ["  none"]
        for title, items in (
            ("RECEIPT CHECKS", self.receipt_checks),
            ("EXCEPTIONS", self.exceptions),
            ("OVERRIDES", self.overrides),
            ("STAFF ACTIONS", self.staff_actions),
        ):
            out += ["", title] + ([f"  {x}" for x in items] or ["  none"])
        return "\n".join(out) + "\n"


def draw_report(
    records: Sequence[AuditRecord], draw_id: str, chain: ChainCheck | None = None
) -> DrawReport:
    """Build the report of one draw (or RAPS jackpot) from the whole audit log, or from
    its own records and rule changes with the whole chain's check (`chain`: `Picked`)."""
    report = DrawReport(draw_id, verify_chain(records) if chain is None else chain)
    outcome: dict[str, str] = {}
    for rec in records:
        payload = rec.payload
        if payload.get("draw_id") == draw_id and rec.kind == Kind.CLAIM:
            outcome[payload["card"]] = payload["to"]
    for rec in records:
        payload, when = rec.payload, f"{rec.time} by {rec.actor}"
        if rec.kind == Kind.RULE_CHANGE:  # rule changes apply promotion-wide
            report.overrides.append(f"{when}: rule change {canonical_json(payload).decode()}")
        if payload.get("draw_id") != draw_id:
            continue
        where = f"{payload.get('tombola', '')} r{payload.get('round', '')}"
        person = not rec.actor.endswith(f"({ClaimRole.SYSTEM})")
        if person and not (rec.kind == Kind.CLAIM and payload["action"] == "created"):
            report.staff_actions.append(f"{when}: {_step(rec)}")  # (a claim made by its pick)
        if rec.kind == Kind.COMMITMENT:
            report.commitments.append(f"{rec.time} {where} seed {payload['seed_commitment']}")
        elif rec.kind == Kind.POOL:
            report.commitments.append(
                f"{rec.time} {where} pool {payload['pool_commitment']}"
                f" ({payload['members']} members, {payload['tickets']} tickets)"
            )
        elif rec.kind in (Kind.PICK, Kind.REDRAW):
            how = "manual" if payload.get("manual") else str(rec.kind)
            result = outcome.get(payload["card"], "no claim recorded")
            line = (
                rec.time,
                f"{where} #{payload['number']}",
                payload["ticket"],
                payload["card"],
                how,
                result,
            )
            report.picks.append(ReportLine(*line))
            for passed in payload.get("passed_over", []):
                if passed["reason"] != SkipReason.ALREADY_PICKED:
                    report.exceptions.append(
                        f"{rec.time} {where}: card {passed['card']} {passed['reason']}"
                    )
            if rec.kind == Kind.REDRAW:
                report.exceptions.append(f"{rec.time} {where}: redraw, pick {payload['number']}")
        elif rec.kind == Kind.CLAIM and payload["to"] in (
            "no_show",
            "lapsed",
            "not_owner",
            "reselected",
        ):
            report.exceptions.append(
                f"{when}: {payload['claim']} card {payload['card']} {payload['to']}"
            )
        elif rec.kind == Kind.RECEIPT_CHECK:
            receipt = f"receipt {payload['receipt']}" if payload.get("receipt") else "a receipt"
            checked = f"{when}: {payload['claim']} card {payload['card']}: {receipt}"
            report.receipt_checks.append(f"{checked}: {payload['message']}")
            if payload["verdict"] != "valid":
                report.exceptions.append(f"{checked}: {payload['message']}")
        elif rec.kind == Kind.EXCEPTION:
            report.exceptions.append(f"{when}: {payload.get('note', '')}{_names(payload)}")
        elif rec.kind in (Kind.REQUEST, Kind.APPROVAL) or "approved_by" in payload:
            report.exceptions.append(f"{when}: {_four_eyes(rec)}")
        elif rec.kind in (Kind.OVERRIDE, Kind.EXCLUSION, Kind.SEAT):
            report.overrides.append(f"{when}: {rec.kind} {canonical_json(payload).decode()}")
    return report


def _step(rec: AuditRecord) -> str:
    """What a person's record did, in a few words (the trail holds the rest)."""
    payload = rec.payload
    if rec.kind == Kind.CLAIM:
        return f"{payload['claim']} card {payload['card']}: {payload['action']}"
    card = f" card {payload['card']}" if "card" in payload else ""
    return f"{rec.kind}{card}"


def _names(payload: Mapping[str, Any]) -> str:
    if "approved_by" not in payload:
        return ""
    return f"; requested by {payload['requested_by']}, approved by {payload['approved_by']}"


def _four_eyes(rec: AuditRecord) -> str:
    """A report line of a four-eyes step: its request, its decision or the change made."""
    payload = rec.payload
    if rec.kind == Kind.REQUEST:
        about = f" card {payload['card']}" if "card" in payload else ""
        return f"request {payload['request']}: {payload['change']}{about}: {payload['reason']}"
    if rec.kind == Kind.APPROVAL:
        return f"request {payload['request']} ({payload['change']}) {payload['decision']}"
    if rec.kind == Kind.EXCLUSION:
        what = f"card {payload['card']} excluded after the freeze: {payload['note']}"
    else:
        what = f"proxy {payload['proxy_id']} registered for card {payload['card']} after the freeze"
    return f"{what} (request {payload['request']}){_names(payload)}"
