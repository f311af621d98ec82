"""The append-only, hash-chained audit log, and what an auditor does with it.

Every draw and selection step leaves a record: seq (1, 2, ...), time (UTC), actor, kind,
payload, the previous record's hash and its own hash, the SHA-256 of the canonical JSON
of the record without its hash. Changing, removing or reordering any record breaks the
chain from that point on, and `verify_chain` names the first broken link. Records are
exchanged as JSON Lines, one canonical record per line.

From the records (plus the archived pool files and the revealed seeds) an auditor can
rebuild each round, re-run `verify_draw`, and print the GLI-31-style `draw_report`:
commitments, picks in draw order with call time and claim outcome, exceptions and
overrides. Payload layouts are built by the `*_payload` helpers here so that the report
and the verifier can rely on them; docs/fairness.md lists them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bonusd.claims import Transition
from bonusd.draws import ManualPick, RoundKey, RoundRecord, verify_draw
from bonusd.errors import AuditFormatError
from bonusd.fairness import (
    Mismatch,
    PassedOver,
    Pick,
    Pool,
    SkipReason,
    Verification,
)

GENESIS = "0" * 64
Json = Any  # None | bool | int | str | list[Json] | dict[str, Json]; never a float


class Kind(StrEnum):
    COMMITMENT = "commitment"
    POOL = "pool"
    PICK = "pick"
    REDRAW = "redraw"
    CLAIM = "claim"
    PROXY = "proxy"
    LETTER = "letter"
    SEED_REVEAL = "seed_reveal"
    EXCLUSION = "exclusion"
    SEAT = "seat"
    RULE_CHANGE = "rule_change"
    OVERRIDE = "override"
    PRIZES = "prizes"  # a round's prize set loaded (the reveals are shuffled from it)
    DECLINE = "decline"  # a member signed a RAPS session's decline register
    EXCEPTION = "exception"  # something the floor must know: an empty pool, no alternate left


def _check_json(value: Json, where: str = "payload") -> None:
    if isinstance(value, float):
        raise TypeError(f"{where}: floats are not allowed in audit records (use cents)")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: keys must be strings, got {k!r}")
            _check_json(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]")
    elif value is not None and not isinstance(value, bool | int | str):
        raise TypeError(f"{where}: {type(value).__name__} is not JSON")


def canonical_json(value: Json) -> bytes:
    """Sorted keys, no spaces, UTF-8 (not \\u-escaped), integers only."""
    _check_json(value)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode()


def utc_text(instant: dt.datetime) -> str:
    """The record time format: UTC, microseconds, `Z` (e.g. 2026-12-12T18:00:00.000000Z)."""
    if instant.tzinfo is None:
        raise ValueError("audit times must be timezone-aware")
    return instant.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class AuditRecord:
    seq: int
    time: str
    actor: str
    kind: str
    payload: dict[str, Json]
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Json]:
        """The record without its hash: what the hash is computed over."""
        return {name: getattr(self, name) for name in _BODY}

    def to_json(self) -> str:
        return canonical_json({**self.body(), "hash": self.hash}).decode()


_BODY = ("seq", "time", "actor", "kind", "payload", "prev_hash")


def record_hash(body: Mapping[str, Json]) -> str:
    return hashlib.sha256(canonical_json(dict(body))).hexdigest()


class AuditLog:
    """Builds records onto a chain; `records` may resume an existing, verified chain."""

    def __init__(self, records: Sequence[AuditRecord] = ()) -> None:
        check = verify_chain(records)
        if not check.ok:
            raise AuditFormatError(f"cannot resume a broken audit chain: {check}")
        self.records = list(records)

    @property
    def head(self) -> str:
        return self.records[-1].hash if self.records else GENESIS

    def append(
        self, *, at: dt.datetime, actor: str, kind: Kind, payload: dict[str, Json]
    ) -> AuditRecord:
        last = self.records[-1] if self.records else None
        rec = next_record(last, at=at, actor=actor, kind=kind, payload=payload)
        self.records.append(rec)
        return rec


def next_record(
    last: AuditRecord | None,
    *,
    at: dt.datetime,
    actor: str,
    kind: Kind,
    payload: dict[str, Json],
) -> AuditRecord:
    """The record that follows `last` (None: the first record of a chain)."""
    seq = last.seq + 1 if last else 1
    values = (seq, utc_text(at), actor, str(kind), payload, last.hash if last else GENESIS)
    rec = AuditRecord(*values, record_hash(dict(zip(_BODY, values, strict=True))))
    if last and rec.time < last.time:
        raise ValueError(f"audit record {seq} at {rec.time} is older than its predecessor")
    return rec


@dataclass(frozen=True)
class ChainCheck:
    checked: int
    broken_at: int | None = None  # seq of the first bad record
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.broken_at is None

    def __str__(self) -> str:
        if self.ok:
            return f"chain intact: {self.checked} records"
        return f"chain broken at record {self.broken_at}: {self.reason}"


def verify_chain(records: Sequence[AuditRecord]) -> ChainCheck:
    """Check seq numbers, links, hashes and time order; report the first broken link."""
    prev, last_time = GENESIS, ""
    for i, rec in enumerate(records):
        n = i + 1
        if rec.seq != n:
            return ChainCheck(i, n, f"seq is {rec.seq}, expected {n} (record missing or moved)")
        if rec.prev_hash != prev:
            return ChainCheck(i, n, "prev_hash does not match the previous record's hash")
        if record_hash(rec.body()) != rec.hash:
            return ChainCheck(i, n, "hash does not match the record's content (modified)")
        if rec.time < last_time:
            return ChainCheck(i, n, f"time {rec.time} is before the previous record's")
        prev, last_time = rec.hash, rec.time
    return ChainCheck(len(records))


def to_jsonl(records: Sequence[AuditRecord]) -> str:
    return "".join(rec.to_json() + "\n" for rec in records)


def from_jsonl(text: str) -> list[AuditRecord]:
    """Parse a JSON Lines export (no verification: call `verify_chain`)."""
    out: list[AuditRecord] = []
    # records end with "\n" only: `splitlines` would also cut a record inside a string at
    # U+2028, U+2029 or U+0085, which canonical JSON keeps unescaped (a note, a name)
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(AuditRecord(**{name: d[name] for name in (*_BODY, "hash")}))
        except (ValueError, KeyError, TypeError) as exc:
            raise AuditFormatError(f"audit export line {n}: {exc!r}") from exc
    return out


# -- payloads --------------------------------------------------------------------------
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

    def verify(self) -> dict[RoundKey, Verification]:
        """`verify_draw`, with a failed verification for each round lacking evidence."""
        ev = (self.rounds, self.order)
        result = verify_draw(*ev, seated=self.seated, excluded=self.excluded, manual=self.manual)
        for key, why in self.missing.items():
            result[key] = Verification(0, (Mismatch("evidence", None, "seed and pool", why),))
        return result


def evidence(records: Sequence[AuditRecord], draw_id: str, pools: Mapping[str, Pool]) -> Evidence:
    """Rebuild the electronic rounds of `draw_id`; `pools` maps each recorded pool
    commitment to the pool read from the archive (`parse_pool`)."""
    ev, seen = Evidence(), [r for r in records if r.payload.get("draw_id") == draw_id]
    facts: dict[RoundKey, dict[str, Any]] = {}
    for rec in seen:
        p = rec.payload
        key = (p.get("tombola", ""), p.get("round", 0))
        if rec.kind in (Kind.COMMITMENT, Kind.POOL, Kind.SEED_REVEAL):
            facts.setdefault(key, {"picks": []}).update(p)
        elif rec.kind in (Kind.PICK, Kind.REDRAW) and p.get("manual"):
            ev.manual.setdefault(key, []).append(ManualPick(p["number"], p["ticket"], p["card"]))
            ev.order.append((key, p["number"]))
        elif rec.kind in (Kind.PICK, Kind.REDRAW):
            facts.setdefault(key, {"picks": []})["picks"].append(pick_from_payload(p))
            ev.order.append((key, p["number"]))
        elif rec.kind in (Kind.SEAT, Kind.EXCLUSION):
            (ev.seated if rec.kind == Kind.SEAT else ev.excluded).add(p["card"])
    for key, f in facts.items():
        pool = pools.get(f.get("pool_commitment", ""))
        if f["picks"] and ("seed" not in f or pool is None):
            ev.missing[key] = "no seed_reveal record" if "seed" not in f else "no pool file"
        elif f["picks"] and pool is not None:
            commits = (f.get("seed_commitment", ""), f["pool_commitment"])
            seed = bytes.fromhex(f["seed"])
            ev.rounds.append(RoundRecord(pool, seed, *commits, tuple(f["picks"])))
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

    def render(self) -> str:
        out = [f"DRAW REPORT {self.draw_id}", f"audit chain: {self.chain}", "", "COMMITMENTS"]
        out += [f"  {c}" for c in self.commitments] or ["  none"]
        out += ["", "PICKS IN DRAW ORDER"]
        out += [
            f"  {n:>3}  {p.called_at}  {p.where}  ticket {p.ticket}  card {p.card}"
            f"  {p.how} -> {p.outcome}"
            for n, p in enumerate(self.picks, 1)
        ] or ["  none"]
        for title, items in (("EXCEPTIONS", self.exceptions), ("OVERRIDES", self.overrides)):
            out += ["", title] + ([f"  {x}" for x in items] or ["  none"])
        return "\n".join(out) + "\n"


def draw_report(records: Sequence[AuditRecord], draw_id: str) -> DrawReport:
    """Build the report of one draw (or RAPS jackpot) from the whole audit log."""
    report = DrawReport(draw_id, verify_chain(records))
    outcome: dict[str, str] = {}
    for rec in records:
        p = rec.payload
        if p.get("draw_id") == draw_id and rec.kind == Kind.CLAIM:
            outcome[p["card"]] = p["to"]
    for rec in records:
        p, when = rec.payload, f"{rec.time} by {rec.actor}"
        if rec.kind == Kind.RULE_CHANGE:  # rule changes apply promotion-wide
            report.overrides.append(f"{when}: rule change {canonical_json(p).decode()}")
        if p.get("draw_id") != draw_id:
            continue
        where = f"{p.get('tombola', '')} r{p.get('round', '')}"
        if rec.kind == Kind.COMMITMENT:
            report.commitments.append(f"{rec.time} {where} seed {p['seed_commitment']}")
        elif rec.kind == Kind.POOL:
            report.commitments.append(
                f"{rec.time} {where} pool {p['pool_commitment']}"
                f" ({p['members']} members, {p['tickets']} tickets)"
            )
        elif rec.kind in (Kind.PICK, Kind.REDRAW):
            how = "manual" if p.get("manual") else str(rec.kind)
            result = outcome.get(p["card"], "no claim recorded")
            line = (rec.time, f"{where} #{p['number']}", p["ticket"], p["card"], how, result)
            report.picks.append(ReportLine(*line))
            for s in p.get("passed_over", []):
                if s["reason"] != SkipReason.ALREADY_PICKED:
                    report.exceptions.append(f"{rec.time} {where}: card {s['card']} {s['reason']}")
            if rec.kind == Kind.REDRAW:
                report.exceptions.append(f"{rec.time} {where}: redraw, pick {p['number']}")
        elif rec.kind == Kind.CLAIM and p["to"] in ("no_show", "lapsed", "not_owner", "reselected"):
            report.exceptions.append(f"{when}: {p['claim']} card {p['card']} {p['to']}")
        elif rec.kind == Kind.EXCEPTION:
            report.exceptions.append(f"{when}: {p.get('note', '')}")
        elif rec.kind in (Kind.OVERRIDE, Kind.EXCLUSION, Kind.SEAT):
            report.overrides.append(f"{when}: {rec.kind} {canonical_json(p).decode()}")
    return report
