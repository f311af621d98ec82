"""Bounded reselection: how often, and how soon, the crew may pass a RAPS jackpot to the
next pick of its stream on its own word. Pure.

The crew reselects a jackpot when it reports that the card is not its holder's
(`not_owner`, reselected at once) or reselects an announced winner whose claim time ran
out. Unbounded, a crew member could walk down the fixed pick sequence until an accomplice
comes up. So each jackpot allows the crew `max_reselections` (the series' setting), each
at least `reselect_spacing_s` of the site clock after the current selection was
announced to the crew (someone has to walk to the device). Past the allowance the desk
approves one more at a time, with a written reason: an `override` record
(`event: reselection_approved`) naming the desk member as its actor.

Every reselection names its reason in the `detail` of its claim records; a crew one also
says which it is of how many allowed (`reselection`, `allowed`). Not counted, never
refused: the scheduler's reselection when an announced winner's claim time ran out (the
PA called the winner, who had the claim time to come forward; refusing it would leave the
jackpot with nobody to act), and the desk's own (the desk is who approves). An empty
pool's retry is a new attempt with a new pool, not a reselection.

Claim records from before reasons were required (no `reason` in their detail) replay as
they were written: a crew reselection among them counts, none is refused.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from bonusd.audit.chain import Json
from bonusd.draws.claims import (
    DESK,
    Actor,
    ClaimError,
    ClaimRole,
    RoleError,
    Transition,
    timestamp,
)
from bonusd.promotions.schema import JackpotSpec
from bonusd.raps.claim import DeclineRegister, RapsClaim, RapsClaimState

SYSTEM_REASON = "the claim time ran out after the announcement"
APPROVED = "reselection_approved"  # the `event` of the desk's approval record
REASONED = frozenset({"not_owner", "reselect"})  # the actions that name their reason
SIMPLE_MOVES = frozenset(RapsClaim.RULES) - REASONED - {"declined_register"}


class ReselectionRefused(ClaimError):
    """A crew reselection refused: too soon after the selection, or past the allowance."""


@dataclass(frozen=True)
class ReselectionApproval:
    """One more crew reselection of a jackpot, granted by the desk."""

    actor: Actor
    at: dt.datetime
    reason: str


def said(reason: str, what: str) -> str:
    """`reason` as given, or `ClaimError` when it says nothing."""
    if not reason.strip():
        raise ClaimError(f"{what}: give the reason in a few words (it is kept in the audit trail)")
    return reason


@dataclass
class Reselections:
    """The crew's reselections of one jackpot: the allowance, the spacing, the approvals."""

    jackpot_id: str
    limit: int  # the series' max_reselections
    spacing: dt.timedelta  # the series' reselect_spacing_s
    made: int = 0  # crew reselections so far
    approvals: list[ReselectionApproval] = field(default_factory=list)

    @classmethod
    def of(cls, jackpot_id: str, spec: JackpotSpec) -> Reselections:
        spacing = dt.timedelta(seconds=spec.reselect_spacing_s)
        return cls(jackpot_id, spec.max_reselections, spacing)

    @property
    def allowed(self) -> int:
        """Crew reselections allowed: the series' limit and one per desk approval."""
        return self.limit + len(self.approvals)

    @property
    def remaining(self) -> int:
        return max(0, self.allowed - self.made)

    def next_at(self, alerted_at: dt.datetime) -> dt.datetime:
        """The first instant the crew may reselect a claim alerted at `alerted_at`."""
        return alerted_at + self.spacing

    def refusal(self, alerted_at: dt.datetime, at: dt.datetime) -> str:
        """Why a crew reselection at `at` of the claim alerted at `alerted_at` is refused,
        or "" when it is allowed."""
        where = f"jackpot {self.jackpot_id}"
        if self.remaining == 0:
            return (
                f"{where}: the crew has made {self.made} of its {self.allowed} reselections; "
                "another needs the desk's approval: ask the desk to approve one more, "
                "with the reason"
            )
        ready = self.next_at(alerted_at)
        if at < ready:
            wait = math.ceil((ready - at).total_seconds())
            return (
                f"{where}: too soon to reselect. The selection was announced to the crew at "
                f"{timestamp(alerted_at)}; a reselection comes at least "
                f"{self.spacing.total_seconds():.0f} s later (time to reach the device): "
                f"try again from {timestamp(ready)}, in {wait} s"
            )
        return ""

    def check(self, alerted_at: dt.datetime, at: dt.datetime) -> None:
        refusal = self.refusal(alerted_at, at)
        if refusal:
            raise ReselectionRefused(refusal)

    def next_count(self) -> dict[str, str]:
        """The detail a crew reselection made now records: which it is, of how many."""
        return {"reselection": str(self.made + 1), "allowed": str(self.allowed)}

    def approve(self, actor: Actor, at: dt.datetime, reason: str) -> dict[str, Json]:
        """The desk grants one more crew reselection, once the crew's are used up; returns
        the payload of its record."""
        where = f"jackpot {self.jackpot_id}"
        if actor.role not in DESK:
            raise RoleError(f"{where}: only the desk approves a reselection, not {actor}")
        if self.remaining:
            raise ClaimError(
                f"{where}: the crew has {self.remaining} of its {self.allowed} reselections "
                "left; approve one more once they are used"
            )
        text = said(reason, f"{where}: approving a reselection")
        self.approvals.append(ReselectionApproval(actor, at, text))
        return {
            "draw_id": self.jackpot_id,
            "event": APPROVED,
            "reason": text,
            "made": self.made,
            "allowed": self.allowed,
        }


def claim_move(
    claim: RapsClaim,
    action: str,
    actor: Actor,
    at: dt.datetime,
    *,
    register: DeclineRegister,
    allowance: Reselections,
    reason: str | None,
) -> Transition:
    """Take `action` on `claim` as `actor`. A card not its holder's and a reselection name
    their reason; the crew's are spaced and counted against `allowance`. `reason` None:
    a record from before reasons were required, replayed as it was written."""
    if action in SIMPLE_MOVES:
        move: Transition = getattr(claim, action)(actor, at)
        return move
    if action == "declined_register":
        return claim.declined_register(actor, at, register)
    if action not in REASONED:
        known = ", ".join(sorted(RapsClaim.RULES))
        raise ClaimError(f"{claim.subject}: there is no action {action!r} (one of {known})")
    claim.check(action, actor, at, register)
    crew = actor.role is ClaimRole.CREW
    if reason is None:  # as written before reasons were required: counted, never refused
        if action == "not_owner":
            return claim.not_owner(actor, at)
        move = claim.reselect(actor, at, register)
        if crew:
            allowance.made += 1
        return move
    if actor.role is ClaimRole.SYSTEM:
        text = SYSTEM_REASON
    else:
        text = said(reason, f"{claim.subject}: {action.replace('_', ' ')}")
    if crew and (action == "not_owner" or claim.state is RapsClaimState.ANNOUNCED):
        allowance.check(claim.history[0].at, at)  # from not_owner: checked at not_owner
    if action == "not_owner":
        return claim.not_owner(actor, at, reason=text)
    detail = {"reason": text} | (allowance.next_count() if crew else {})
    move = claim.reselect(actor, at, register, **detail)
    if crew:
        allowance.made += 1
    return move
