"""Draw rounds as pure logic: commit, freeze, pick, redraw, seats and manual tombolas.

A `DrawRounds` is one whole draw (a draw day): the 19h00, 20h00 and 21h00 rounds of the Halfway
draw are one draw, and so are the Final's slots and tables tombolas. Its rules:

- a member is picked at most once per draw: whoever was picked in any round or tombola
  (winner or no-show alike), or holds a seat, is passed over in every later pick;
- each round has its own seed, committed while its bin is open, and its own frozen pool;
- the number one of each leaderboard may be seated; seats are left out of the pools;
- an exclusion takes effect at once: left out of pools frozen after it, passed over at
  pick time in pools frozen before it;
- a manual round (the Final's physical tombola) exports a numbered ticket list and checks
  each hand-drawn ticket number instead of drawing electronically;
- a round's sealed reveals are shuffled with its seed, published once the draw is over.

Every method takes plain data and returns records for the audit log; nothing here waits.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from bonusd.draws.claims import Prize, RevealError
from bonusd.draws.fairness import (
    Pick,
    Picker,
    Pool,
    SeedSource,
    SkipReason,
    commit_seed,
    new_seed,
    sha256_hex,
    shuffle,
)
from bonusd.draws.types import (
    ALREADY,
    EXCLUDED,
    SEATED,
    AutoSeat,
    DrawError,
    ManualPick,
    ManualTicketError,
    RoundKey,
)
from bonusd.draws.verify import RoundRecord, verify_draw

# the shared vocabulary is in `bonusd.draws.types`, the auditor's check in `bonusd.draws.verify`;
# both are importable from here too
__all__ = [
    "ALREADY",
    "EXCLUDED",
    "SEATED",
    "AutoSeat",
    "DrawError",
    "DrawRounds",
    "ManualPick",
    "ManualTicketError",
    "RevealSet",
    "Round",
    "RoundKey",
    "RoundRecord",
    "TicketList",
    "verify_draw",
]


@dataclass(frozen=True)
class TicketList:
    """The numbered ticket list of a manual round, to print before the physical draw."""

    draw_id: str
    tombola: str
    round_no: int
    pool_commitment: str
    total: int
    ranges: tuple[tuple[int, int, str], ...]

    def lines(self) -> Iterator[str]:
        """A header, then one `number<TAB>card` line per ticket."""
        yield (
            f"# draw {self.draw_id} tombola {self.tombola} round {self.round_no}"
            f" tickets {self.total} pool {self.pool_commitment}"
        )
        for first, last, card in self.ranges:
            for number in range(first, last + 1):
                yield f"{number}\t{card}"


class RevealSet:
    """A round's sealed reveals: reveal i (1-based) holds `sealed[i-1]`, the prize set in
    an order fixed by the round's seed (`fairness.shuffle`); each is picked once."""

    def __init__(self, draw_id: str, label: str, prizes: Sequence[Prize], seed: bytes) -> None:
        self.draw_id, self.label = draw_id, label
        text = "".join(f"{p.value_cents}\t{p.label}\n" for p in prizes)
        self.commitment = sha256_hex(f"bonusd-reveals-v1 {draw_id} {label}\n{text}".encode())
        self.sealed = tuple(shuffle(prizes, seed, draw_id, f"reveals-{label}", self.commitment))
        self.picked: dict[int, str] = {}

    def pick(self, number: int, card: str) -> Prize:
        if not 1 <= number <= len(self.sealed):
            raise RevealError(f"there is no reveal {number}; reveals are 1 to {len(self.sealed)}")
        if number in self.picked:
            raise RevealError(f"reveal {number} was already picked by card {self.picked[number]}")
        self.picked[number] = card
        return self.sealed[number - 1]


@dataclass
class Round:
    """One round of one tombola: seed committed, then pool frozen, then picks."""

    draw_id: str
    tombola: str
    round_no: int
    winners: int
    manual: bool
    seed: bytes = field(repr=False)
    seed_commitment: str
    pool: Pool | None = None
    picker: Picker | None = None
    manual_picks: list[ManualPick] = field(default_factory=list)

    @property
    def key(self) -> RoundKey:
        return (self.tombola, self.round_no)

    @property
    def name(self) -> str:
        return f"{self.tombola} round {self.round_no}"

    @property
    def picks(self) -> list[Pick]:
        return self.picker.picks if self.picker is not None else []


class DrawRounds:
    """One draw and all its rounds; enforces once-per-draw across rounds and tombolas."""

    def __init__(
        self,
        draw_id: str,
        *,
        seed_source: SeedSource = secrets.token_bytes,
        keep_passed_over: bool = True,
    ) -> None:
        self.draw_id = draw_id
        self._seed_source = seed_source
        self._keep_passed_over = keep_passed_over  # in each round's `picks` (see Picker)
        self.rounds: dict[RoundKey, Round] = {}
        self.seats: dict[str, AutoSeat] = {}
        self.excluded: set[str] = set()
        self.order: list[tuple[RoundKey, int]] = []  # (round, pick number) across the draw
        self._picked: dict[str, str] = {}  # card -> where it was picked, for messages

    def is_picked(self, card: str) -> bool:
        return card in self._picked

    # -- rounds -------------------------------------------------------------------------
    def open_round(
        self,
        tombola: str,
        round_no: int,
        winners: int,
        *,
        manual: bool = False,
        seed: bytes | None = None,
    ) -> str:
        """Open a round while its bin is open; returns the seed commitment to publish.

        `seed` is given when the round is rebuilt from its stored, already committed seed."""
        key = (tombola, round_no)
        if key in self.rounds:
            raise DrawError(f"draw {self.draw_id}: {tombola} round {round_no} is already open")
        if winners < 1:
            raise DrawError(f"draw {self.draw_id}: a round needs at least 1 winner, got {winners}")
        seed = seed if seed is not None else new_seed(self._seed_source)
        self.rounds[key] = Round(
            self.draw_id, tombola, round_no, winners, manual, seed, commit_seed(seed)
        )
        return self.rounds[key].seed_commitment

    def round(self, tombola: str, round_no: int) -> Round:
        try:
            return self.rounds[(tombola, round_no)]
        except KeyError:
            raise DrawError(
                f"draw {self.draw_id}: no {tombola} round {round_no}; open it first"
            ) from None

    def freeze(self, tombola: str, round_no: int, entries: Mapping[str, int]) -> Pool:
        """Close the bin: freeze the activated entries (card -> tickets) of the round.

        Seated and excluded members are left out; the pool commitment is `pool.commitment`.
        """
        rnd = self.round(tombola, round_no)
        if rnd.pool is not None:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} is already frozen")
        kept = {c: n for c, n in entries.items() if c not in self.seats and c not in self.excluded}
        return self.restore_pool(Pool.freeze(self.draw_id, tombola, kept, round_no=round_no))

    def restore_pool(self, pool: Pool) -> Pool:
        """Install a frozen pool (as `freeze` does, or read back from its archived file)."""
        rnd = self.round(pool.tombola, pool.round_no)
        if rnd.pool is not None:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} is already frozen")
        rnd.pool = pool
        if not rnd.manual:
            rnd.picker = Picker(
                pool, rnd.seed, barred=self._barred(), keep_passed_over=self._keep_passed_over
            )
        return pool

    def _barred(self) -> dict[str, SkipReason]:
        barred = dict.fromkeys(self.excluded, EXCLUDED) | dict.fromkeys(self.seats, SEATED)
        return barred | dict.fromkeys(self._picked, ALREADY)

    def _electronic(self, tombola: str, round_no: int) -> tuple[Round, Picker]:
        rnd = self.round(tombola, round_no)
        if rnd.manual:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} is manual; enter hand-drawn tickets")
        if rnd.picker is None:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} has no frozen pool; close its bin")
        return rnd, rnd.picker

    def _mark(self, rnd: Round, card: str, number: int) -> None:
        self._picked[card] = rnd.name
        self.order.append((rnd.key, number))
        for other in self.rounds.values():
            if other.picker is not None and other is not rnd:
                other.picker.bar(card, ALREADY)

    def draw(self, tombola: str, round_no: int) -> list[Pick]:
        """Pick the round's winners; fewer only if the pool runs out of eligible members."""
        rnd, picker = self._electronic(tombola, round_no)
        if picker.picks:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} is already drawn; use redraw")
        picks: list[Pick] = []
        while len(picks) < rnd.winners and (pick := self.pick_next(tombola, round_no)):
            picks.append(pick)
        return picks

    def pick_next(self, tombola: str, round_no: int) -> Pick | None:
        """The round's next pick (a winner, or an alternate once the winners are out)."""
        rnd, picker = self._electronic(tombola, round_no)
        pick = picker.next()
        if pick is not None:
            self._mark(rnd, pick.card, pick.number)
        return pick

    def redraw(self, tombola: str, round_no: int) -> Pick:
        """The next alternate of the round's fixed stream, after a no-show."""
        rnd, picker = self._electronic(tombola, round_no)
        if not picker.picks:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} has not been drawn yet")
        pick = self.pick_next(tombola, round_no)
        if pick is None:
            raise DrawError(
                f"draw {self.draw_id}: {rnd.name} has no eligible member left to redraw"
            )
        return pick

    # -- seats and exclusions -----------------------------------------------------------
    def seat(self, card: str, board: str, *, per_board: int = 1) -> AutoSeat:
        """Seat a leaderboard leader (`per_board` per board); seats are never drawn."""
        if card in self.excluded:
            raise DrawError(f"draw {self.draw_id}: card {card} is excluded and cannot be seated")
        if card in self._picked or card in self.seats:
            raise DrawError(f"draw {self.draw_id}: card {card} already won in this draw")
        if sum(s.board == board for s in self.seats.values()) >= per_board:
            raise DrawError(f"draw {self.draw_id}: the {board} board's seats are taken")
        self.seats[card] = AutoSeat(card, board)
        for rnd in self.rounds.values():
            if rnd.picker is not None:
                rnd.picker.bar(card, SEATED)
        return self.seats[card]

    def exclude(self, card: str) -> None:
        """An exclusion arrived: the member is passed over in every later pick."""
        self.excluded.add(card)
        for rnd in self.rounds.values():
            if rnd.picker is not None:
                rnd.picker.bar(card, EXCLUDED)

    # -- manual rounds ------------------------------------------------------------------
    def ticket_list(self, tombola: str, round_no: int) -> TicketList:
        rnd = self.round(tombola, round_no)
        if rnd.pool is None:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} has no frozen pool; close its bin")
        pool = rnd.pool
        return TicketList(
            self.draw_id,
            tombola,
            round_no,
            pool.commitment,
            pool.total,
            tuple(pool.ticket_ranges()),
        )

    def check_ticket(
        self, tombola: str, round_no: int, number: int, *, printed_pool: str | None = None
    ) -> str:
        """The owner of hand-drawn ticket `number`, or `ManualTicketError` saying why not."""
        rnd = self.round(tombola, round_no)
        if not rnd.manual or rnd.pool is None:
            raise DrawError(f"draw {self.draw_id}: {rnd.name} is not a frozen manual round")
        pool = rnd.pool

        def refuse(problem: str) -> ManualTicketError:
            return ManualTicketError(self.draw_id, tombola, number, problem)

        if printed_pool is not None and printed_pool != pool.commitment:
            raise refuse(
                f"comes from a ticket list of pool {printed_pool[:12]}…, not the frozen pool "
                f"{pool.commitment[:12]}…; it does not belong to this draw"
            )
        if not 1 <= number <= pool.total:
            raise refuse(f"does not exist (this tombola has tickets 1 to {pool.total})")
        card = pool.owner(number - 1)
        if card in self._picked:
            raise refuse(f"belongs to card {card}, already picked in {self._picked[card]}")
        if card in self.seats:
            raise refuse(f"belongs to card {card}, seated as {self.seats[card].board} number one")
        if card in self.excluded:
            raise refuse(f"belongs to card {card}, who is excluded")
        return card

    def accept_ticket(
        self, tombola: str, round_no: int, number: int, *, printed_pool: str | None = None
    ) -> ManualPick:
        """Check and record a hand-drawn ticket as the round's next pick."""
        card = self.check_ticket(tombola, round_no, number, printed_pool=printed_pool)
        rnd = self.round(tombola, round_no)
        pick = ManualPick(len(rnd.manual_picks) + 1, number, card)
        rnd.manual_picks.append(pick)
        self._mark(rnd, card, pick.number)
        return pick

    # -- reveals and publication ----------------------------------------------------------
    def reveals(self, tombola: str, round_no: int, prizes: Sequence[Prize]) -> RevealSet:
        """The round's sealed reveals, ordered by the round's (still secret) seed."""
        return RevealSet(
            self.draw_id, f"{tombola}-{round_no}", prizes, self.round(tombola, round_no).seed
        )

    def reveal_seed(self, tombola: str, round_no: int) -> bytes:
        """The round's seed, to publish once the draw is over: not earlier, since it also
        fixes the order of the sealed reveals."""
        rnd = self.round(tombola, round_no)
        if rnd.pool is None:
            raise DrawError(f"draw {self.draw_id}: {rnd.name}'s seed stays secret until bin close")
        return rnd.seed
