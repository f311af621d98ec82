"""RAPS bonus jackpots, the pure core: who is eligible at a jackpot instant, a verifiable
pick among them, the winner's claim and the session's decline register.

At each jackpot time RAPS picks one member uniformly among those who, at that instant,
are at an EGM or a table in the session's areas, had rated play within the active window
(a parked card does not count), spent at least the minimum on the gaming day, hold an
eligible tier, are not excluded and have not already won where the rules say so. Every
other player on the snapshot gets the reasons they are not eligible, for the audit.

The pick uses the draws' scheme (`bonusd.draws.fairness`): the seed is committed before the
instant, the pool (one ticket per eligible card) at the instant, and a reselection is
the next pick of the same stream. An empty pool is a result, not an error: the caller
records it and retries at the next opportunity.

The winner's claim and the session's decline register are in `rapsclaim` (re-exported
here).
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum

from bonusd.draws.fairness import Pick, Picker, Pool, SeedSource, SkipReason, commit_seed, new_seed
from bonusd.errors import BonusdError
from bonusd.raps.claim import WON_STATES, DeclineRegister, RapsClaim, RapsClaimState

__all__ = [  # DeclineRegister, RapsClaim, RapsClaimState, WON_STATES: from `rapsclaim`
    "RAPS_TOMBOLA",
    "WON_STATES",
    "DeclineRegister",
    "Eligibility",
    "EmptyPool",
    "FloorPlayer",
    "Ineligible",
    "IneligibleReason",
    "Jackpot",
    "PlayKind",
    "RapsClaim",
    "RapsClaimState",
    "RapsError",
    "RapsPick",
    "RapsRules",
    "eligibility",
]

RAPS_TOMBOLA = "raps"


class RapsError(BonusdError):
    """A jackpot step was asked for out of order."""


class PlayKind(StrEnum):
    EGM = "egm"
    TABLE = "table"


class IneligibleReason(StrEnum):
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
    reasons: tuple[IneligibleReason, ...]


@dataclass(frozen=True)
class Eligibility:
    """The eligible players (one per card, in card order) and why the others are not."""

    at: dt.datetime
    eligible: tuple[FloorPlayer, ...]
    ineligible: tuple[Ineligible, ...]

    def player(self, card: str) -> FloorPlayer:
        for player in self.eligible:
            if player.card == card:
                return player
        raise KeyError(card)


def _reasons(
    player: FloorPlayer, at: dt.datetime, rules: RapsRules, previous_winners: Collection[str]
) -> tuple[IneligibleReason, ...]:
    found: list[IneligibleReason] = []
    if player.excluded:
        found.append(IneligibleReason.EXCLUDED)
    if player.area not in rules.areas:
        found.append(IneligibleReason.OUTSIDE_AREAS)
    if at - player.last_play > rules.active_window:
        found.append(IneligibleReason.NOT_ACTIVE)
    if player.spend_cents < rules.min_spend_cents:
        found.append(IneligibleReason.BELOW_MIN_SPEND)
    if rules.tiers is not None and player.tier not in rules.tiers:
        found.append(IneligibleReason.TIER)
    if player.card in previous_winners:
        found.append(IneligibleReason.PREVIOUS_WINNER)
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
    for player in snapshot:
        reasons = _reasons(player, at, rules, previous_winners)
        if reasons:
            ineligible.append(Ineligible(player, reasons))
            continue
        other = best.get(player.card)
        if other is not None:
            keep, drop = (player, other) if player.last_play > other.last_play else (other, player)
            best[player.card] = keep
            ineligible.append(Ineligible(drop, (IneligibleReason.DUPLICATE,)))
        else:
            best[player.card] = player
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
    def exhausted(self) -> bool:
        """Nobody is left to pick: every pool member picked or excluded."""
        return self._picker is None or self._picker.exhausted

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
