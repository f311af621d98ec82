"""RAPS bonus jackpots, the pure core: who is eligible at a jackpot instant, a verifiable
pick among them, the winner's claim and the session's decline register.

At each jackpot time RAPS picks one member uniformly among those who, at that instant,
are at an EGM or a table in the session's areas, had rated play within the active window
(a parked card does not count), spent at least the minimum on the gaming day, hold an
eligible tier, are not excluded and have not already won where the rules say so. Every
other player on the snapshot gets the reasons they are not eligible, for the audit.

The pick uses the draws' scheme (`bonusd.fairness`): the seed is committed before the
instant, the pool (one ticket per eligible card) at the instant, and a reselection is
the next pick of the same stream. An empty pool is a result, not an error: the caller
records it and retries at the next opportunity.

`RapsClaim` is a `claims.Machine`: the crew goes to the device; if the player has left,
an announcement gives 90 s to present; a member who signed the `DeclineRegister` before
the session still wins; otherwise the caller reselects.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from bonusd.claims import (
    CLAIM_TIME,
    CREW,
    DESK,
    SYSTEM,
    Actor,
    Machine,
    RegisterError,
    Role,
    RoleError,
    Rule,
    Timer,
    Transition,
    aware,
    make_rule,
    timestamp,
)
from bonusd.errors import BonusdError
from bonusd.fairness import Pick, Picker, Pool, SeedSource, SkipReason, commit_seed, new_seed

RAPS_TOMBOLA = "raps"


class RapsError(BonusdError):
    """A jackpot step was asked for out of order."""


class PlayKind(StrEnum):
    EGM = "egm"
    TABLE = "table"


class Reason(StrEnum):
    """Why a player on the floor is not in a jackpot's pool."""

    EXCLUDED = "excluded"
    OUTSIDE_AREAS = "outside_session_areas"
    NOT_ACTIVE = "no_play_in_active_window"
    BELOW_MIN_SPEND = "below_min_spend"
    TIER = "tier_not_eligible"
    PREVIOUS_WINNER = "previous_winner"
    DUPLICATE = "card_active_elsewhere"


@dataclass(frozen=True)
class FloorPlayer:
    """One active player on the floor snapshot at the jackpot instant."""

    card: str
    kind: PlayKind
    area: str
    device: str
    bank: str
    seat: int | None
    last_play: dt.datetime
    spend_cents: int  # coin-in on the gaming day
    tier: str
    excluded: bool = False

    @property
    def location(self) -> str:
        """Where the crew finds the player: device (and seat), bank, area."""
        seat = f" seat {self.seat}" if self.seat is not None else ""
        return f"{self.device}{seat}, bank {self.bank}, {self.area}"


@dataclass(frozen=True)
class RapsRules:
    """A session's eligibility rules; the defaults are the Festa Fortuna rulings."""

    areas: frozenset[str] = frozenset({"main", "smoking"})
    min_spend_cents: int = 10_000
    active_window: dt.timedelta = dt.timedelta(minutes=5)
    tiers: frozenset[str] | None = None  # None: every tier


@dataclass(frozen=True)
class Ineligible:
    player: FloorPlayer
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class Eligibility:
    """The eligible players (one per card, in card order) and why the others are not."""

    at: dt.datetime
    eligible: tuple[FloorPlayer, ...]
    ineligible: tuple[Ineligible, ...]

    def player(self, card: str) -> FloorPlayer:
        for p in self.eligible:
            if p.card == card:
                return p
        raise KeyError(card)


def _reasons(
    p: FloorPlayer, at: dt.datetime, rules: RapsRules, previous_winners: Collection[str]
) -> tuple[Reason, ...]:
    found: list[Reason] = []
    if p.excluded:
        found.append(Reason.EXCLUDED)
    if p.area not in rules.areas:
        found.append(Reason.OUTSIDE_AREAS)
    if at - p.last_play > rules.active_window:
        found.append(Reason.NOT_ACTIVE)
    if p.spend_cents < rules.min_spend_cents:
        found.append(Reason.BELOW_MIN_SPEND)
    if rules.tiers is not None and p.tier not in rules.tiers:
        found.append(Reason.TIER)
    if p.card in previous_winners:
        found.append(Reason.PREVIOUS_WINNER)
    return tuple(found)


def eligibility(
    snapshot: Iterable[FloorPlayer],
    *,
    at: dt.datetime,
    rules: RapsRules,
    previous_winners: Collection[str] = (),
) -> Eligibility:
    """Split the floor snapshot at instant `at` into the eligible pool and the rest.

    A card seen at several places counts once, at its most recent play.
    """
    if at.tzinfo is None:
        raise ValueError("the jackpot instant must be timezone-aware")
    best: dict[str, FloorPlayer] = {}
    ineligible: list[Ineligible] = []
    for p in snapshot:
        reasons = _reasons(p, at, rules, previous_winners)
        if reasons:
            ineligible.append(Ineligible(p, reasons))
            continue
        other = best.get(p.card)
        if other is not None:
            keep, drop = (p, other) if p.last_play > other.last_play else (other, p)
            best[p.card] = keep
            ineligible.append(Ineligible(drop, (Reason.DUPLICATE,)))
        else:
            best[p.card] = p
    eligible = tuple(best[c] for c in sorted(best))
    return Eligibility(at, eligible, tuple(ineligible))


@dataclass(frozen=True)
class RapsPick:
    """A selected (or reselected) jackpot winner and where the crew will find them."""

    jackpot_id: str
    player: FloorPlayer
    pick: Pick


@dataclass(frozen=True)
class EmptyPool:
    """Nobody was eligible (or everyone eligible was already selected)."""

    jackpot_id: str
    at: dt.datetime
    eligible: int
    ineligible: int

    def __str__(self) -> str:
        return (
            f"jackpot {self.jackpot_id}: no eligible player left at {self.at.isoformat()} "
            f"({self.eligible} eligible, {self.ineligible} not eligible); record and retry"
        )


class Jackpot:
    """One RAPS jackpot: seed committed ahead, pool frozen at the instant, then picks."""

    def __init__(
        self,
        jackpot_id: str,
        *,
        seed_source: SeedSource = secrets.token_bytes,
        seed: bytes | None = None,
    ) -> None:
        self.jackpot_id = jackpot_id
        self._seed = seed if seed is not None else new_seed(seed_source)
        self.seed_commitment = commit_seed(self._seed)
        self.eligibility: Eligibility | None = None
        self.pool: Pool | None = None
        self._picker: Picker | None = None

    def select(self, elig: Eligibility) -> RapsPick | EmptyPool:
        """Freeze the pool from `elig` and pick the winner."""
        if self.pool is not None:
            raise RapsError(f"jackpot {self.jackpot_id} already selected; use reselect")
        self.eligibility = elig
        entries = {p.card: 1 for p in elig.eligible}
        self.pool = Pool.freeze(self.jackpot_id, RAPS_TOMBOLA, entries)
        self._picker = Picker(self.pool, self._seed)
        return self._next()

    def restore(self, pool: Pool) -> None:
        """Install the pool read back from its archived file (rebuilding after a restart);
        picks then come from `next_pick`, checked against the records."""
        if self.pool is not None:
            raise RapsError(f"jackpot {self.jackpot_id} already has its pool")
        self.pool = pool
        self._picker = Picker(pool, self._seed)

    def next_pick(self) -> Pick | None:
        if self._picker is None:
            raise RapsError(f"jackpot {self.jackpot_id} has no pool yet")
        return self._picker.next()

    def reselect(self) -> RapsPick | EmptyPool:
        """The next pick of the same stream, after a no-show or a card not its owner's."""
        if self._picker is None:
            raise RapsError(f"jackpot {self.jackpot_id} has no selection to redo yet")
        return self._next()

    def exclude(self, card: str) -> None:
        """An exclusion arrived after the pool froze: pass the card over from now on."""
        if self._picker is not None:
            self._picker.bar(card, SkipReason.EXCLUDED)

    @property
    def picks(self) -> list[Pick]:
        return self._picker.picks if self._picker is not None else []

    def reveal_seed(self) -> bytes:
        """The seed, to publish once the jackpot is settled (it fixes every reselection)."""
        if self.pool is None:
            raise RapsError(f"jackpot {self.jackpot_id}: the seed stays secret until selection")
        return self._seed

    def _next(self) -> RapsPick | EmptyPool:
        assert self._picker is not None
        assert self.eligibility is not None
        pick = self._picker.next()
        elig = self.eligibility
        if pick is None:
            return EmptyPool(self.jackpot_id, elig.at, len(elig.eligible), len(elig.ineligible))
        return RapsPick(self.jackpot_id, elig.player(pick.card), pick)


class DeclineRegister:
    """A RAPS session's register of members who will not be present yet keep any prize;
    the desk signs members in from `opens_at` until the session starts."""

    def __init__(self, session_id: str, *, opens_at: dt.datetime, starts_at: dt.datetime) -> None:
        self.session_id = session_id
        self.opens_at, self.starts_at = aware(opens_at), aware(starts_at)
        self.signed: dict[str, Transition] = {}

    def sign(self, card: str, actor: Actor, at: dt.datetime) -> Transition:
        where = f"session {self.session_id} decline register"
        if actor.role is not Role.DESK:
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
    ) -> None:
        super().__init__(f"RAPS claim {claim_id}", _R.ALERTED, actor, alerted_at)
        self.claim_id, self.jackpot_id, self.card = claim_id, jackpot_id, card
        self.device, self.area, self.bank = device, area, bank
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

    def not_owner(self, actor: Actor, at: dt.datetime) -> Transition:
        """The player found is not the owner of the selected card: reselect next."""
        return self._move("not_owner", actor, at)

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

    def reselect(self, actor: Actor, at: dt.datetime, register: DeclineRegister) -> Transition:
        """Pass the jackpot to the next pick: once the claim time is up, unless registered."""
        self._check("reselect", actor, at)
        if self.state is _R.ANNOUNCED and register.has_declined(self.card):
            raise RegisterError(
                f"{self.subject}: card {self.card} signed the decline register; it still wins"
            )
        return self._move("reselect", actor, at)

    def timers(self) -> list[Timer]:
        if self.state is _R.ANNOUNCED and self.deadline is not None:
            return [Timer(self.subject, "reselect_or_register", self.deadline)]
        return []
