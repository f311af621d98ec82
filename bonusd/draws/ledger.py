"""What the draw runner and the RAPS runner share (`LedgerRunner`): per-subject locks, books
cached and brought up to date from their ledgers, and the step: load a book, run a pure
command on it, commit its entries against the ledger length it read (with the book's
next deadline in the `deadlines` index), and retry from a fresh book when another writer
got there first. Books are cached in a `DeskCache` (`bonusd.draws.caches`): a dropped
book is rebuilt from its ledger on its next use, and a subject's lock lives only while
some task holds or awaits it. Also the check that refuses picks of members excluded
since the pool froze, and the load that refuses a step when a committed seed is not in
Redis as committed (`draws/seeds.py`), recording the refusal once."""

from __future__ import annotations

import asyncio
import datetime as dt
import weakref
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Entry, Kind
from bonusd.audit.store import AuditStore, StaleLedger
from bonusd.clocks.clock import Clock
from bonusd.draws.caches import MB, CacheBounds, DeskCache, book_bytes
from bonusd.draws.seeds import record_refusal, refusal_entry
from bonusd.errors import ConflictError, SeedRefused
from bonusd.infra.keys import Keys
from bonusd.infra.metrics import Counted
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
        text = resources.files("bonusd").joinpath("lua", "length_with.lua").read_text("utf-8")
        self._length_with_script = redis.register_script(text)
        # subject -> held while its book changes; kept only while a task holds or awaits it
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _now(self) -> float:
        """The daemon's clock as seconds, for the caches' idle times."""
        return self.clock.now().timestamp()

    @property
    def deadlines(self) -> str:
        return self.keys.deadlines

    @property
    def caches(self) -> dict[str, Counted]:
        """The runner's caches by name, for /metrics: its books, and its pool files and
        floor snapshots where it keeps them (each with `currsize`, the bytes it counts)."""
        found: dict[str, Counted | None] = {"books": self._books}
        found["pools"] = getattr(self, "pools", None)
        found["floors"] = getattr(self, "_floors", None)
        return {name: cache for name, cache in found.items() if cache is not None}

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
        length: int | None = None,
    ) -> B:
        """The cached book of `subject`, brought up to its ledger by `replay`; a new one
        (`fresh`) when there is none, it is ahead of the ledger or not the `same` plan. The
        caller (holding the subject's lock) keeps the book it gets even if the cache drops
        it meanwhile: a step's uncommitted changes are never lost to an eviction, only the
        cache entry, and the next load replays the ledger into a fresh book. `length`: the
        ledger's, just read (`_length_with`)."""
        book = self._books.get(subject)
        if length is None:
            length = await self.redis.llen(self.audit.ledger_key(subject))
        if book is None or book.version > length or not same(book):
            book = fresh()
        if book.version < length:
            await replay(book, await self.audit.ledger(subject, book.version))
        self._books[subject] = book
        return book

    async def _length_with(
        self, subject: str, names: Sequence[str]
    ) -> tuple[int, list[str | None]]:
        """The subject's ledger length and the values of the keys `names`, in one round trip."""
        reply = await self._length_with_script(keys=[self.audit.ledger_key(subject), *names])
        length, *values = reply  # (a missing key: MGET's false in Lua, nil in the reply)
        return int(length), values

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
