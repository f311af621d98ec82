"""The desks' caches bounded by bytes as well as by count (`DeskCache`, `SizedLRU`): over
its budget a cache drops its least recently used entries; an entry larger than the whole
budget is kept alone; idle entries go on reads too; and the size
functions are near what tracemalloc finds the entries hold. The runners with such budgets:
test_cache_bytes_runners.py."""

from __future__ import annotations

import datetime as dt
import gc
import random
import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from bonusd.draws.caches import (
    DeskCache,
    SizedLRU,
    book_bytes,
    pool_bytes,
    snapshot_bytes,
    texts_bytes,
)
from bonusd.draws.fairness import Pool
from bonusd.draws.poolfile import parse_pool
from bonusd.raps.rules import FloorPlayer, PlayKind, RapsRules
from bonusd.raps.snapshot import FloorSnapshot, judge

KB = 1024


def sized(count: int, budget: float) -> tuple[DeskCache[str, bytes], list[float]]:
    """A cache of byte strings sized by their length, on a clock the test moves."""
    now = [0.0]
    return DeskCache(count, budget, 60.0, lambda: now[0], len), now


def test_over_its_budget_the_least_recently_used_entries_go() -> None:
    cache, _ = sized(count=100, budget=10 * KB)
    for name in "abcd":
        cache[name] = bytes(3 * KB)
    assert list(cache) == ["b", "c", "d"]  # a went: 12 KB > 10 KB
    assert cache.get("b") is not None  # used: now the most recent
    cache["e"] = bytes(4 * KB)
    assert sorted(cache) == ["b", "d", "e"]  # c, the least recently used, went
    assert cache.currsize <= 10 * KB


def test_the_count_still_bounds_small_entries() -> None:
    cache, _ = sized(count=2, budget=10 * KB)
    for name in "abc":
        cache[name] = b"x"
    assert list(cache) == ["b", "c"]


def test_an_entry_larger_than_the_budget_is_kept_alone() -> None:
    """The entry in use stays (a book dropped at every step would replay its whole ledger
    each time); it pushes every other entry out."""
    cache, _ = sized(count=10, budget=10 * KB)
    cache["a"], cache["b"] = bytes(KB), bytes(KB)
    big = bytes(11 * KB)
    cache["a"] = big
    assert list(cache) == ["a"] and cache["a"] is big
    assert cache.currsize == 10 * KB
    cache["b"] = bytes(KB)  # the next one pushes it out
    assert list(cache) == ["b"]
    lru: SizedLRU[str, bytes] = SizedLRU(10, 10 * KB, len)
    lru["a"] = big
    assert list(lru) == ["a"]
    lru["b"] = bytes(KB)
    assert list(lru) == ["b"]


def test_idle_entries_go_when_the_cache_is_read_not_only_when_it_is_written() -> None:
    cache, now = sized(count=10, budget=10 * KB)
    cache["a"] = bytes(KB)
    now[0] = 61.0
    assert cache.get("b") is None  # a read of anything lets the idle ones go
    assert len(cache) == 0 and cache.currsize == 0


# -- the sizes: near what the entries hold -------------------------------------------------
AT = dt.datetime(2025, 10, 25, 20, 0, tzinfo=dt.UTC)


def floor_of(players: int) -> list[FloorPlayer]:
    rng = random.Random(players)
    cards = rng.sample(range(10**9, 2 * 10**9), players)
    return [
        FloorPlayer(
            card=str(card),
            kind=PlayKind.EGM,
            area=rng.choice(["main", "smoking", "vip"]),
            device=f"EGM-{n:05d}",
            bank=f"B{n // 10:04d}",
            seat=None,
            last_play=AT - dt.timedelta(seconds=rng.randrange(600)),
            spend_cents=rng.randrange(50_000),
            tier=rng.choice(["gold", "silver", "classic"]),
        )
        for n, card in enumerate(cards)
    ]


def traced(make: Callable[[], Any]) -> tuple[Any, int]:
    """What `make` returns and the bytes it still holds (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        gc.collect()
        return made, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def near(estimate: int, held: int) -> bool:
    return 0.8 * held <= estimate <= 1.4 * held


def test_a_floor_snapshot_is_sized_near_what_it_holds_lean_and_judged() -> None:
    raw = FloorSnapshot.from_players(AT, floor_of(4000)).serialise()
    lean, held = traced(lambda: FloorSnapshot.parse(raw))
    assert near(snapshot_bytes(lean), held)
    kept = FloorSnapshot.parse(raw)
    first = snapshot_bytes(kept)
    assert snapshot_bytes(kept) == first  # kept on the snapshot: not walked again
    judge(kept, RapsRules())
    assert snapshot_bytes(kept) > 3 * first  # sized again once it made its field table

    def judged() -> FloorSnapshot:
        snap = FloorSnapshot.parse(raw)
        judge(snap, RapsRules())
        return snap

    snap, held = traced(judged)
    assert near(snapshot_bytes(snap), held)
    assert snapshot_bytes(snap) > 3 * snapshot_bytes(lean)  # its field table counts


def test_a_pool_file_is_sized_near_what_it_holds() -> None:
    cards = tuple(sorted(str(c) for c in random.Random(1).sample(range(10**9, 2 * 10**9), 50_000)))
    raw = Pool("p.d", "main", 1, cards, np.full(len(cards), 5, dtype=np.int64)).serialise()
    pool, held = traced(lambda: parse_pool(raw))
    pool.cumulative  # noqa: B018 - made at its first pick: counted from the start
    assert near(pool_bytes(pool), held + pool.cumulative.nbytes)


def test_a_book_counts_each_pool_and_floor_it_holds_once() -> None:
    pool = Pool.freeze("p.d", "main", {f"C{n:04d}": 1 for n in range(1000)})
    floor = FloorSnapshot.from_players(AT, floor_of(100))
    rounds = {key: SimpleNamespace(pool=pool) for key in (("main", 1), ("main", 2), ("bonus", 1))}
    draw_book = SimpleNamespace(version=10, draw=SimpleNamespace(rounds=rounds))
    empty = book_bytes(SimpleNamespace(version=10))
    assert book_bytes(draw_book) == empty + pool_bytes(pool)  # three rounds, one pool
    jackpots = {
        n: SimpleNamespace(jackpot=SimpleNamespace(pool=pool), floor=floor if n < 3 else None)
        for n in range(1, 15)
    }
    session = SimpleNamespace(version=10, jackpots=jackpots)
    assert book_bytes(session) == empty + pool_bytes(pool) + snapshot_bytes(floor)
    assert texts_bytes(pool.cards) > 1000 * len("C0000")
