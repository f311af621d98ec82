"""The draw runner's bounded caches (`CacheBounds`): with room for one book and one pool
file, two Golden Horse draws run side by side give the same records and the same books as
an unbounded runner, the caches never hold more than their bound, and a subject's lock
does not outlive its users."""

from __future__ import annotations

import datetime as dt
import gc
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis

from bonusd.draws.caches import CacheBounds
from tests.draws.helpers import CREW, DESK, FIVE_PRIZES, PID, POOLED1, Site, bounded_site

TINY = CacheBounds(books=1, pools=1, floors=1, timetables=1)
DRAWS = ("halfway", "bonus")


@pytest.fixture
async def pair(site: str, redis_url: str) -> AsyncIterator[tuple[Site, Site]]:
    """The same promotion on two sites: one runner with the smallest caches, one unbounded."""
    other = f"t{uuid.uuid4().hex[:10]}"
    tiny = await bounded_site(site, redis_url, TINY)
    big = await bounded_site(other, redis_url, CacheBounds(books=1000, pools=1000))
    yield tiny, big
    await tiny.redis.aclose()
    await big.redis.aclose()
    sync = redis.Redis.from_url(redis_url)
    left = list(sync.scan_iter(match=f"bonusd:{{{other}}}:*", count=1000))
    if left:
        sync.delete(*left)


def within_bounds(s: Site) -> None:
    assert len(s.desk._books) <= s.desk.bounds.books
    assert len(s.desk.pools) <= s.desk.bounds.pools


async def both_draws(s: Site) -> list[Any]:
    """Rounds of two draws interleaved, claims acted on after the other draw's steps (so
    each book and pool file is dropped and read again), and what the books then say."""
    d, at = s.desk, s.at
    s.clock.set(at("halfway", 19))
    await d.run_round(PID, "halfway", 1)
    await d.load_prizes(PID, "halfway", POOLED1, FIVE_PRIZES, DESK)
    await d.book(PID, "bonus")  # the halfway book and pool file are dropped
    within_bounds(s)
    s.clock.set(at("halfway", 19, 0, 30))
    await d.act(PID, "halfway", 1, "present", CREW)
    await d.act(PID, "halfway", 1, "verify", CREW)
    s.clock.set(at("halfway", 20))
    await d.run_round(PID, "halfway", 2)
    within_bounds(s)
    for number, hour in ((1, 19), (2, 20)):
        s.clock.set(at("bonus", hour))
        await d.run_round(PID, "bonus", number)
        within_bounds(s)
    s.clock.set(at("bonus", 20, 5))
    assert await d.run_due(PID, "halfway") > 0  # its no-shows redrawn from pools read again
    assert await d.run_due(PID, "bonus") > 0
    within_bounds(s)
    seen: list[Any] = []
    for draw in DRAWS:
        book = await d.book(PID, draw)
        claims = [(c.card, str(c.state)) for c in book.claims.values()]
        seen.append((draw, book.version, claims))
        ledger = await d.audit.ledger(f"{PID}.{draw}")
        seen.append([(r.kind, r.time, r.payload) for r in ledger])
    within_bounds(s)
    return seen


async def test_the_smallest_caches_give_the_records_and_books_of_unbounded_ones(
    pair: tuple[Site, Site],
) -> None:
    tiny, big = pair
    assert await both_draws(tiny) == await both_draws(big)
    assert len(big.desk._books) == 2  # the unbounded runner kept both


async def test_locks_live_only_while_used(pair: tuple[Site, Site]) -> None:
    tiny, _ = pair
    d = tiny.desk
    lock = d._lock("x")
    assert d._lock("x") is lock  # one lock per subject while anyone holds it
    async with lock:
        assert d._lock("x") is lock
    del lock
    gc.collect()
    assert "x" not in d._locks
    await d.commit_seeds(PID, "halfway")
    gc.collect()
    assert len(d._locks) == 0  # steps done: nothing kept per subject


async def test_books_and_pool_files_unused_for_the_idle_time_are_dropped(
    pair: tuple[Site, Site],
) -> None:
    _, big = pair  # room for a thousand: only the idle time lets them go
    d, at = big.desk, big.at
    big.clock.set(at("halfway", 19))
    await d.run_round(PID, "halfway", 1)
    assert d.cached(f"{PID}.halfway") is not None
    assert len(d.pools) >= 1
    big.clock.set(at("halfway", 19) + dt.timedelta(seconds=d.bounds.idle_s - 60))
    assert d.cached(f"{PID}.halfway") is not None  # not idle long enough yet
    await d.book(PID, "halfway")  # used: its idle time starts again
    big.clock.set(at("halfway", 19) + dt.timedelta(seconds=2 * d.bounds.idle_s - 120))
    assert d.cached(f"{PID}.halfway") is not None
    big.clock.set(at("halfway", 19) + dt.timedelta(seconds=2 * d.bounds.idle_s))
    assert d.cached(f"{PID}.halfway") is None  # idle for longer than BONUSD_DESK_IDLE_S
    assert len(d.pools) == 0
    book = await d.book(PID, "halfway")  # read again from its ledger when next needed
    assert [c.card for c in book.claims.values()] != []
