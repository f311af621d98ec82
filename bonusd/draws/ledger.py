"""The step shared by the draw desk and the jackpot desk: load a book, run a pure command
on it, commit its entries against the ledger length it read (with the book's next
deadline in the `deadlines` index), and retry from a fresh book when another writer got
there first. Also the secret seeds both desks keep (`SET NX`, then read back)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar, cast

from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Entry
from bonusd.audit.store import AuditStore, StaleLedger
from bonusd.draws.fairness import SeedSource, new_seed
from bonusd.errors import ConflictError

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


async def stored_seeds(
    redis: Redis, names: Sequence[str], *, create: bool, source: SeedSource
) -> list[bytes | None]:
    """The seeds stored under `names`; with `create`, fresh secrets first fill the names
    that hold none (SET NX), so racing daemons agree on whichever landed first."""
    if create:
        async with redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.set(name, new_seed(source).hex(), nx=True)
            await pipe.execute()
    values = cast(list[str | None], await redis.mget(names))
    return [bytes.fromhex(v) if v else None for v in values]
