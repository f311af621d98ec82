"""One RAPS session's book: its state rebuilt from its ledger, and the steps that extend it.

A session's ledger (subject `promotion.session`) holds every record of its jackpots: the
seed commitments, the decline register, each jackpot's pool (one ticket per eligible card,
with the counts per reason the others were left out and the SHA-256 of the archived
eligibility report), picks, reselections (`REDRAW`, the next pick of the same stream),
claim moves (a reselection names its reason; the crew's are bounded: `reselection`), the
desk's approvals of one more crew reselection (`override`), empty-pool exceptions and
seed reveals. Jackpot `n` is `{subject}.j{n}`, the `draw_id` of its records, in tombola
`raps`; a retry after an empty pool freezes a new pool with round = attempt number, under
the same committed seed.

As in `drawbook`, `apply` redoes the step of each record and raises `LedgerError` when it
does not give the recorded payload. Commands return the `Entry`s to commit. Pure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import replace

from bonusd.audit.chain import AuditRecord, Entry, Json, Kind, utc_text
from bonusd.draws import evidence
from bonusd.draws.book import SCHEDULER, LedgerError, PoolFiles, actor_text, parse_actor, parse_time
from bonusd.draws.claims import Actor, ClaimError
from bonusd.draws.fairness import Pool, commit_seed
from bonusd.errors import BonusdError
from bonusd.raps import outcomes
from bonusd.raps.plan import Due, JackpotState, SessionPlan, jackpot_number
from bonusd.raps.reselection import APPROVED, Reselections, claim_move
from bonusd.raps.rules import (
    RAPS_TOMBOLA,
    DeclineRegister,
    Jackpot,
    RapsClaim,
    RapsClaimState,
    RapsError,
)
from bonusd.raps.snapshot import FloorSnapshot, Judgement, instant_ms, judge

Floors = Callable[[str, int], FloorSnapshot]
"""(jackpot id, attempt) -> the archived floor snapshot it was judged from."""


class RapsBook:
    """The state of one RAPS session: register, jackpots, claims."""

    def __init__(self, plan: SessionPlan) -> None:
        self.plan = plan
        self.subject = plan.subject
        self.register = DeclineRegister(
            plan.subject, opens_at=plan.register_opens, starts_at=plan.starts_at
        )
        ids = {n: f"{plan.subject}.j{n}" for n in range(1, len(plan.times) + 1)}
        self.jackpots = {
            n: JackpotState(n, at, ids[n], Reselections.of(ids[n], plan.session))
            for n, at in enumerate(plan.times, 1)
        }
        self.claims: dict[int, RapsClaim] = {}
        self.claim_jackpot: dict[int, int] = {}
        self.version = 0

    # -- replay -----------------------------------------------------------------------------
    def apply(
        self,
        rec: AuditRecord,
        *,
        seeds: Mapping[int, bytes],
        pools: PoolFiles,
        floors: Floors,
    ) -> None:
        """Redo the step of one ledger record and check it gives the recorded payload."""
        try:
            got = self._replay(rec, seeds, pools, floors)
            problem = f"says {rec.payload}, but replaying it gives {got}"
        except (BonusdError, KeyError, ValueError) as exc:
            got, problem = None, f"cannot be replayed: {exc}"
        if got != rec.payload:
            raise LedgerError(f"{self.subject}: ledger record {rec.seq} ({rec.kind}) {problem}")
        self.version += 1

    def _replay(
        self, rec: AuditRecord, seeds: Mapping[int, bytes], pools: PoolFiles, floors: Floors
    ) -> dict[str, Json]:
        kind, payload = Kind(rec.kind), rec.payload
        at, actor = parse_time(rec.time), parse_actor(rec.actor)
        if kind is Kind.DECLINE:
            return self._decline(payload["card"], actor, at)
        number = jackpot_number(payload["draw_id"])
        if kind is Kind.COMMITMENT:
            return self._commit(number, seeds[number], late=payload.get("late", False))
        if kind is Kind.POOL:
            jid = self.jackpot(number).jackpot_id
            return self._pool(
                number, pools(payload["pool_commitment"]), floors(jid, payload["round"])
            )
        if kind in (Kind.PICK, Kind.REDRAW):
            return self._pick(number)
        if kind is Kind.CLAIM and payload["action"] == "created":
            return self._create(number, payload["card"], actor, at)
        if kind is Kind.CLAIM:
            cid, reason = int(payload["claim"].split()[-1]), payload["detail"].get("reason")
            return self._move(cid, payload["action"], actor, at, reason)
        if kind is Kind.OVERRIDE and payload.get("event") == APPROVED:
            return self._approve(number, actor, at, payload["reason"])
        if kind is Kind.EXCEPTION and payload.get("event") == "empty_pool":
            return self._empty(number, at)
        if kind is Kind.EXCEPTION and payload.get("event") == "seed_refused":
            return dict(payload)  # a step refused: its seed was not in Redis as committed
        if kind is Kind.EXCEPTION and payload.get("event") == "missed":
            return self._missed(number, payload["note"])
        if kind is Kind.EXCEPTION:
            return self._nobody_left(number)
        if kind is Kind.SEED_REVEAL:
            return self._reveal(number)
        if kind is Kind.EXCLUSION:
            return self._exclude(number, payload["card"], payload["note"])
        raise ValueError(f"a RAPS session ledger holds no {kind} records")

    # -- steps: each returns the payload it records ---------------------------------------
    def jackpot(self, number: int) -> JackpotState:
        self.plan.at(number)
        return self.jackpots[number]

    def _live(self, number: int) -> tuple[JackpotState, Jackpot, Pool]:
        st = self.jackpot(number)
        if st.jackpot is None or st.jackpot.pool is None:
            raise RapsError(f"jackpot {st.jackpot_id} has not run yet: it has no pool")
        return st, st.jackpot, st.jackpot.pool

    def _commit(self, number: int, seed: bytes, *, late: bool) -> dict[str, Json]:
        st = self.jackpot(number)
        if st.seed is not None:
            raise RapsError(f"jackpot {st.jackpot_id}: its seed is committed already")
        st.seed, st.commitment = seed, commit_seed(seed)
        out = evidence.commitment_payload(st.jackpot_id, (RAPS_TOMBOLA, 1), st.commitment)
        return out | {"late": True} if late else out

    def _decline(self, card: str, actor: Actor, at: dt.datetime) -> dict[str, Json]:
        if not self.plan.session.decline_register:
            raise RapsError(f"RAPS session {self.subject} has no decline register")
        self.register.sign(card, actor, at)
        return {"draw_id": self.subject, "card": card}

    def _pool(
        self, number: int, pool: Pool, floor: FloorSnapshot, verdict: Judgement | None = None
    ) -> dict[str, Json]:
        st = self.jackpot(number)
        if st.seed is None:
            raise RapsError(f"jackpot {st.jackpot_id}: commit its seed before the pool")
        attempt = st.attempt + 1
        verdict = verdict or judge(floor, self.plan.rules)
        same = verdict.eligible is pool.cards or verdict.eligible == pool.cards
        if not same or pool.round_no != attempt:
            raise RapsError(
                f"jackpot {st.jackpot_id}: the pool file of attempt {attempt} is not the eligible "
                "players of its archived floor snapshot; restore both from the backup"
            )
        st.attempt = attempt
        st.jackpot = Jackpot(st.jackpot_id, seed=st.seed)
        st.jackpot.restore(pool)
        st.floor = floor.lean()
        st.retry_at = None
        counts = {"eligible": pool.members, "ineligible": verdict.ineligible}
        st.summary = {"attempt": attempt, **counts, "reasons": dict(verdict.reasons())}
        extra = {"seed_commitment": st.commitment, "floor_sha256": floor.sha256}
        return evidence.pool_payload(pool) | extra | st.summary

    def _pick(self, number: int) -> dict[str, Json]:
        st, jackpot, pool = self._live(number)
        pick = jackpot.next_pick()
        if pick is None:
            raise RapsError(f"jackpot {st.jackpot_id}: nobody is left in the pool to pick")
        return evidence.pick_payload(pool, pick)

    def _create(self, number: int, card: str, actor: Actor, at: dt.datetime) -> dict[str, Json]:
        st = self.jackpot(number)
        assert st.jackpot is not None
        assert st.floor is not None
        where = st.floor.place(card)
        claim_id = len(self.claims) + 1
        claim = RapsClaim(
            claim_id,
            jackpot_id=st.jackpot_id,
            card=card,
            device=where["device"],
            area=where["area"],
            bank=where["bank"],
            alerted_at=at,
            actor=actor,
            claim_time=dt.timedelta(seconds=self.plan.session.claim_seconds),
            seat=where["seat"],
        )
        self.claims[claim_id] = claim
        self.claim_jackpot[claim_id] = number
        st.claims.append(claim_id)
        detail = {k: where[k] for k in ("device", "area", "bank", "seat")}
        detail |= {"pick": str(len(st.jackpot.picks)), "prizes": str(st.prizes)}
        return evidence.claim_payload(st.jackpot_id, card, replace(claim.history[0], detail=detail))

    def _move(
        self, claim_id: int, action: str, actor: Actor, at: dt.datetime, reason: str | None
    ) -> dict[str, Json]:
        """`reason`: a reselection's (None: a record from before reasons were required)."""
        claim = self.claim(claim_id)
        allowance = self.jackpots[self.claim_jackpot[claim_id]].reselections
        move = claim_move(
            claim, action, actor, at, register=self.register, allowance=allowance, reason=reason
        )
        return evidence.claim_payload(claim.jackpot_id, claim.card, move)

    def _approve(self, number: int, actor: Actor, at: dt.datetime, reason: str) -> dict[str, Json]:
        """The desk grants the crew one more reselection of jackpot `number`'s open claim."""
        st = self.jackpot(number)
        if not st.claims or self.settled(number):
            raise RapsError(f"jackpot {st.jackpot_id} has no open claim to reselect")
        return st.reselections.approve(actor, at, reason)

    def _empty(self, number: int, at: dt.datetime) -> dict[str, Json]:
        st, _, pool = self._live(number)
        later = [j for j in self.jackpots.values() if j.number > number and j.attempt == 0]
        return outcomes.empty_pool(st, pool, self.plan.session.empty_pool, later, at)

    def _exclude(self, number: int, card: str, note: str) -> dict[str, Json]:
        """A member excluded since the pool froze: passed over by every later pick."""
        st, jackpot, _ = self._live(number)
        if card in st.excluded:
            raise RapsError(f"jackpot {st.jackpot_id}: card {card} is excluded already")
        st.excluded.add(card)
        jackpot.exclude(card)
        return {"draw_id": st.jackpot_id, "card": card, "note": note}

    def _nobody_left(self, number: int) -> dict[str, Json]:
        st, jackpot, _ = self._live(number)
        return outcomes.nobody_left(st, jackpot)

    def _missed(self, number: int, note: str) -> dict[str, Json]:
        return outcomes.missed(self.jackpot(number), note)

    def _reveal(self, number: int) -> dict[str, Json]:
        st = self.jackpot(number)
        if st.revealed or st.jackpot is None or not self.settled(number):
            raise RapsError(f"jackpot {st.jackpot_id}: its seed cannot be revealed now")
        st.revealed = True
        st.floor = None  # settled: its claims hold their places; the archive keeps the rest
        return evidence.seed_payload(
            st.jackpot_id, (RAPS_TOMBOLA, st.attempt), st.jackpot.reveal_seed()
        )

    # -- commands -------------------------------------------------------------------------
    def _entry(self, kind: Kind, payload: dict[str, Json], actor: Actor, at: dt.datetime) -> Entry:
        self.version += 1
        return Entry(at, actor_text(actor), kind, payload)

    def claim(self, claim_id: int) -> RapsClaim:
        try:
            return self.claims[claim_id]
        except KeyError:
            raise ClaimError(f"RAPS session {self.subject} has no claim {claim_id}") from None

    def commit_seeds(self, seeds: Mapping[int, bytes], at: dt.datetime) -> list[Entry]:
        """Record each jackpot's seed commitment; `late` when made after its time."""
        out = []
        for number, st in self.jackpots.items():
            if st.seed is None:
                payload = self._commit(number, seeds[number], late=at > st.at)
                out.append(self._entry(Kind.COMMITMENT, payload, SCHEDULER, at))
        return out

    def missed(self, number: int, late: dt.timedelta, at: dt.datetime) -> list[Entry]:
        """Record that jackpot `number` did not run at its time (the daemon was down longer than
        the grace): the desk runs it on demand or decides otherwise. Once per jackpot."""
        st = self.jackpot(number)
        noted = any(e.get("event") == "missed" for e in st.exceptions)
        if st.attempt or noted:
            return []
        note = (
            f"jackpot {st.jackpot_id} not run at {utc_text(st.at)}: the daemon was down for "
            f"{late}; the desk runs it"
        )
        return [self._entry(Kind.EXCEPTION, self._missed(number, note), SCHEDULER, at)]

    def exclude(self, jackpot_id: str, card: str, actor: Actor, at: dt.datetime) -> list[Entry]:
        """Record that `card` was excluded after jackpot `jackpot_id`'s pool froze (once)."""
        number = jackpot_number(jackpot_id)
        st = self.jackpot(number)
        if card in st.excluded or st.jackpot is None or st.jackpot.pool is None:
            return []
        payload = self._exclude(number, card, "excluded after the pool froze")
        return [self._entry(Kind.EXCLUSION, payload, actor, at)]

    def sign_decline(self, card: str, actor: Actor, at: dt.datetime) -> list[Entry]:
        return [self._entry(Kind.DECLINE, self._decline(card, actor, at), actor, at)]

    def approve_reselection(
        self, number: int, actor: Actor, at: dt.datetime, reason: str
    ) -> list[Entry]:
        """The desk's approval of one more crew reselection of jackpot `number`."""
        return [self._entry(Kind.OVERRIDE, self._approve(number, actor, at, reason), actor, at)]

    def selectable(self, number: int, at: dt.datetime) -> bool:
        """The jackpot is to run now: its first attempt, or a retry that is due."""
        st = self.jackpot(number)
        if not st.to_pick or st.attempt == 0:
            return st.to_pick
        return st.retry_at is not None and at >= st.retry_at

    def ready(self, number: int, at: dt.datetime) -> bool:
        """Every seed committed and jackpot `number` to run now (`selectable`)."""
        return all(st.seed for st in self.jackpots.values()) and self.selectable(number, at)

    def select(
        self, number: int, floor: FloorSnapshot, actor: Actor, at: dt.datetime
    ) -> tuple[list[Entry], list[tuple[Pool, FloorSnapshot]]]:
        """Freeze the pool of players eligible on `floor` (the snapshot at `at`) and alert
        the crew to the winner (or record the empty pool); returns the entries and the
        (pool, floor snapshot) to archive. Idempotent: a jackpot run already (and no
        retry due) gives nothing."""
        st = self.jackpot(number)
        if not self.selectable(number, at):
            return [], []
        if at < st.at:
            raise RapsError(f"jackpot {st.jackpot_id} is at {utc_text(st.at)}; not before")
        if floor.at_ms != instant_ms(at):
            raise RapsError(f"jackpot {st.jackpot_id}: the floor snapshot is not of {utc_text(at)}")
        verdict = judge(floor, self.plan.rules)
        pool = verdict.pool(st.jackpot_id, st.attempt + 1)  # (cards sorted already)
        out = [self._entry(Kind.POOL, self._pool(number, pool, floor, verdict), actor, at)]
        if pool.members == 0:
            out.append(self._entry(Kind.EXCEPTION, self._empty(number, at), actor, at))
        else:
            out += self._announce(Kind.PICK, number, actor, at)
        return out + self.reveal_seeds(at), [(pool, floor)]

    def _announce(self, kind: Kind, number: int, actor: Actor, at: dt.datetime) -> list[Entry]:
        pick = self._entry(kind, self._pick(number), actor, at)
        created = self._create(number, pick.payload["card"], actor, at)
        return [pick, self._entry(Kind.CLAIM, created, actor, at)]

    def act(
        self, claim_id: int, action: str, actor: Actor, at: dt.datetime, reason: str = ""
    ) -> list[Entry]:
        """One claim action; a card not its holder's, or a reselection (with its `reason`),
        alerts the crew to the next pick of the jackpot's stream (or records that nobody
        is left)."""
        out = [self._entry(Kind.CLAIM, self._move(claim_id, action, actor, at, reason), actor, at)]
        claim, number = self.claims[claim_id], self.claim_jackpot[claim_id]
        if claim.state is RapsClaimState.NOT_OWNER:
            move = self._move(claim_id, "reselect", actor, at, reason)
            out.append(self._entry(Kind.CLAIM, move, actor, at))
        if claim.state is RapsClaimState.RESELECTED:
            _, jackpot, _ = self._live(number)
            if jackpot.exhausted:
                out.append(self._entry(Kind.EXCEPTION, self._nobody_left(number), actor, at))
            else:
                out += self._announce(Kind.REDRAW, number, actor, at)
        return out + self.reveal_seeds(at)

    def won(self, number: int) -> RapsClaim | None:
        return next(
            (self.claims[c] for c in self.jackpot(number).claims if self.claims[c].won), None
        )

    def settled(self, number: int) -> bool:
        """Won, skipped, carried over or nobody left: the seed may now be published."""
        return bool(self.jackpot(number).outcome) or self.won(number) is not None

    def reveal_seeds(self, at: dt.datetime) -> list[Entry]:
        return [
            self._entry(Kind.SEED_REVEAL, self._reveal(n), SCHEDULER, at)
            for n, st in self.jackpots.items()
            if st.jackpot is not None and not st.revealed and self.settled(n)
        ]

    # -- timers ---------------------------------------------------------------------------
    def timers(self) -> list[Due]:
        out = []
        for cid, claim in self.claims.items():
            for timer in claim.timers():
                signed = self.register.has_declined(claim.card)
                action = "declined_register" if signed else "reselect"
                out.append(Due(timer.deadline, self.claim_jackpot[cid], cid, action))
        for number, st in self.jackpots.items():
            if st.retry_at is not None and not st.outcome and not st.claims:
                out.append(Due(st.retry_at, number, None, "retry"))
        return sorted(out, key=lambda d: (d.at, d.jackpot))

    def next_deadline(self) -> dt.datetime | None:
        return min((d.at for d in self.timers()), default=None)

    def due(self, now: dt.datetime) -> list[Due]:
        """Every expired timer, oldest first (a claim's once past its deadline, so the
        `after` rule holds; a retry once its time has come)."""
        return [d for d in self.timers() if d.at < now or (d.claim_id is None and d.at <= now)]
