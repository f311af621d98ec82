"""The RAPS runner's bounded caches (`CacheBounds`): with room for one book, one pool file
and one floor snapshot, two Festa Fortuna sessions run side by side give the same records,
books and eligibility reports as an unbounded runner, and no cache outgrows its bound."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis

from bonusd.draws.caches import CacheBounds
from tests.raps.helpers import CREW, PID, SID, Site, bounded, fifty, local, make_site

TINY = CacheBounds(books=1, pools=1, floors=1, timetables=1)
LATER = "jackpot-2025-10-11"  # the series' second session, a week later


@pytest.fixture
async def pair(site: str, redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[Site, Site]]:
    """The same promotion on two sites: one runner with the smallest caches, one unbounded."""
    other = f"t{uuid.uuid4().hex[:10]}"
    tiny = bounded(await make_site(site, redis_url, tmp_path, "carry_over"), TINY)
    big = await make_site(other, redis_url, tmp_path, "carry_over")
    big = bounded(big, CacheBounds(books=1000, pools=1000, floors=1000))
    yield tiny, big
    await tiny.redis.aclose()
    await big.redis.aclose()
    sync = redis.Redis.from_url(redis_url)
    left = list(sync.scan_iter(match=f"bonusd:{{{other}}}:*", count=1000))
    if left:
        sync.delete(*left)


def within_bounds(s: Site) -> None:
    d = s.desk
    assert len(d._books) <= d.bounds.books
    assert len(d._floors) <= d.bounds.floors
    assert len(d._draws.pools) <= d.bounds.pools


def week_later(at: dt.datetime) -> dt.datetime:
    return at + dt.timedelta(days=7)


async def two_sessions(s: Site) -> list[Any]:
    """Jackpots of two sessions, a claim of the first acted on after the second's pick (so
    its book, pool files and floor snapshots are dropped and read again)."""
    d = s.desk
    for number, at in ((1, local(14, 30)), (2, local(15))):
        s.clock.set(at)
        await fifty(s, at)
        await d.run_jackpot(PID, SID, number)
        within_bounds(s)
    s.clock.set(local(15, 0, 40))
    await d.act(PID, SID, 2, "crew_arrived", CREW)
    for number, at in ((1, week_later(local(14, 30))), (2, week_later(local(15)))):
        s.clock.set(at)
        await fifty(s, at)
        await d.run_jackpot(PID, LATER, number)
        within_bounds(s)
    s.clock.set(week_later(local(15, 1)))
    await d.act(PID, SID, 1, "crew_arrived", CREW)  # the first session's book read again
    await d.act(PID, SID, 1, "verify_at_device", CREW)
    within_bounds(s)
    seen: list[Any] = []
    for session in (SID, LATER):
        book = await d.book(PID, session)
        seen.append((session, book.version, [(c.card, str(c.state)) for c in book.claims.values()]))
        seen.append([(r.kind, r.time, r.payload) for r in await d.audit.ledger(f"{PID}.{session}")])
        for number in (1, 2):
            seen.append(await d.eligibility_report(f"{PID}.{session}.j{number}"))
            within_bounds(s)
    return seen


async def test_the_smallest_caches_give_the_records_and_books_of_unbounded_ones(
    pair: tuple[Site, Site],
) -> None:
    tiny, big = pair
    assert await two_sessions(tiny) == await two_sessions(big)
    assert len(big.desk._books) == 2 and len(big.desk._floors) == 4  # nothing dropped there
