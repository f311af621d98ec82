"""The claim side of a draw's book: each winner's claim from announcement to prize letter,
the draw's proxy register, and the claim timers. A part of `DrawBook` (its base class),
apart from the rounds and picks. Pure: no I/O, no clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bonusd.audit.chain import Json, utc_text
from bonusd.draws.claims import Actor, ClaimError, DrawClaim, LetterBook, ProxyRegister
from bonusd.draws.evidence import claim_payload
from bonusd.draws.plan import DrawPlan
from bonusd.draws.rounds import RevealSet, RoundKey


class ClaimSteps:
    """Claims, proxies and letters of one draw (the state `DrawBook` sets up)."""

    plan: DrawPlan
    subject: str
    claims: dict[int, DrawClaim]
    claim_round: dict[int, tuple[RoundKey, int]]  # claim id -> (round, pick number)
    proxies: ProxyRegister
    reveal_sets: dict[RoundKey, RevealSet]
    letters: LetterBook

    def claim(self, claim_id: int) -> DrawClaim:
        try:
            return self.claims[claim_id]
        except KeyError:
            raise ClaimError(f"draw {self.subject} has no claim {claim_id}") from None

    def _create(
        self,
        key: RoundKey,
        pick: int,
        card: str,
        *,
        at: dt.datetime,
        actor: Actor,
        deadline: dt.datetime,
    ) -> dict[str, Json]:
        claim_id = len(self.claims) + 1
        claim = DrawClaim(
            claim_id,
            draw_id=self.subject,
            card=card,
            announced_at=at,
            actor=actor,
            draw_at=self.plan.rounds[0].at,
            claim_time=deadline - at,
        )
        self.claims[claim_id] = claim
        self.claim_round[claim_id] = (key, pick)
        move = claim.history[0]
        detail = {"tombola": key[0], "round": str(key[1]), "pick": str(pick)}
        detail["deadline"] = utc_text(deadline)
        return claim_payload(self.subject, card, replace(move, detail=detail))

    def _move(
        self, claim_id: int, action: str, actor: Actor, at: dt.datetime, **args: Any
    ) -> dict[str, Json]:
        claim = self.claim(claim_id)
        if action == "present":
            move = claim.present(actor, at, proxy_id=args.get("proxy_id"), proxies=self.proxies)
        elif action == "verify":
            move = claim.verify(actor, at, id_ok=True, receipt_ok=True)
        elif action == "pick_reveal":
            key = self.claim_round[claim_id][0]
            if key not in self.reveal_sets:
                raise ClaimError(
                    f"{claim.subject}: no prizes are loaded for {key[0]} round {key[1]}; "
                    "the desk loads them first"
                )
            move = claim.pick_reveal(actor, at, self.reveal_sets[key], args["reveal"])
        elif action == "issue_letter":
            claim.issue_letter(actor, at, self.letters)
            move = claim.history[-1]
        elif action in ("no_show", "redeem", "lapse"):
            move = getattr(claim, action)(actor, at)
        else:
            raise ClaimError(f"{claim.subject}: there is no claim action {action!r}")
        return claim_payload(self.subject, claim.card, move)

    def _receipt_check(self, claim_id: int, facts: Mapping[str, Json]) -> dict[str, Json]:
        """A receipt presented at a claim and what its check found (`bonusd.kiosk.receipt`):
        recorded on the claim, changing nothing of it (the crew decides with it in hand)."""
        claim = self.claim(claim_id)
        verdict = facts["verdict"]
        if not isinstance(verdict, str) or not verdict:
            raise ClaimError(f"{claim.subject}: a receipt check without its verdict")
        return {
            "draw_id": self.subject,
            "claim": claim.subject,
            "card": claim.card,
            "verdict": verdict,
            "message": facts.get("message", ""),
            "receipt": facts.get("receipt"),
            "reprint": facts.get("reprint"),
        }

    def _letter(self, claim_id: int) -> dict[str, Json]:
        claim = self.claim(claim_id)
        letter = claim.letter
        if letter is None:
            raise ClaimError(f"{claim.subject} has no prize letter")
        return {
            "draw_id": self.subject,
            "claim": claim.subject,
            "number": letter.number,
            "winner": letter.winner,
            "presenter": claim.presenter or claim.card,
            "prize": letter.prize.label,
            "value_cents": letter.prize.value_cents,
            "issued_at": utc_text(letter.issued_at),
            "expires_at": utc_text(letter.expires_at),
        }

    def _proxy(
        self, card: str, proxy_id: str, name: str, actor: Actor, at: dt.datetime
    ) -> dict[str, Json]:
        self.proxies.register(card, proxy_id, actor, at, name=name)
        return {"draw_id": self.subject, "card": card, "proxy_id": proxy_id, "name": name}

    # -- timers ---------------------------------------------------------------------------
    def next_deadline(self) -> dt.datetime | None:
        deadlines = [t.deadline for c in self.claims.values() for t in c.timers()]
        return min(deadlines, default=None)

    def due(self, now: dt.datetime) -> list[tuple[int, str]]:
        """(claim id, action) of every expired timer, oldest first."""
        found = [
            (t.deadline, cid, t.action)
            for cid, c in self.claims.items()
            for t in c.timers()
            if t.deadline < now
        ]
        return [(cid, action) for _, cid, action in sorted(found)]
