"""The claim workflow as explicit state machines: draw winners and RAPS winners.

Each machine has a table of rules: action -> (states it may start from, the state it
leads to, the roles allowed, how to say it cannot happen, and whether it must come by or
after the machine's deadline). Every call checks its rule, the actor's role and the time
before any effect, then records a `Transition` (actor, instant, detail) for the audit
log; a refused call raises a `ClaimError` an operator can read ("claim 7 is no_show; it
cannot be verified"). Deadlines are instants kept as data, never sleeps: `due(now,
items)` lists the timers that have run out, for the scheduler to act on.

Here: the draw winner's claim, a draw's proxy register, prize letters. The RAPS winner's
claim and a session's decline register are in `bonusd.raps.rules`, a round's sealed reveals in
`bonusd.draws.rounds`; they use the machinery defined here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Literal, NamedTuple, Protocol

from bonusd.errors import BonusdError

CLAIM_TIME = dt.timedelta(seconds=90)
PROXY_CUTOFF = dt.timedelta(minutes=15)
LETTER_VALIDITY = dt.timedelta(days=15)


class ClaimError(BonusdError):
    """A claim step was refused; the message says which and why."""


class TransitionError(ClaimError):
    """The action is not possible from the claim's current state."""


class RoleError(ClaimError):
    """The actor's role may not perform this action."""


class DeadlineError(ClaimError):
    """The action came too late, or too early, for its deadline."""


class RegisterError(ClaimError):
    """A proxy or decline-register entry was refused, or does not cover this claim."""


class RevealError(ClaimError):
    """A sealed reveal cannot be picked (no such reveal, or already picked)."""


class ClaimRole(StrEnum):
    CREW = "crew"
    DESK = "desk"
    ADMIN = "admin"  # an administrator, who may do whatever the desk does
    SYSTEM = "system"  # the scheduler acting on an expired timer


@dataclass(frozen=True)
class Actor:
    name: str
    role: ClaimRole

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


@dataclass(frozen=True)
class Transition:
    subject: str
    action: str
    before: str
    after: str
    actor: Actor
    at: dt.datetime
    detail: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Timer:
    """A deadline; once it has passed, `action` is what the scheduler should do."""

    subject: str
    action: str
    deadline: dt.datetime


class Timed(Protocol):
    def timers(self) -> list[Timer]: ...


def due(now: dt.datetime, items: Iterable[Timed]) -> list[Timer]:
    """The timers of `items` that have expired at `now` (deadline < now), oldest first."""
    expired = [t for item in items for t in item.timers() if t.deadline < now]
    return sorted(expired, key=lambda t: t.deadline)


def aware(at: dt.datetime) -> dt.datetime:
    if at.tzinfo is None:
        raise ValueError(f"times must be timezone-aware, got {at.isoformat()}")
    return at


def timestamp(at: dt.datetime) -> str:
    return at.isoformat(timespec="seconds")


Timing = Literal["", "by", "after"]
Roles = frozenset[ClaimRole]


class Rule(NamedTuple):
    starts: frozenset[str]
    after: str
    roles: Roles
    phrase: str  # "<subject> is <state>; it cannot be <phrase>"
    timing: Timing = ""  # must happen by, or after, the machine's current deadline


def make_rule(
    starts: str | tuple[str, ...], after: str, roles: Roles, phrase: str, timing: Timing = ""
) -> Rule:
    return Rule(
        frozenset((starts,) if isinstance(starts, str) else starts), after, roles, phrase, timing
    )


CREW, DESK, SYSTEM = (
    frozenset({ClaimRole.CREW}),
    frozenset({ClaimRole.DESK, ClaimRole.ADMIN}),  # the desk's steps: an admin's too
    frozenset({ClaimRole.SYSTEM}),
)


class Machine:
    """A state machine whose moves are checked against `RULES` and kept in `history`."""

    RULES: ClassVar[dict[str, Rule]]

    def __init__(self, subject: str, state: str, actor: Actor, at: dt.datetime) -> None:
        self.subject, self.state = subject, state
        self.history = [Transition(subject, "created", "", state, actor, aware(at))]

    def deadline_now(self) -> dt.datetime | None:
        """The deadline that `by`/`after` rules are measured against in this state."""
        return None

    def _check(self, action: str, actor: Actor, at: dt.datetime) -> Rule:
        rule, who = self.RULES[action], self.subject
        if self.state not in rule.starts:
            raise TransitionError(f"{who} is {self.state}; it cannot be {rule.phrase}")
        if actor.role not in rule.roles:
            allowed = " or ".join(sorted(rule.roles - {ClaimRole.ADMIN}))  # admin: as desk
            raise RoleError(f"{who}: {actor} may not {action}; only {allowed} can")
        if aware(at) < self.history[-1].at:
            raise DeadlineError(f"{who}: {timestamp(at)} is before its last step")
        deadline = self.deadline_now()
        if deadline is not None and rule.timing == "by" and at > deadline:
            late = (at - deadline).total_seconds()
            raise DeadlineError(
                f"{who} is too late to be {rule.phrase}: {late:.0f} s after {timestamp(deadline)}"
            )
        if deadline is not None and rule.timing == "after" and at <= deadline:
            raise DeadlineError(f"{who} cannot be {rule.phrase} until after {timestamp(deadline)}")
        return rule

    def _move(self, action: str, actor: Actor, at: dt.datetime, **detail: str) -> Transition:
        after = self._check(action, actor, at).after
        move = Transition(self.subject, action, self.state, after, actor, at, detail)
        self.state = after
        self.history.append(move)
        return move


@dataclass(frozen=True)
class Proxy:
    """A person registered to present for `participant` at one draw; never the payee."""

    participant: str
    proxy_id: str  # the proxy's identity document number
    name: str
    registered_by: Actor
    registered_at: dt.datetime


class ProxyRegister:
    """A draw's proxies: one per participant, each proxy for one participant only,
    registered by the desk from `opens_at` until `cutoff` before the draw."""

    def __init__(
        self,
        draw_id: str,
        *,
        opens_at: dt.datetime,
        draw_at: dt.datetime,
        cutoff: dt.timedelta = PROXY_CUTOFF,
    ) -> None:
        self.draw_id, self.cutoff = draw_id, cutoff
        self.opens_at, self.closes_at = aware(opens_at), aware(draw_at) - cutoff
        self.proxies: dict[str, Proxy] = {}

    def register(
        self, participant: str, proxy_id: str, actor: Actor, at: dt.datetime, *, name: str = ""
    ) -> Proxy:
        where = f"draw {self.draw_id} proxy register"
        if actor.role not in DESK:
            raise RoleError(f"{where}: only the desk records proxies, not {actor}")
        if not self.opens_at <= aware(at) < self.closes_at:
            minutes = self.cutoff.total_seconds() / 60
            raise RegisterError(
                f"{where}: forms are taken from {timestamp(self.opens_at)} until "
                f"{timestamp(self.closes_at)}, {minutes:.0f} minutes before the draw; "
                f"not at {timestamp(at)}"
            )
        if participant in self.proxies:
            raise RegisterError(f"{where}: card {participant} already has a proxy")
        for proxy in self.proxies.values():
            if proxy.proxy_id == proxy_id:
                raise RegisterError(
                    f"{where}: proxy {proxy_id} already represents card {proxy.participant}; "
                    "a proxy may represent only one participant"
                )
        self.proxies[participant] = Proxy(participant, proxy_id, name, actor, at)
        return self.proxies[participant]

    def proxy_for(self, participant: str) -> Proxy | None:
        return self.proxies.get(participant)


@dataclass(frozen=True)
class Prize:
    label: str
    value_cents: int


class Reveals(Protocol):
    """A round's sealed reveals (`draws.RevealSet`)."""

    def pick(self, number: int, card: str) -> Prize: ...


@dataclass(frozen=True)
class PrizeLetter:
    """Always in the winner's name; redeemable at the cash desk until `expires_at`."""

    number: str
    winner: str
    draw_id: str
    prize: Prize
    issued_at: dt.datetime
    expires_at: dt.datetime


class LetterBook:
    """Numbers prize letters uniquely: `prefix-000001`, `prefix-000002`, ..."""

    def __init__(self, prefix: str, *, validity: dt.timedelta = LETTER_VALIDITY) -> None:
        self.prefix, self.validity = prefix, validity
        self.letters: dict[str, PrizeLetter] = {}

    def issue(
        self, *, winner: str, draw_id: str, prize: Prize, draw_at: dt.datetime, at: dt.datetime
    ) -> PrizeLetter:
        number = f"{self.prefix}-{len(self.letters) + 1:06d}"
        letter = PrizeLetter(number, winner, draw_id, prize, at, draw_at + self.validity)
        self.letters[number] = letter
        return letter


class DrawClaimState(StrEnum):
    ANNOUNCED = "announced"
    PRESENTED = "presented"
    VERIFIED = "verified"
    REVEAL_PICKED = "reveal_picked"
    LETTER_ISSUED = "letter_issued"
    REDEEMED = "redeemed"
    LAPSED = "lapsed"
    NO_SHOW = "no_show"


_D = DrawClaimState


class DrawClaim(Machine):
    """A draw winner's claim: announced -> presented (within the claim time, in person or
    by the registered proxy) -> verified -> reveal picked -> letter issued -> redeemed
    (within the letter's validity) or lapsed; or announced -> no_show once time is up."""

    RULES: ClassVar[dict[str, Rule]] = {
        "present": make_rule(_D.ANNOUNCED, _D.PRESENTED, CREW, "presented", "by"),
        "no_show": make_rule(_D.ANNOUNCED, _D.NO_SHOW, CREW | SYSTEM, "a no-show", "after"),
        "verify": make_rule(_D.PRESENTED, _D.VERIFIED, CREW, "verified"),
        "pick_reveal": make_rule(_D.VERIFIED, _D.REVEAL_PICKED, CREW, "given a reveal"),
        "issue_letter": make_rule(_D.REVEAL_PICKED, _D.LETTER_ISSUED, DESK, "issued a letter"),
        "redeem": make_rule(_D.LETTER_ISSUED, _D.REDEEMED, DESK, "redeemed", "by"),
        "lapse": make_rule(_D.LETTER_ISSUED, _D.LAPSED, DESK | SYSTEM, "lapsed", "after"),
    }

    def __init__(
        self,
        claim_id: int,
        *,
        draw_id: str,
        card: str,
        announced_at: dt.datetime,
        actor: Actor,
        draw_at: dt.datetime | None = None,
        claim_time: dt.timedelta = CLAIM_TIME,
    ) -> None:
        super().__init__(f"claim {claim_id}", _D.ANNOUNCED, actor, announced_at)
        self.claim_id, self.draw_id, self.card = claim_id, draw_id, card
        self.deadline = announced_at + claim_time
        self.draw_at = draw_at or announced_at
        self.presenter: str | None = None
        self.prize: Prize | None = None
        self.letter: PrizeLetter | None = None

    def deadline_now(self) -> dt.datetime | None:
        return self.letter.expires_at if self.letter is not None else self.deadline

    def present(
        self,
        actor: Actor,
        at: dt.datetime,
        *,
        proxy_id: str | None = None,
        proxies: ProxyRegister | None = None,
    ) -> Transition:
        """The winner, or the winner's registered proxy, presents within the claim time."""
        self._check("present", actor, at)
        if proxy_id is not None:
            proxy = proxies.proxy_for(self.card) if proxies is not None else None
            if proxy is None or proxy.proxy_id != proxy_id:
                raise RegisterError(
                    f"{self.subject}: {proxy_id} is not the registered proxy of card {self.card}"
                )
        self.presenter = proxy_id or self.card
        return self._move("present", actor, at, presenter=proxy_id or "winner")

    def verify(self, actor: Actor, at: dt.datetime, *, id_ok: bool, receipt_ok: bool) -> Transition:
        """The crew saw a valid identity document and the winner's ticket receipt."""
        self._check("verify", actor, at)
        missing = [what for what, ok in (("ID", id_ok), ("receipt", receipt_ok)) if not ok]
        if missing:
            raise ClaimError(f"{self.subject} cannot be verified without {' and '.join(missing)}")
        return self._move("verify", actor, at)

    def pick_reveal(
        self, actor: Actor, at: dt.datetime, reveals: Reveals, number: int
    ) -> Transition:
        """The winner on stage picks sealed reveal `number`, which decides the prize."""
        self._check("pick_reveal", actor, at)
        self.prize = reveals.pick(number, self.card)
        return self._move("pick_reveal", actor, at, reveal=str(number), prize=self.prize.label)

    def issue_letter(self, actor: Actor, at: dt.datetime, book: LetterBook) -> PrizeLetter:
        """The prize letter, in the winner's name even when a proxy presented."""
        self._check("issue_letter", actor, at)
        assert self.prize is not None  # reveal_picked always set it
        letter = book.issue(
            winner=self.card, draw_id=self.draw_id, prize=self.prize, draw_at=self.draw_at, at=at
        )
        self._move("issue_letter", actor, at, letter=letter.number)
        self.letter = letter
        return letter

    def no_show(self, actor: Actor, at: dt.datetime) -> Transition:
        """Nobody presented in time; the caller announces the next pick."""
        return self._move("no_show", actor, at)

    def redeem(self, actor: Actor, at: dt.datetime) -> Transition:
        """The cash desk pays the letter: once, and within its validity."""
        return self._move("redeem", actor, at, letter=self.letter.number if self.letter else "")

    def lapse(self, actor: Actor, at: dt.datetime) -> Transition:
        return self._move("lapse", actor, at, letter=self.letter.number if self.letter else "")

    def timers(self) -> list[Timer]:
        if self.state is _D.ANNOUNCED:
            return [Timer(self.subject, "no_show", self.deadline)]
        if self.state is _D.LETTER_ISSUED and self.letter is not None:
            return [Timer(self.subject, "lapse", self.letter.expires_at)]
        return []
