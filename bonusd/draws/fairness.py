"""Verifiable randomness for draws and RAPS: commit and pick (checking is `bonusd.draws.verify`).

The scheme, in order (docs/fairness.md gives the byte layouts and a worked example):

1. A fresh 256-bit secret seed comes from the OS CSPRNG (`secrets.token_bytes(32)`); its
   SHA-256 (the *seed commitment*) is published while the entry bin is still open.
2. At bin close the entry pool is frozen; the SHA-256 of its canonical serialisation (the
   *pool commitment*) is published. Neither side can now steer the outcome: the seed was
   fixed before the pool was known, and the pool before the seed is revealed.
3. Candidate `i` of a stream is HMAC-SHA-256(seed, tag || draw || tombola || pool hash || i).
   The top `b` bits of the block, `b` the bit length of `n - 1`, are a ticket index in
   [0, n), rejected and replaced by the next candidate when >= n: never a modulo reduction.
4. A ticket maps to its owner through cumulative ticket counts. An owner already picked,
   seated or excluded is passed over and the next candidate drawn, so the alternates for
   redraws are simply the continuation of an already-fixed stream.
5. Given the revealed seed, the pool and the recorded picks, `bonusd.draws.verify.verify`
   recomputes every pick.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import TypeVar

import numpy as np
import numpy.typing as npt

SEED_BYTES = 32
PICK_TAG = b"bonusd-pick-v1"
POOL_MAGIC = "bonusd-pool-v1"

SeedSource = Callable[[int], bytes]
"""Where seeds come from: `secrets.token_bytes` in service, a fixed function in tests."""

T = TypeVar("T")


def new_seed(source: SeedSource = secrets.token_bytes) -> bytes:
    """A fresh 32-byte secret seed."""
    seed = source(SEED_BYTES)
    if len(seed) != SEED_BYTES:
        raise ValueError(f"seed source returned {len(seed)} bytes, expected {SEED_BYTES}")
    return seed


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def commit_seed(seed: bytes) -> str:
    """The seed commitment: SHA-256 of the raw seed bytes, lowercase hex."""
    return sha256_hex(seed)


_NOT_IN_TOKEN = re.compile(r"[\s:=\ud800-\udfff]")  # (a lone surrogate: no UTF-8 for it)


def bad_token(text: str) -> bool:
    """Whether `text` holds whitespace, ':', '=' or a lone surrogate (no pool file can)."""
    return _NOT_IN_TOKEN.search(text) is not None


def check_cards(cards: Sequence[str]) -> None:
    """`ValueError` unless every card is fit for a pool file: non-empty, without
    whitespace, ':' or '=' (what a caller of `Pool(..., ordered=True)` vouches for)."""
    _check_tokens("card", cards)


def _check_tokens(what: str, values: Sequence[str], *, ascending: bool = False) -> None:
    """Each of `values` non-empty, without whitespace, ':' or '='; `ascending`: they are
    known to be in strictly ascending order, so only the first can be empty."""
    empty = bool(values) and not values[0] if ascending else not all(values)
    if empty or _NOT_IN_TOKEN.search("".join(values)):  # (any whitespace, at either end too)
        raise ValueError(f"every {what} must be non-empty, without spaces, ':' or '='")


def _ascending(values: Sequence[str]) -> bool:
    """Sorted and unique: each text below the next (compared over an array of them, so
    a RAPS pool of 15,000 cards is checked in about half the time of a Python loop)."""
    if len(values) < 2:
        return True
    held = np.array(values, dtype=object)
    return bool((held[1:] > held[:-1]).all())


@dataclass(frozen=True, eq=False)
class Pool:
    """A frozen entry pool of one tombola round: cards in code-point order, their tickets.

    Ticket numbers run from 1 to `total` in card order: the first card owns tickets
    1..t1, the next t1+1..t1+t2, and so on. Internally ticket indexes are 0-based.

    `ordered`: the caller vouches that the cards are unique, in code-point order and
    each passes `check_cards`, so those checks (two passes over every card, about 1 ms
    of a RAPS pick at 15,000 cards) are not repeated. Only the RAPS pick sets it, for
    cards taken from the floor mirror's sorted columns, whose cards were checked as they
    arrived; a pool file read back is always checked whole.
    """

    draw_id: str
    tombola: str
    round_no: int
    cards: tuple[str, ...]
    tickets: npt.NDArray[np.int64]
    ordered: bool = field(default=False, kw_only=True, repr=False)

    @classmethod
    def freeze(
        cls, draw_id: str, tombola: str, entries: Mapping[str, int], *, round_no: int = 1
    ) -> Pool:
        """Freeze `entries` (card -> tickets); cards with 0 tickets are left out."""
        if any(n < 0 for n in entries.values()):
            raise ValueError(f"pool {draw_id}/{tombola}: ticket counts must be >= 0")
        cards = tuple(c for c in sorted(entries) if entries[c] > 0)
        tickets = np.fromiter((entries[c] for c in cards), dtype=np.int64, count=len(cards))
        return cls(draw_id, tombola, round_no, cards, tickets)

    def __post_init__(self) -> None:
        _check_tokens("draw id and tombola", [self.draw_id, self.tombola])
        ascending = self.ordered or _ascending(self.cards)
        if not self.ordered:
            _check_tokens("card", self.cards, ascending=ascending)
        if len(self.cards) != len(self.tickets) or (len(self.tickets) and self.tickets.min() < 1):
            raise ValueError("a pool needs one ticket count >= 1 per card")
        if not ascending:
            raise ValueError("pool cards must be unique and in code-point order")
        self.tickets.setflags(write=False)

    @property
    def members(self) -> int:
        return len(self.cards)

    @cached_property
    def cumulative(self) -> npt.NDArray[np.int64]:
        """cumulative[i] = tickets held by cards[0..i]; the owner of index t is the first i
        with cumulative[i] > t."""
        return np.cumsum(self.tickets)

    @cached_property
    def total(self) -> int:
        return int(self.tickets.sum())

    def header(self) -> str:
        return (
            f"{POOL_MAGIC} draw={self.draw_id} tombola={self.tombola} round={self.round_no}"
            f" members={self.members} tickets={self.total}"
        )

    def serialise(self) -> bytes:
        """The canonical form: the header line, then `card:tickets` per card, each line
        ending in LF, UTF-8."""
        return self._serialised

    @cached_property
    def _serialised(self) -> bytes:
        head = self.header() + "\n"
        if not self.cards:
            return head.encode()
        if (self.tickets == 1).all():  # a RAPS pool: one entry each
            return (head + ":1\n".join(self.cards) + ":1\n").encode()
        lines = [f"{c}:{n}" for c, n in zip(self.cards, self.tickets.tolist(), strict=True)]
        return (head + "\n".join(lines) + "\n").encode()

    @cached_property
    def commitment(self) -> str:
        """The pool commitment: SHA-256 of `serialise()`, lowercase hex."""
        return sha256_hex(self.serialise())

    def owner_index(self, ticket: int) -> int:
        if not 0 <= ticket < self.total:
            raise IndexError(f"ticket index {ticket} outside 0..{self.total - 1}")
        return int(np.searchsorted(self.cumulative, ticket, side="right"))

    def owner(self, ticket: int) -> str:
        """The card holding 0-based ticket index `ticket`."""
        return self.cards[self.owner_index(ticket)]

    def index_of(self, card: str) -> int | None:
        index = bisect.bisect_left(self.cards, card)
        return index if index < self.members and self.cards[index] == card else None

    def ticket_ranges(self) -> Iterator[tuple[int, int, str]]:
        """(first, last, card) per member, 1-based ticket numbers, in pool order."""
        first = 1
        for card, last in zip(self.cards, self.cumulative.tolist(), strict=True):
            yield first, last, card
            first = last + 1


def pick_message(draw_id: str, tombola: str, context_hash: str, counter: int) -> bytes:
    """The HMAC message of candidate `counter`; `context_hash` is the pool commitment."""
    draw_bytes, tombola_bytes = draw_id.encode(), tombola.encode()
    head = (
        PICK_TAG
        + len(draw_bytes).to_bytes(2, "big")
        + draw_bytes
        + len(tombola_bytes).to_bytes(2, "big")
        + tombola_bytes
    )
    return head + bytes.fromhex(context_hash) + counter.to_bytes(8, "big")


def candidate(block: bytes, bound: int) -> int | None:
    """The top `(bound-1).bit_length()` bits of a 32-byte block, or None when >= `bound`
    (rejected); `bound` is the `n` of docs/fairness.md."""
    if not 1 <= bound <= 1 << 256:
        raise ValueError(f"n must be in 1..2**256, got {bound}")
    value = int.from_bytes(block, "big") >> (256 - (bound - 1).bit_length())
    return value if value < bound else None


class CandidateStream:
    """The candidate stream of one (seed, draw, tombola, context hash): unbiased integers."""

    def __init__(
        self, seed: bytes, draw_id: str, tombola: str, context_hash: str, *, counter: int = 0
    ) -> None:
        prefix = pick_message(draw_id, tombola, context_hash, 0)[:-8]  # all but the counter
        self._mac = hmac.new(seed, prefix, hashlib.sha256)
        self.counter = counter

    def block(self, counter: int) -> bytes:
        mac = self._mac.copy()
        mac.update(counter.to_bytes(8, "big"))
        return mac.digest()

    def below(self, bound: int) -> tuple[int, int]:
        """(counter, value): the next accepted candidate in [0, bound) and the counter it used."""
        while True:
            counter = self.counter
            self.counter += 1
            value = candidate(self.block(counter), bound)
            if value is not None:
                return counter, value


def shuffle(
    items: Sequence[T], seed: bytes, draw_id: str, label: str, context_hash: str
) -> list[T]:
    """A verifiable Fisher-Yates shuffle: for each position from len-1 down to 1, swap it
    with below(position+1)."""
    out = list(items)
    stream = CandidateStream(seed, draw_id, label, context_hash)
    for position in range(len(out) - 1, 0, -1):
        _, other = stream.below(position + 1)
        out[position], out[other] = out[other], out[position]
    return out


class SkipReason(StrEnum):
    """Why a drawn ticket's owner was passed over."""

    ALREADY_PICKED = "already_picked"
    EXCLUDED = "excluded"
    SEATED = "seated"


@dataclass(frozen=True)
class PassedOver:
    counter: int
    ticket: int
    card: str
    reason: SkipReason


@dataclass(frozen=True)
class Pick:
    """The `number`-th pick (1-based) of a stream, and the owners passed over before it."""

    number: int
    counter: int
    ticket: int
    card: str
    passed_over: tuple[PassedOver, ...] = ()

    @property
    def ticket_number(self) -> int:
        return self.ticket + 1


class Picker:
    """The ordered picks of one pool, derived lazily: winners first, then alternates.

    `barred` holds cards not to be picked (picked in another round or tombola, seated,
    excluded); `bar` adds one later, e.g. an exclusion arriving after the pool froze.
    Each pick `next` returns lists the tickets passed over before it; `keep_passed_over`
    False keeps `picks` without those lists (a caller that records each pick as it comes:
    alternates of a mostly picked pool pass over thousands of tickets each).
    """

    def __init__(
        self,
        pool: Pool,
        seed: bytes,
        *,
        barred: Mapping[str, SkipReason] | None = None,
        picks: Sequence[Pick] = (),
        keep_passed_over: bool = True,
    ) -> None:
        self.pool = pool
        self._keep_passed_over = keep_passed_over
        self._cumulative = pool.cumulative
        self._total = pool.total
        self._stream = CandidateStream(seed, pool.draw_id, pool.tombola, pool.commitment)
        self._barred: dict[str, SkipReason] = {}
        self._open = pool.members
        self.picks: list[Pick] = []
        for card, reason in (barred or {}).items():
            self.bar(card, reason)
        for pick in picks:  # resume after a restart from the recorded picks (see `verify`)
            self.picks.append(pick)
            self.bar(pick.card, SkipReason.ALREADY_PICKED)
            self._stream.counter = pick.counter + 1

    def bar(self, card: str, reason: SkipReason) -> None:
        if card not in self._barred:
            self._barred[card] = reason
            if self.pool.index_of(card) is not None:
                self._open -= 1

    @property
    def exhausted(self) -> bool:
        """True when no pool member can be picked any more."""
        return self._open <= 0

    def next(self) -> Pick | None:
        """The next pick, or None when every member is picked, seated or excluded."""
        if self.exhausted:
            return None
        skipped: list[PassedOver] = []
        while True:
            counter, ticket = self._stream.below(self._total)
            card = self.pool.cards[int(np.searchsorted(self._cumulative, ticket, side="right"))]
            reason = self._barred.get(card)
            if reason is None:
                break
            skipped.append(PassedOver(counter, ticket, card, reason))
        pick = Pick(len(self.picks) + 1, counter, ticket, card, tuple(skipped))
        self.picks.append(pick if self._keep_passed_over else replace(pick, passed_over=()))
        self.bar(card, SkipReason.ALREADY_PICKED)
        return pick

    def take(self, count: int) -> list[Pick]:
        """Up to `count` further picks (fewer only if the pool runs out)."""
        out: list[Pick] = []
        while len(out) < count and (pick := self.next()) is not None:
            out.append(pick)
        return out


def pick_sequence(
    pool: Pool, seed: bytes, count: int, *, barred: Mapping[str, SkipReason] | None = None
) -> list[Pick]:
    """The first `count` picks of the pool's stream (winners then alternates)."""
    return Picker(pool, seed, barred=barred).take(count)
