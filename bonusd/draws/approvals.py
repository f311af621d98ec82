"""Four-eyes changes to a draw: after its pools are frozen, a change to who may win (an
exclusion, a proxy) or an early close of its entry bin is first *requested* by one staff
member with a written reason, then *approved* (or refused) by a different one, and only
then made, in the same commit as the approval.

The ledger holds each step as its own record: `request` (the change, its reason, the
requester as the record's actor), `approval` (the decision, the approver as the record's
actor, the requester named again) and the change's own record, which carries the request
number and both names. Replaying the ledger checks all three, so an exclusion or a proxy
recorded after the freeze without its approved request stops the replay. Pure: no I/O,
no clock.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum

from bonusd.audit.chain import Json
from bonusd.draws.claims import DESK, Actor
from bonusd.draws.types import DrawError
from bonusd.errors import NotFoundError

MAX_PENDING = 50  # open requests per draw: more waits until some are decided
MIN_REASON = 10  # characters: "see note" is not a reason


class ChangeKind(StrEnum):
    EXCLUSION = "exclusion"  # a member passed over from the next pick on
    PROXY = "proxy"  # a proxy registered for a member
    EARLY_CLOSE = "early_close"  # the entry bin closed before its scheduled time

    @property
    def noun(self) -> str:
        return {"exclusion": "an exclusion", "proxy": "a proxy"}.get(self.value, "an early close")


class Decision(StrEnum):
    APPROVED = "approved"
    REFUSED = "refused"


class ApprovalError(DrawError):
    """A four-eyes request or decision was refused; the message says why (the API
    answers 409)."""


def actor_label(actor: Actor) -> str:
    return f"{actor.name} ({actor.role.value})"


@dataclass(frozen=True)
class ChangeRequest:
    """One requested change, waiting for (or past) a second staff member's decision."""

    number: int
    change: ChangeKind
    reason: str
    requested_by: Actor
    requested_at: dt.datetime
    card: str = ""  # exclusion and proxy: the member concerned
    proxy_id: str = ""  # proxy: the proxy's ID document number
    name: str = ""  # proxy: the proxy's name

    def payload(self, subject: str) -> dict[str, Json]:
        out: dict[str, Json] = {
            "draw_id": subject,
            "request": self.number,
            "change": self.change.value,
            "reason": self.reason,
        }
        if self.change is not ChangeKind.EARLY_CLOSE:
            out["card"] = self.card
        if self.change is ChangeKind.PROXY:
            out |= {"proxy_id": self.proxy_id, "name": self.name}
        return out

    def describe(self) -> str:
        what = {
            ChangeKind.EXCLUSION: f"exclude card {self.card}",
            ChangeKind.PROXY: f"register proxy {self.proxy_id} for card {self.card}",
            ChangeKind.EARLY_CLOSE: "close the entry bin before its scheduled time",
        }[self.change]
        return f"request {self.number}: {what}"


@dataclass(frozen=True)
class Approved:
    """A request approved by a second staff member: what the change's record carries."""

    request: ChangeRequest
    approved_by: Actor

    def fields(self) -> dict[str, Json]:
        return {
            "request": self.request.number,
            "requested_by": actor_label(self.request.requested_by),
            "approved_by": actor_label(self.approved_by),
        }


class Approvals:
    """The four-eyes requests of one draw, in ledger order."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.requests: dict[int, ChangeRequest] = {}
        self.decisions: dict[int, tuple[Decision, Actor]] = {}
        self.used: set[int] = set()  # approved requests whose change is made

    def pending(self) -> list[ChangeRequest]:
        return [r for n, r in self.requests.items() if n not in self.decisions]

    def request(self, wanted: ChangeRequest) -> dict[str, Json]:
        """Record a request (its number must be the next one); returns its payload."""
        if wanted.requested_by.role not in DESK:
            raise ApprovalError(f"{self.subject}: only the promotions desk requests a change")
        if len(wanted.reason.strip()) < MIN_REASON:
            raise ApprovalError(
                f"{self.subject}: a change after the freeze needs a written reason "
                f"(at least {MIN_REASON} characters)"
            )
        if wanted.number != len(self.requests) + 1:
            raise ApprovalError(f"{self.subject}: request {wanted.number} is out of sequence")
        if len(self.pending()) >= MAX_PENDING:
            raise ApprovalError(
                f"{self.subject}: {MAX_PENDING} requests are waiting for a decision; "
                "decide some first"
            )
        same = [r for r in self.pending() if _same_change(r, wanted)]
        if same:
            raise ApprovalError(f"{self.subject}: {same[0].describe()} is already waiting")
        self.requests[wanted.number] = wanted
        return wanted.payload(self.subject)

    def decide(self, number: int, decision: Decision, by: Actor) -> dict[str, Json]:
        """Record a second staff member's decision on a waiting request."""
        found = self.requests.get(number)
        if found is None:
            raise NotFoundError(f"{self.subject} has no change request {number}")
        if number in self.decisions:
            done, who = self.decisions[number]
            raise ApprovalError(
                f"{self.subject}: request {number} was {done.value} by {actor_label(who)}"
            )
        if by.role not in DESK:
            raise ApprovalError(f"{self.subject}: only the promotions desk decides a request")
        if by.name == found.requested_by.name:
            raise ApprovalError(
                f"{self.subject}: request {number} was made by {actor_label(by)}; a second "
                "staff member must decide it (four eyes)"
            )
        self.decisions[number] = (decision, by)
        return {
            "draw_id": self.subject,
            "request": number,
            "change": found.change.value,
            "decision": decision.value,
            "requested_by": actor_label(found.requested_by),
        }

    def waiting_close(self) -> int | None:
        """An approved early close whose pools are not frozen yet (a close cut short)."""
        found = [
            n
            for n, r in self.requests.items()
            if r.change is ChangeKind.EARLY_CLOSE
            and n not in self.used
            and self.decisions.get(n, (Decision.REFUSED,))[0] is Decision.APPROVED
        ]
        return found[0] if found else None

    def take(self, number: int, change: ChangeKind) -> Approved:
        """The approval a change's record rests on; each approval is used once."""
        found = self.requests.get(number)
        decided = self.decisions.get(number)
        if found is None or decided is None or decided[0] is not Decision.APPROVED:
            raise ApprovalError(f"{self.subject}: request {number} is not approved")
        if found.change is not change or number in self.used:
            raise ApprovalError(f"{self.subject}: request {number} does not approve this {change}")
        self.used.add(number)
        return Approved(found, decided[1])

    def check_record(self, number: int | None, change: ChangeKind, card: str = "") -> Approved:
        """The approval named by a replayed change record (`number` from its payload)."""
        if number is None:
            raise ApprovalError(
                f"{self.subject}: {change.noun} recorded after the pools froze names no approved "
                "request"
            )
        approved = self.take(number, change)
        if card and approved.request.card != card:
            raise ApprovalError(f"{self.subject}: request {number} concerns another card")
        return approved


def _same_change(one: ChangeRequest, other: ChangeRequest) -> bool:
    return (one.change, one.card) == (other.change, other.card)
