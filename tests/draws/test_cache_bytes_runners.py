"""The draw and RAPS runners with byte budgets smaller than any book, pool file or floor
snapshot (`CacheBounds.*_mb`): each cache keeps only the entry last stored (alone, over
its budget), everything else is read again from Redis at each use, and the records, books
and eligibility reports are those of runners whose caches keep all."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis

from bonusd.audit.chain import Kind
from bonusd.draws.caches import CacheBounds
from tests.draws import helpers as dh
from tests.raps import helpers as rh

ONE_KEPT = CacheBounds(books_mb=1e-6, pools_mb=1e-6, floors_mb=1e-6)
ALL_KEPT = CacheBounds(books=1000, pools=1000, floors=1000, books_mb=1e4, pools_mb=1e4)
DRAWS = ("halfway", "bonus")


def drop_site(redis_url: str, name: str) -> None:
    sync = redis.Redis.from_url(redis_url)
    left = list(sync.scan_iter(match=f"bonusd:{{{name}}}:*", count=1000))
    if left:
        sync.delete(*left)


# -- draws: two Golden Horse draws side by side ----------------------------------------------
@pytest.fixture
async def draw_pair(site: str, redis_url: str) -> AsyncIterator[tuple[dh.Site, dh.Site]]:
    other = f"t{uuid.uuid4().hex[:10]}"
    small = await dh.bounded_site(site, redis_url, ONE_KEPT)
    big = await dh.bounded_site(other, redis_url, ALL_KEPT)
    yield small, big
    await small.redis.aclose()
    await big.redis.aclose()
    drop_site(redis_url, other)


async def both_draws(s: dh.Site) -> list[Any]:
    """Rounds of two draws interleaved, claims acted on, no-shows redrawn; what the books
    and ledgers then say."""
    d, at = s.desk, s.at
    s.clock.set(at("halfway", 19))
    await d.run_round(dh.PID, "halfway", 1)
    await d.load_prizes(dh.PID, "halfway", dh.POOLED1, dh.FIVE_PRIZES, dh.DESK)
    await d.book(dh.PID, "bonus")
    s.clock.set(at("halfway", 19, 0, 30))
    await d.act(dh.PID, "halfway", 1, "present", dh.CREW)
    await d.act(dh.PID, "halfway", 1, "verify", dh.CREW)
    s.clock.set(at("halfway", 20))
    await d.run_round(dh.PID, "halfway", 2)
    for number, hour in ((1, 19), (2, 20)):
        s.clock.set(at("bonus", hour))
        await d.run_round(dh.PID, "bonus", number)
    s.clock.set(at("bonus", 20, 5))
    assert await d.run_due(dh.PID, "halfway") > 0
    assert await d.run_due(dh.PID, "bonus") > 0
    seen: list[Any] = []
    for draw in DRAWS:
        book = await d.book(dh.PID, draw)
        seen.append((draw, book.version, [(c.card, str(c.state)) for c in book.claims.values()]))
        seen.append([(r.kind, r.time, r.payload) for r in await d.audit.ledger(book.subject)])
    return seen


async def test_draws_with_budgets_that_keep_one_entry_give_what_unbounded_ones_give(
    draw_pair: tuple[dh.Site, dh.Site],
) -> None:
    small, big = draw_pair
    assert await both_draws(small) == await both_draws(big)
    assert len(small.desk._books) <= 1 and len(small.desk.pools) <= 1  # the last one alone
    assert len(big.desk._books) == 2


async def test_a_pool_file_larger_than_the_budget_is_kept_alone(
    draw_pair: tuple[dh.Site, dh.Site],
) -> None:
    small, _ = draw_pair
    await both_draws(small)
    records = await small.desk.audit.ledger(f"{dh.PID}.halfway")
    commitment = next(r.payload["pool_commitment"] for r in records if r.kind == Kind.POOL)
    pool = await small.desk.pool_file(commitment)  # read from Redis, handed over
    assert pool.commitment == commitment and pool.members > 0
    assert list(small.desk.pools) == [commitment]


# -- RAPS: two Festa Fortuna sessions a week apart -------------------------------------------
@pytest.fixture
async def raps_pair(
    site: str, redis_url: str, tmp_path: Path
) -> AsyncIterator[tuple[rh.Site, rh.Site]]:
    other = f"t{uuid.uuid4().hex[:10]}"
    small = rh.bounded(await rh.make_site(site, redis_url, tmp_path, "carry_over"), ONE_KEPT)
    big = rh.bounded(await rh.make_site(other, redis_url, tmp_path, "carry_over"), ALL_KEPT)
    yield small, big
    await small.redis.aclose()
    await big.redis.aclose()
    drop_site(redis_url, other)


async def two_sessions(s: rh.Site) -> list[Any]:
    """Two jackpots in each of two sessions, a claim of the first acted on after the
    second's picks; what the books, ledgers and eligibility reports then say."""
    d, later = s.desk, "jackpot-2025-10-11"
    week = dt.timedelta(days=7)
    for session, shift in ((rh.SID, dt.timedelta()), (later, week)):
        for number, at in ((1, rh.local(14, 30)), (2, rh.local(15))):
            s.clock.set(at + shift)
            await rh.fifty(s, at + shift)
            await d.run_jackpot(rh.PID, session, number)
        if session == rh.SID:
            s.clock.set(rh.local(15, 0, 40))
            await d.act(rh.PID, rh.SID, 2, "crew_arrived", rh.CREW)
    s.clock.set(rh.local(15, 1) + week)
    await d.act(rh.PID, rh.SID, 1, "crew_arrived", rh.CREW)
    await d.act(rh.PID, rh.SID, 1, "verify_at_device", rh.CREW)
    seen: list[Any] = []
    for session in (rh.SID, later):
        book = await d.book(rh.PID, session)
        seen.append((book.version, [(c.card, str(c.state)) for c in book.claims.values()]))
        seen.append([(r.kind, r.time, r.payload) for r in await d.audit.ledger(book.subject)])
        for number in (1, 2):
            seen.append(await d.eligibility_report(f"{rh.PID}.{session}.j{number}"))
    return seen


async def test_raps_sessions_with_budgets_that_keep_one_entry_give_what_unbounded_ones_give(
    raps_pair: tuple[rh.Site, rh.Site],
) -> None:
    small, big = raps_pair
    assert await two_sessions(small) == await two_sessions(big)
    assert len(small.desk._books) <= 1 and len(small.desk._draws.pools) <= 1  # the last alone
    assert len(big.desk._books) == 2
