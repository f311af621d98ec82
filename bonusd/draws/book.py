"""One draw's book: its whole state rebuilt from its ledger, and the steps that extend it.

A draw's ledger (see `audit_store`) is the only place its state lives. `DrawBook.apply`
replays one ledger record: it redoes the step from the record's facts (the committed
seed, the archived pool, the claim action) and checks that the step produces exactly the
recorded payload, so a record that was altered, or a pick that no longer follows from
the seed and pool, stops the replay with a `LedgerError` instead of being believed.

Commands (`commit_round`, `seat`, `freeze_round`, `run_round`, `accept_ticket`,
`claim`, `register_proxy`, `load_prizes`, `reveal_seeds`) change the book and return
the `Entry`s to commit; the caller commits them atomically against the ledger length it
read and throws the book away if that fails. Pure: no I/O, no clock. The claim side
(claims, proxies, letters, timers) is `bonusd.draws.bookclaims`, the plan `bonusd.draws.plan`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from bonusd.audit.chain import AuditRecord, Entry, Json, Kind
from bonusd.draws.approvals import Approvals
from bonusd.draws.bookchanges import CHANGE_KINDS, BinOpenError, ChangeSteps, check_bin_closes
from bonusd.draws.bookclaims import ClaimSteps
from bonusd.draws.claims import (
    Actor,
    DrawClaim,
    DrawClaimState,
    LetterBook,
    Prize,
    ProxyRegister,
)
from bonusd.draws.evidence import (
    commitment_payload,
    manual_pick_payload,
    pick_payload,
    pool_payload,
    round_ref,
    seed_payload,
)
from bonusd.draws.fairness import Pool, commit_seed
from bonusd.draws.plan import (
    SCHEDULER,
    DrawPlan,
    PoolFiles,
    RoundPlan,
    actor_text,
    parse_actor,
    parse_time,
    subject_of,
)
from bonusd.draws.rounds import DrawError, DrawRounds, RevealSet, RoundKey
from bonusd.errors import BonusdError

# the plan and the ledger's text forms live in `bonusd.draws.plan`; importable from here too
__all__ = [
    "SCHEDULER",
    "SETTLED",
    "BinOpenError",
    "ClaimSteps",
    "DrawBook",
    "DrawPlan",
    "LedgerError",
    "PoolFiles",
    "RoundPlan",
    "actor_text",
    "check_bin_closes",
    "parse_actor",
    "parse_time",
    "subject_of",
]

SETTLED = frozenset(
    {
        DrawClaimState.REVEAL_PICKED,
        DrawClaimState.LETTER_ISSUED,
        DrawClaimState.REDEEMED,
        DrawClaimState.LAPSED,
        DrawClaimState.NO_SHOW,
    }
)

MISSED = "not drawn at its time"  # the note of a round the scheduler missed


class LedgerError(BonusdError):
    """A ledger record does not replay to what it says: the stored draw was altered.
    Stop, export the audit trail (`bonusd audit export`) and call the compliance officer."""


class DrawBook(ClaimSteps, ChangeSteps):
    """The state of one draw: rounds, picks, claims, proxies, reveals and letters."""

    def __init__(self, plan: DrawPlan) -> None:
        self.plan = plan
        self.subject = plan.subject
        # each pick's passed-over tickets are in its ledger record, not kept here too
        self.draw = DrawRounds(plan.subject, keep_passed_over=False)
        self.claims: dict[int, DrawClaim] = {}
        self.claim_round: dict[int, tuple[RoundKey, int]] = {}
        first = plan.rounds[0].at
        self.proxies = ProxyRegister(
            plan.subject, opens_at=plan.proxies_open, draw_at=first, cutoff=plan.proxy_cutoff
        )
        self.reveal_sets: dict[RoundKey, RevealSet] = {}
        self.prizes: dict[RoundKey, tuple[Prize, ...]] = {}
        self.letters = LetterBook(plan.subject, validity=plan.letters_lapse - first)
        self.revealed: set[RoundKey] = set()
        self.missed_rounds: set[int] = set()  # rounds with a "not drawn at its time" note
        self.approvals = Approvals(plan.subject)
        self.closed_early = False
        self.version = 0  # ledger records this book holds

    # -- replay -----------------------------------------------------------------------------
    def apply(self, rec: AuditRecord, *, seeds: Mapping[RoundKey, bytes], pools: PoolFiles) -> None:
        """Redo the step of one ledger record and check it gives the recorded payload."""
        payload, at, actor = rec.payload, parse_time(rec.time), parse_actor(rec.actor)
        key: RoundKey = (payload.get("tombola", ""), payload.get("round", 0))
        try:
            got = self._replay(
                Kind(rec.kind), payload, key, at=at, actor=actor, seeds=seeds, pools=pools
            )
        except (BonusdError, KeyError, ValueError) as exc:
            raise LedgerError(
                f"{self.subject}: ledger record {rec.seq} ({rec.kind}) cannot be replayed: {exc}"
            ) from exc
        if got != payload:
            raise LedgerError(
                f"{self.subject}: ledger record {rec.seq} ({rec.kind}) says {payload}, "
                f"but replaying it gives {got}"
            )
        self.version += 1

    def _replay(
        self,
        kind: Kind,
        payload: Mapping[str, Any],
        key: RoundKey,
        *,
        at: dt.datetime,
        actor: Actor,
        seeds: Mapping[RoundKey, bytes],
        pools: PoolFiles,
    ) -> dict[str, Json]:
        if kind is Kind.COMMITMENT:
            return self._commit(key, seeds[key], late=payload.get("late", False))
        if kind is Kind.SEAT:
            return self._seat(payload["card"], payload["board"])
        if kind in CHANGE_KINDS:
            return self._replay_change(kind, payload, actor, at)
        if kind is Kind.POOL:
            self.check_close_time(at)
            return self._restore(pools(payload["pool_commitment"]))
        if kind is Kind.PRIZES:
            return self._prizes(key, tuple(Prize(label, v) for label, v in payload["prizes"]))
        if kind in (Kind.PICK, Kind.REDRAW) and payload.get("manual"):
            return self._manual(key, payload["ticket"], None)
        if kind in (Kind.PICK, Kind.REDRAW):
            return self._pick(key)
        if kind is Kind.CLAIM and payload["action"] == "created":
            detail = payload["detail"]
            key = (detail["tombola"], int(detail["round"]))
            deadline = parse_time(detail["deadline"])
            return self._create(
                key, int(detail["pick"]), payload["card"], at=at, actor=actor, deadline=deadline
            )
        if kind is Kind.CLAIM:
            claim_id = int(payload["claim"].split()[-1])
            detail = payload["detail"]
            args = {"reveal": int(detail["reveal"])} if "reveal" in detail else {}
            if detail.get("presenter", "winner") != "winner":
                args["proxy_id"] = detail["presenter"]
            return self._move(claim_id, payload["action"], actor, at, **args)
        if kind is Kind.LETTER:
            return self._letter(int(payload["claim"].split()[-1]))
        if kind is Kind.RECEIPT_CHECK:
            return self._receipt_check(int(payload["claim"].split()[-1]), payload)
        if kind is Kind.SEED_REVEAL:
            return self._reveal(key)
        if kind is Kind.EXCEPTION and payload.get("change") == "early_close":
            return self._early_close(int(payload["request"]), at)
        if kind is Kind.EXCEPTION:
            if MISSED in payload.get("note", ""):
                self.missed_rounds.add(key[1])
            return dict(payload)
        raise ValueError(f"a draw ledger holds no {kind} records")

    # -- steps: each returns the payload it records ---------------------------------------
    def _commit(self, key: RoundKey, seed: bytes, *, late: bool) -> dict[str, Json]:
        tombola, number = key
        rnd = self.plan.round(number)
        self.draw.open_round(
            tombola, number, rnd.winners[tombola], manual=self.plan.manual, seed=seed
        )
        out = commitment_payload(self.subject, key, commit_seed(seed))
        return out | {"late": True} if late else out

    def _seat(self, card: str, board: str) -> dict[str, Json]:
        self.draw.seat(card, board, per_board=self.plan.per_board)
        return {"draw_id": self.subject, "card": card, "board": board}

    def _restore(self, pool: Pool) -> dict[str, Json]:
        self.draw.restore_pool(pool)
        return pool_payload(pool)

    def _prizes(self, key: RoundKey, prizes: tuple[Prize, ...]) -> dict[str, Json]:
        rnd = self.draw.round(*key)
        if self.reveal_sets.get(key) is not None and self.reveal_sets[key].picked:
            raise DrawError(f"draw {self.subject}: {rnd.name} reveals are being picked already")
        self.prizes[key] = prizes
        self.reveal_sets[key] = RevealSet(self.subject, f"{key[0]}-{key[1]}", prizes, rnd.seed)
        prize_rows: list[Json] = [[p.label, p.value_cents] for p in prizes]
        return round_ref(self.subject, *key) | {
            "prizes": prize_rows,
            "reveals_commitment": self.reveal_sets[key].commitment,
        }

    def _pick(self, key: RoundKey) -> dict[str, Json]:
        pick = self.draw.pick_next(*key)
        if pick is None:
            raise DrawError(f"draw {self.subject}: {key[0]} round {key[1]} has no one left to pick")
        pool = self.draw.round(*key).pool
        assert pool is not None
        return pick_payload(pool, pick)

    def _manual(self, key: RoundKey, number: int, printed: str | None) -> dict[str, Json]:
        pick = self.draw.accept_ticket(*key, number, printed_pool=printed)
        return manual_pick_payload(self.subject, key, pick)

    def _reveal(self, key: RoundKey) -> dict[str, Json]:
        if key in self.revealed:
            raise DrawError(f"draw {self.subject}: {key[0]} round {key[1]} seed already revealed")
        self.revealed.add(key)
        return seed_payload(self.subject, key, self.draw.reveal_seed(*key))

    # -- commands -------------------------------------------------------------------------
    def _entry(self, kind: Kind, payload: dict[str, Json], actor: Actor, at: dt.datetime) -> Entry:
        self.version += 1
        return Entry(at, actor_text(actor), kind, payload)

    def commit_round(self, key: RoundKey, seed: bytes, at: dt.datetime) -> list[Entry]:
        """Open a round with its (stored) seed and record the seed commitment; `late` when
        this happens after the bin closed (the daemon was down while it was open)."""
        if key in self.draw.rounds:
            return []
        late = at >= self.plan.round(key[1]).at
        out = [self._entry(Kind.COMMITMENT, self._commit(key, seed, late=late), SCHEDULER, at)]
        prizes = self.plan.round(key[1]).prizes
        if prizes:
            out.append(self._entry(Kind.PRIZES, self._prizes(key, prizes), SCHEDULER, at))
        return out

    def close_bin(
        self,
        entries: Mapping[str, Mapping[str, int]],
        seats: list[tuple[str, str]],
        actor: Actor,
        at: dt.datetime,
        *,
        early: int | None = None,
    ) -> tuple[list[Entry], list[Pool]]:
        """Seat the leaders and freeze every round's pool from the entry pool's tickets
        (tombola -> card -> tickets); returns the entries and the pools to archive.
        Before the bin's scheduled close only with `early`, an approved early-close request."""
        out: list[Entry] = []
        if at < self.plan.bin_closes and not self.closed_early and early is not None:
            out.append(self._entry(Kind.EXCEPTION, self._early_close(early, at), actor, at))
        self.check_close_time(at)
        for board, card in seats:
            if card not in self.draw.seats:
                out.append(self._entry(Kind.SEAT, self._seat(card, board), actor, at))
        pools: list[Pool] = []
        for key in self.plan.keys:
            rnd = self.draw.round(*key)
            if rnd.pool is None:
                pool = self.draw.freeze(*key, entries.get(key[0], {}))
                out.append(self._entry(Kind.POOL, pool_payload(pool), actor, at))
                pools.append(pool)
        return out, pools

    def round_drawn(self, number: int) -> bool:
        return any(self.draw.round(t, number).picks for t in self.plan.round(number).winners)

    def run_round(self, number: int, actor: Actor, at: dt.datetime) -> list[Entry]:
        """Draw the round's winners in every tombola and announce each: idempotent."""
        if self.plan.manual:
            raise DrawError(f"draw {self.subject} is manual: enter the hand-drawn ticket numbers")
        if self.round_drawn(number):
            return []
        out: list[Entry] = []
        for tombola, winners in self.plan.round(number).winners.items():
            key = (tombola, number)
            picker = self.draw.round(*key).picker
            for _ in range(winners):
                if picker is None or picker.exhausted:
                    out.append(self.exception(key, "the pool ran out of members", actor, at))
                    break
                out += self._announce(Kind.PICK, key, actor, at)
        return out

    def _announce(self, kind: Kind, key: RoundKey, actor: Actor, at: dt.datetime) -> list[Entry]:
        payload = self._pick(key)
        pick = self._entry(kind, payload, actor, at)
        created = self._create(
            key,
            payload["number"],
            payload["card"],
            at=at,
            actor=actor,
            deadline=at + self.plan.claim_time,
        )
        return [pick, self._entry(Kind.CLAIM, created, actor, at)]

    def missed(self, number: int, late: dt.timedelta, at: dt.datetime) -> list[Entry]:
        """Note that round `number` was not drawn at its time (the daemon was down longer
        than the grace), so the desk runs it. Once per round, and never for a drawn one."""
        if self.round_drawn(number) or number in self.missed_rounds:
            return []
        self.missed_rounds.add(number)
        key = (next(iter(self.plan.round(number).winners)), number)
        note = f"round {number} {MISSED}: the daemon was down for {late}; the desk runs it"
        return [self.exception(key, note, SCHEDULER, at)]

    def exception(self, key: RoundKey, note: str, actor: Actor, at: dt.datetime) -> Entry:
        where = f"{key[0]} round {key[1]}"
        return self._entry(
            Kind.EXCEPTION, round_ref(self.subject, *key) | {"note": f"{where}: {note}"}, actor, at
        )

    def accept_ticket(
        self, key: RoundKey, number: int, printed: str | None, actor: Actor, at: dt.datetime
    ) -> list[Entry]:
        """Record a hand-drawn ticket of a manual round and announce its owner."""
        payload = self._manual(key, number, printed)
        pick = self._entry(Kind.PICK, payload, actor, at)
        created = self._create(
            key,
            payload["number"],
            payload["card"],
            at=at,
            actor=actor,
            deadline=at + self.plan.claim_time,
        )
        return [pick, self._entry(Kind.CLAIM, created, actor, at)]

    def act(
        self, claim_id: int, action: str, actor: Actor, at: dt.datetime, **args: Any
    ) -> list[Entry]:
        """One claim action; a no-show announces the next pick of the round's stream, an
        issued letter adds the letter record."""
        out = [self._entry(Kind.CLAIM, self._move(claim_id, action, actor, at, **args), actor, at)]
        key = self.claim_round[claim_id][0]
        if action == "no_show" and not self.plan.manual:
            picker = self.draw.round(*key).picker
            if picker is None or picker.exhausted:
                out.append(self.exception(key, "no-show and nobody left to redraw", actor, at))
            else:
                out += self._announce(Kind.REDRAW, key, actor, at)
        if action == "issue_letter":
            out.append(self._entry(Kind.LETTER, self._letter(claim_id), actor, at))
        return out

    def check_receipt(
        self, claim_id: int, facts: Mapping[str, Json], actor: Actor, at: dt.datetime
    ) -> list[Entry]:
        """Record a receipt check on a claim (`facts`: verdict, message, receipt, reprint)."""
        return [self._entry(Kind.RECEIPT_CHECK, self._receipt_check(claim_id, facts), actor, at)]

    def load_prizes(
        self, key: RoundKey, prizes: tuple[Prize, ...], actor: Actor, at: dt.datetime
    ) -> list[Entry]:
        return [self._entry(Kind.PRIZES, self._prizes(key, prizes), actor, at)]

    def settled(self, key: RoundKey) -> bool:
        """Every pick of the round has played out its reveal or was a no-show, and the
        round has its winners (or its pool ran out): the seed may now be published."""
        claims = [c for i, c in self.claims.items() if self.claim_round[i][0] == key]
        if not claims or any(c.state not in SETTLED for c in claims):
            return False
        won = sum(c.state is not DrawClaimState.NO_SHOW for c in claims)
        picker = self.draw.round(*key).picker
        return won >= self.draw.round(*key).winners or (picker is not None and picker.exhausted)

    def reveal_seeds(self, at: dt.datetime) -> list[Entry]:
        return [
            self._entry(Kind.SEED_REVEAL, self._reveal(key), SCHEDULER, at)
            for key in self.plan.keys
            if key in self.draw.rounds and key not in self.revealed and self.settled(key)
        ]
