"""What the draw runner and the RAPS runner share (`LedgerRunner`): per-subject locks, books
cached and brought up to date from their ledgers, and the step: load a book, run a pure
command on it, commit its entries against the ledger length it read (with the book's
next deadline in the `deadlines` index), and retry from a fresh book when another writer
got there first. The desks' caches (`DeskCache`, `SizedLRU`) are bounded by count, by
megabytes (each entry sized in constant time: `pool_bytes`, `snapshot_bytes`,
`book_bytes`) and by idle time (`CacheBounds`), least recently used dropped first: a
dropped book is rebuilt from its ledger on its next use, and a subject's lock lives only
while some task holds or awaits it. Also the check that refuses picks of members excluded
since the pool froze, and the load that refuses a step when a committed seed is not in
Redis as committed (`draws/seeds.py`), recording the refusal once."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import sys
import weakref
from collections.abc import Awaitable, Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

import numpy as np
from cachetools import LRUCache, TTLCache
from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Entry, Kind
from bonusd.audit.store import AuditStore, StaleLedger
from bonusd.clocks.clock import Clock
from bonusd.draws.seeds import record_refusal, refusal_entry
from bonusd.errors import ConflictError, SeedRefused
from bonusd.infra.keys import Keys
from bonusd.registry.records import Member

ATTEMPTS = 8


class Book(Protocol):
    version: int

    def next_deadline(self) -> dt.datetime | None: ...


B = TypeVar("B", bound=Book)


async def ledger_step(
    *,
    audit: AuditStore,
    subject: str,
    deadlines: str,
    member: str,
    load: Callable[[], Awaitable[B]],
    forget: Callable[[], object],
    command: Callable[[B], list[Entry]],
    extra: Callable[[Any], None] | None = None,
    check: Callable[[list[Entry]], Awaitable[None]] | None = None,
) -> list[AuditRecord]:
    """Run `command` on the loaded book and commit its entries, retrying lost races;
    `forget` drops the cached book whenever it may hold uncommitted changes."""
    for _ in range(ATTEMPTS):
        book = await load()
        expect = book.version
        try:
            entries = command(book)
            if not entries:
                return []
            if check is not None:
                await check(entries)

            def also(pipe: Any, book: B = book) -> None:
                if extra is not None:
                    extra(pipe)
                nxt = book.next_deadline()
                if nxt is None:
                    pipe.zrem(deadlines, member)
                else:
                    pipe.zadd(deadlines, {member: nxt.timestamp()})

            return await audit.commit(entries, subject=subject, expect=expect, extra=also)
        except StaleLedger:
            forget()
        except BaseException:
            forget()  # the book holds uncommitted changes
            raise
    raise ConflictError(
        f"{subject} kept changing while this step was decided ({ATTEMPTS} attempts): "
        "nothing was written; look at its current state and try again"
    )


class ExcludedSincePool(Exception):
    """Picks (their payloads) of members excluded after the pool froze: record the
    exclusions first, then pick again."""

    def __init__(self, picks: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(picks)} pick(s) of members excluded since the pool froze")
        self.picks = picks


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


def snapshot_bytes(snapshot: Any) -> int:
    """A RAPS floor snapshot (`raps.snapshot.FloorSnapshot`, duck typed): its lines and
    whatever it has made of them (its file's bytes, the field table a judgement reads, the
    checked columns, a card index, texts for a report). At 20,000 players one holds about
    1.3 MB read back from Redis, 3.8 MB as a pick made it, 5.7 MB once judged."""
    return held_bytes(snapshot)


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


class LedgerRunner(Generic[B]):
    """The part of a runner that does not depend on what its books hold."""

    kind: ClassVar[str]  # the member prefix of its subjects in the deadline index
    clock: Clock  # set by each runner

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        audit: AuditStore,
        *,
        on_deadline_change: Callable[[], None],
        bounds: CacheBounds,
    ) -> None:
        self.redis, self.keys, self.audit = redis, keys, audit
        self._deadline_changed = on_deadline_change
        self.bounds = bounds
        self._books: DeskCache[str, B] = DeskCache(
            bounds.books, bounds.books_mb * MB, bounds.idle_s, self._now, book_bytes
        )
        # subject -> held while its book changes; kept only while a task holds or awaits it
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _now(self) -> float:
        """The daemon's clock as seconds, for the caches' idle times."""
        return self.clock.now().timestamp()

    @property
    def deadlines(self) -> str:
        return self.keys.deadlines

    def cached(self, subject: str) -> B | None:
        """The subject's book if the cache holds one (as of its last load: no Redis read)."""
        return self._books.get(subject)

    def _lock(self, subject: str) -> asyncio.Lock:
        """The subject's lock: the same object for every task while any holds it."""
        lock = self._locks.get(subject)
        if lock is None:
            lock = self._locks[subject] = asyncio.Lock()
        return lock

    async def _refresh(
        self,
        subject: str,
        fresh: Callable[[], B],
        replay: Callable[[B, list[AuditRecord]], Awaitable[None]],
        same: Callable[[B], bool] = lambda _: True,
    ) -> B:
        """The cached book of `subject`, brought up to its ledger by `replay`; a new one
        (`fresh`) when there is none, it is ahead of the ledger or not the `same` plan. The
        caller (holding the subject's lock) keeps the book it gets even if the cache drops
        it meanwhile: a step's uncommitted changes are never lost to an eviction, only the
        cache entry, and the next load replays the ledger into a fresh book."""
        book = self._books.get(subject)
        length = await self.redis.llen(self.audit.ledger_key(subject))
        if book is None or book.version > length or not same(book):
            book = fresh()
        if book.version < length:
            await replay(book, await self.audit.ledger(subject, book.version))
        self._books[subject] = book
        return book

    async def _checked(
        self,
        subject: str,
        load: Awaitable[B],
        check: Callable[[B], Awaitable[object]] | None,
        round_of: Callable[[str], tuple[str, str, int]] | None = None,
    ) -> B:
        """The book `load` gives, its committed seeds checked by `check` (a step's load; None
        for a read, which never writes). A `SeedRefused` from either is raised; in a step
        it is first recorded, one exception record per seed key, once; `round_of` gives a
        key's (draw or jackpot id, tombola, round), by default read from the key itself."""
        try:
            book = await load
            if check is not None:
                await check(book)
        except SeedRefused as exc:
            if check is not None:
                now = self.clock.now()
                where = round_of or (lambda n: (subject, n.split(":")[-2], int(n.split(":")[-1])))
                entries = {n: refusal_entry(where(n), n, p, now) for n, p in exc.problems}
                await record_refusal(self.audit, subject, entries)
            raise
        return book

    async def _step(
        self,
        subject: str,
        load: Callable[[], Awaitable[B]],
        command: Callable[[B], list[Entry]],
        *,
        extra: Callable[[Any], None] | None = None,
        check: Callable[[list[Entry]], Awaitable[None]] | None = None,
    ) -> list[AuditRecord]:
        """Run `command` on the book and commit its entries, retrying lost races."""
        async with self._lock(subject):  # nobody reads the book while it holds uncommitted steps
            records = await ledger_step(
                audit=self.audit,
                subject=subject,
                deadlines=self.deadlines,
                member=f"{self.kind}:{subject}",
                load=load,
                forget=lambda: self._books.pop(subject, None),
                command=command,
                extra=extra,
                check=check,
            )
        if records:
            self._deadline_changed()
        return records

    async def _refuse_excluded(self, entries: list[Entry]) -> None:
        """`ExcludedSincePool` if `entries` pick a member excluded since the pool froze."""
        picks = [e.payload for e in entries if e.kind in (Kind.PICK, Kind.REDRAW)]
        if not picks:
            return
        cards = [p["card"] for p in picks]
        rows = cast(list[str | None], await self.redis.hmget(self.keys.member_index, cards))
        found = [
            p
            for p, row in zip(picks, rows, strict=True)
            if row and Member.from_index(p["card"], row).excluded
        ]
        if found:
            raise ExcludedSincePool(found)
