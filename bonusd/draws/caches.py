"""The desks' caches (`DeskCache`, `SizedLRU`) and what bounds them (`CacheBounds`, the
`BONUSD_DESK_*` settings): each bounded by a count, by megabytes (each entry sized in
constant time: `pool_bytes`, `snapshot_bytes`, `book_bytes`) and, for books and pool files,
by idle time, the least recently used dropped first. A dropped book is rebuilt from its
ledger on its next use (`bonusd.draws.ledger`)."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from cachetools import LRUCache, TTLCache

MB = 2**20


@dataclass(frozen=True)
class CacheBounds:
    """How much each of a runner's caches keeps (`BONUSD_DESK_*` settings): books (draws or
    RAPS sessions), pool files, RAPS floor snapshots, random jackpot timetables. Each cache
    is bounded by a count and, but for the timetables, by megabytes (as `pool_bytes`,
    `snapshot_bytes` and `book_bytes` size its entries), the least recently used dropped
    first; an entry larger than its whole budget is kept alone. The defaults hold
    what a busy night needs (docs/settings.md, "Memory"): a campaign's draws (Golden Horse:
    4 and a Final) or a night's RAPS session, its 14 jackpots with a few retries. Books and
    pool files also go once unused for `idle_s` of the daemon's clock, so a finished night's
    (its pools, the floors of its open jackpots) does not stay for days."""

    books: int = 16
    pools: int = 64
    floors: int = 16
    timetables: int = 64
    idle_s: float = 7200.0  # a book or pool file unused this long (daemon clock) is dropped
    books_mb: float = 48.0
    pools_mb: float = 32.0
    floors_mb: float = 8.0


DESK_CACHES = CacheBounds()  # the defaults (the daemon passes its settings')

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class DeskCache(TTLCache[K, V, float]):
    """At most `count` entries and `budget` bytes (`sizeof` each), least recently used
    dropped first, and none unused for `idle_s` of `timer`. An entry larger than the whole
    budget is kept alone (counted as the budget): the one in use is never read again while
    it is. Idle entries go at every store and every `get`, so a quiet cache does not hold
    a finished night."""

    def __init__(
        self,
        count: int,
        budget: float,
        idle_s: float,
        timer: Callable[[], float],
        sizeof: Callable[[V], float],
    ) -> None:
        super().__init__(budget, idle_s, timer, lambda value: min(sizeof(value), budget))
        self.count = count

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        while len(self) > self.count:
            self.popitem()

    def get(self, key: K, default: V | None = None) -> V | None:  # type: ignore[override]
        self.expire()
        return super().get(key, default)


def pool_cache(bounds: CacheBounds, timer: Callable[[], float]) -> DeskCache[str, Any]:
    """Pool files by commitment, bounded by `bounds`. A pool file never changes, so one
    cache serves every runner of a daemon: each book of a draw round then holds the same
    pool, not a copy parsed again (the live push replays the books the desk changes)."""
    return DeskCache(bounds.pools, bounds.pools_mb * MB, bounds.idle_s, timer, pool_bytes)


class SizedLRU(LRUCache[K, V]):
    """An LRU cache of at most `count` entries and `budget` bytes (`sizeof` each); an entry
    larger than the whole budget is kept alone."""

    def __init__(self, count: int, budget: float, sizeof: Callable[[V], float]) -> None:
        super().__init__(budget, lambda value: min(sizeof(value), budget))
        self.count = count

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        while len(self) > self.count:
            self.popitem()


# -- sizes: what an entry holds, estimated from its attributes in constant time ---------------
HEAD = 64  # an object's own header and slots, roughly
REF = 8  # a pointer in a tuple, list or dict
STR_HEAD = sys.getsizeof("")  # a str before its characters (ASCII: one byte each)
SAMPLE = 16  # items of a sequence or mapping looked at by `held_bytes`
RECORD_BYTES = 2048  # what a book holds per ledger record besides pools and floors (measured)


def texts_bytes(texts: Sequence[str]) -> int:
    """A tuple or list of ASCII strings of similar length (cards): the pointers, and each
    string's object as long as the first, middle and last (not a pass over all)."""
    if not texts:
        return HEAD
    sample = (texts[0], texts[len(texts) // 2], texts[-1])
    return HEAD + len(texts) * (REF + STR_HEAD + sum(map(len, sample)) // 3)


def held_bytes(value: object, depth: int = 5) -> int:
    """What `value` holds, looking `depth` levels into attributes, mappings and sequences
    (at most `SAMPLE` items of each, scaled to its length): text and bytes by length, a
    numpy array by the data it keeps alive (none when that is a bytes object, counted
    there), sequences of text by `texts_bytes`; anything else as a header."""
    if isinstance(value, str | bytes):
        return sys.getsizeof(value)
    if isinstance(value, np.ndarray):
        while isinstance(value.base, np.ndarray):
            value = value.base
        return HEAD + (value.nbytes if value.base is None else 0)
    if isinstance(value, list | tuple) and value and isinstance(value[0], str):
        return texts_bytes(value)
    items: Collection[object] = ()
    if isinstance(value, list | tuple):
        items = value
    elif isinstance(value, Mapping):
        items = value.values()
    elif hasattr(value, "__dict__"):
        items = [vars(value)]
    sample = list(itertools.islice(items, SAMPLE))
    if depth <= 0 or not sample:
        return HEAD
    held = sum(REF + held_bytes(item, depth - 1) for item in sample)
    return HEAD + held * len(items) // len(sample)


def pool_bytes(pool: Any) -> int:
    """A pool file as the desk holds it (`fairness.Pool`, duck typed): its cards, its
    ticket counts and their running sum (made at its first pick), its serialised form
    when it keeps one. A 1,000,000-ticket round of 200,000 cards holds about 14 MB."""
    tickets: int = pool.tickets.nbytes
    held = vars(pool)
    serialised = held.get("_serialised")
    return (
        HEAD
        + texts_bytes(pool.cards)
        + 2 * (HEAD + tickets)
        + (0 if serialised is None else sys.getsizeof(serialised))
    )


SIZED = "_sized"  # a snapshot's own attribute: (its attributes when sized, the bytes)


def snapshot_bytes(snapshot: Any) -> int:
    """A RAPS floor snapshot (`raps.snapshot.FloorSnapshot`, duck typed): its lines and
    whatever it has made of them (its file's bytes, the field table a judgement reads, the
    checked columns, a card index, texts for a report). At 20,000 players one holds about
    1.3 MB read back from Redis, 3.8 MB as a pick made it, 5.7 MB once judged. Kept on the
    snapshot until it makes something more (a cached property), so a book that keeps a
    session's floors is sized at every store without walking each again (~0.3 ms each)."""
    held = vars(snapshot)
    sized = held.get(SIZED)
    if sized is not None and sized[0] == len(held):
        return int(sized[1])
    size = held_bytes(snapshot)
    held[SIZED] = (len(held) + (SIZED not in held), size)
    return size


def book_bytes(book: Any) -> int:
    """A draw or RAPS session book (duck typed): `RECORD_BYTES` per ledger record it holds,
    and the pool files and floor snapshots it keeps (draw rounds' pools; each jackpot's
    current pool and, until the jackpot is settled, its floor), each counted once even
    when several rounds share it."""
    total: int = HEAD + RECORD_BYTES * book.version
    seen: set[int] = set()
    draw = getattr(book, "draw", None)
    pools = [rnd.pool for rnd in getattr(draw, "rounds", {}).values()]
    floors = []
    for state in getattr(book, "jackpots", {}).values():
        pools.append(getattr(state.jackpot, "pool", None))
        floors.append(state.floor)
    for pool in pools:
        if pool is not None and id(pool) not in seen:
            seen.add(id(pool))
            total += pool_bytes(pool)
    for floor in floors:
        if floor is not None and id(floor) not in seen:
            seen.add(id(floor))
            total += snapshot_bytes(floor)
    return total
