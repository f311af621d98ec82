"""A RAPS jackpot winner's claim at the device or on stage, and the session's decline
register (members who will not be present yet keep any prize). Re-exported by `raps`.

`RapsClaim` is a `claims.Machine`: the crew goes to the device; if the player has left,
an announcement gives 90 s to present; a member who signed the `DeclineRegister` before
the session still wins; otherwise the caller reselects.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import ClassVar

from bonusd.draws.claims import (
    CLAIM_TIME,
    CREW,
    DESK,
    SYSTEM,
    Actor,
    Machine,
    RegisterError,
    RoleError,
    Rule,
    Timer,
    Transition,
    aware,
    make_rule,
    timestamp,
)


class DeclineRegister:
    """A RAPS session's register of members who will not be present yet keep any prize;
    the desk signs members in from `opens_at` until the session starts."""

    def __init__(self, session_id: str, *, opens_at: dt.datetime, starts_at: dt.datetime) -> None:
        self.session_id = session_id
        self.opens_at, self.starts_at = aware(opens_at), aware(starts_at)
        self.signed: dict[str, Transition] = {}

    def sign(self, card: str, actor: Actor, at: dt.datetime) -> Transition:
        where = f"session {self.session_id} decline register"
        if actor.role not in DESK:
            raise RoleError(f"{where}: only the desk takes signatures, not {actor}")
        if not self.opens_at <= aware(at) < self.starts_at:
            raise RegisterError(
                f"{where}: open from {timestamp(self.opens_at)} until the session starts at "
                f"{timestamp(self.starts_at)}; not at {timestamp(at)}"
            )
        if card in self.signed:
            raise RegisterError(f"{where}: card {card} has signed already")
        self.signed[card] = Transition(where, "sign", "", "signed", actor, at, {"card": card})
        return self.signed[card]

    def has_declined(self, card: str) -> bool:
        return card in self.signed


class RapsClaimState(StrEnum):
    ALERTED = "alerted"
    CREW_AT_DEVICE = "crew_at_device"
    VERIFIED_AT_DEVICE = "verified_at_device"
    NOT_AT_DEVICE = "not_at_device"
    NOT_OWNER = "not_owner"
    ANNOUNCED = "announced"
    PRESENTED = "presented"
    VERIFIED = "verified"
    DECLINED_REGISTER = "declined_register"
    RESELECTED = "reselected"


_R = RapsClaimState
_ANY = CREW | DESK
WON_STATES = frozenset({_R.VERIFIED_AT_DEVICE, _R.VERIFIED, _R.DECLINED_REGISTER})


class RapsClaim(Machine):
    """A RAPS winner's claim: alerted -> crew_at_device -> verified_at_device; or
    not_at_device -> announced -> presented -> verified, declined_register (signed before
    the session: still wins) or reselected. A card not its holder's is reselected too."""

    RULES: ClassVar[dict[str, Rule]] = {
        "crew_arrived": make_rule(_R.ALERTED, _R.CREW_AT_DEVICE, CREW, "reached by the crew"),
        "verify_at_device": make_rule(_R.CREW_AT_DEVICE, _R.VERIFIED_AT_DEVICE, CREW, "verified"),
        "not_at_device": make_rule(_R.CREW_AT_DEVICE, _R.NOT_AT_DEVICE, CREW, "found gone"),
        "not_owner": make_rule(
            (_R.CREW_AT_DEVICE, _R.PRESENTED), _R.NOT_OWNER, CREW, "refused as not the owner"
        ),
        "announce": make_rule(_R.NOT_AT_DEVICE, _R.ANNOUNCED, _ANY, "announced"),
        "present": make_rule(_R.ANNOUNCED, _R.PRESENTED, CREW, "presented", "by"),
        "verify": make_rule(_R.PRESENTED, _R.VERIFIED, CREW, "verified"),
        "declined_register": make_rule(
            _R.ANNOUNCED, _R.DECLINED_REGISTER, _ANY | SYSTEM, "settled by the decline register"
        ),
        "reselect": make_rule(
            (_R.ANNOUNCED, _R.NOT_OWNER), _R.RESELECTED, _ANY | SYSTEM, "reselected", "after"
        ),
    }

    def __init__(
        self,
        claim_id: int,
        *,
        jackpot_id: str,
        card: str,
        device: str,
        area: str,
        bank: str,
        alerted_at: dt.datetime,
        actor: Actor,
        claim_time: dt.timedelta = CLAIM_TIME,
        seat: str = "",
    ) -> None:
        super().__init__(f"RAPS claim {claim_id}", _R.ALERTED, actor, alerted_at)
        self.claim_id, self.jackpot_id, self.card = claim_id, jackpot_id, card
        self.device, self.area, self.bank, self.seat = device, area, bank, seat  # seat: tables
        self.claim_time = claim_time
        self.deadline: dt.datetime | None = None

    def deadline_now(self) -> dt.datetime | None:
        return self.deadline if self.state is _R.ANNOUNCED else None

    @property
    def won(self) -> bool:
        """The prize is theirs: verified at the device or on stage, or registered."""
        return self.state in WON_STATES

    def crew_arrived(self, actor: Actor, at: dt.datetime) -> Transition:
        return self._move("crew_arrived", actor, at, device=self.device)

    def verify_at_device(self, actor: Actor, at: dt.datetime) -> Transition:
        """The player at the device owns the selected card."""
        return self._move("verify_at_device", actor, at)

    def not_at_device(self, actor: Actor, at: dt.datetime) -> Transition:
        return self._move("not_at_device", actor, at)

    def check(self, action: str, actor: Actor, at: dt.datetime, register: DeclineRegister) -> None:
        """Raise the `ClaimError` that `action` by `actor` at `at` would meet (its state,
        role, time or the decline register), if any; nothing is changed."""
        self._check(action, actor, at)
        if action == "reselect":
            self._not_registered(register)

    def _not_registered(self, register: DeclineRegister) -> None:
        if self.state is _R.ANNOUNCED and register.has_declined(self.card):
            raise RegisterError(
                f"{self.subject}: card {self.card} signed the decline register; it still wins"
            )

    def not_owner(self, actor: Actor, at: dt.datetime, *, reason: str = "") -> Transition:
        """The player found is not the owner of the selected card: reselect next."""
        return self._move("not_owner", actor, at, **({"reason": reason} if reason else {}))

    def announce(self, actor: Actor, at: dt.datetime) -> Transition:
        """The PA announcement; the claim time starts now."""
        move = self._move("announce", actor, at)
        self.deadline = at + self.claim_time
        return move

    def present(self, actor: Actor, at: dt.datetime) -> Transition:
        """The winner presents at the draw place within the claim time."""
        return self._move("present", actor, at)

    def verify(self, actor: Actor, at: dt.datetime) -> Transition:
        """The player presenting owns the selected card."""
        return self._move("verify", actor, at)

    def declined_register(
        self, actor: Actor, at: dt.datetime, register: DeclineRegister
    ) -> Transition:
        """The absent winner signed the session's decline register: the prize stands."""
        self._check("declined_register", actor, at)
        if not register.has_declined(self.card):
            raise RegisterError(f"{self.subject}: card {self.card} is not in the decline register")
        return self._move("declined_register", actor, at)

    def reselect(
        self, actor: Actor, at: dt.datetime, register: DeclineRegister, **detail: str
    ) -> Transition:
        """Pass the jackpot to the next pick: once the claim time is up, unless registered
        (`detail`: the reason, and for the crew's, its count; `bonusd.raps.reselection`)."""
        self.check("reselect", actor, at, register)
        return self._move("reselect", actor, at, **detail)

    def timers(self) -> list[Timer]:
        if self.state is _R.ANNOUNCED and self.deadline is not None:
            return [Timer(self.subject, "reselect_or_register", self.deadline)]
        return []
