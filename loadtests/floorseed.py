"""A floor for the RAPS benchmark: players put on it through the ingest's own store."""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np
import redis.asyncio as aioredis

from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import FloorEvent
from bonusd.infra.keys import Keys
from bonusd.promotions import Promotion


def bench_store(r: aioredis.Redis, keys: Keys) -> FloorStore:
    return FloorStore(
        r, keys, dedup_ttl_s=3600, deadletter_maxlen=100, deadletter_payload_bytes=100
    )


async def seed_floor(
    r: aioredis.Redis, keys: Keys, promotion: Promotion, cards: list[str], at: dt.datetime
) -> list[FloorEvent]:
    """`len(cards)` players on the floor at instant `at`, written through the ingest's own
    store (sessions, active sets, gaming-day totals): one rated game each, 85 % at EGMs and
    15 % at table seats; 60 % in the main area, 30 % smoking, 10 % in a salon outside the
    session; last play 0-8 minutes before `at`; day spend log-normal around R300. Returns
    each player's game (where they sit), for `play_on`."""
    rng = np.random.default_rng(13)
    n = len(cards)
    table = rng.random(n) < 0.15
    area = rng.choice(["main", "smoking", "salon"], size=n, p=[0.6, 0.3, 0.1])
    ago = rng.integers(0, 8 * 60_000, size=n)
    spend = rng.lognormal(np.log(30_000), 0.8, size=n).astype(int)
    at_ms = int(at.timestamp() * 1000)
    day = promotion.calendar.gaming_day(at).isoformat()
    floor = bench_store(r, keys)
    events = [
        FloorEvent(
            id=f"raps-{i}",
            type="game",
            kind="table" if table[i] else "egm",
            device=f"TBL-{i // 7}" if table[i] else f"EGM-{i}",
            card=cards[i],
            ts_ms=at_ms - int(ago[i]),
            gaming_day=day,
            area=str(area[i]),
            seat=i % 7 + 1 if table[i] else 0,
            wager_cents=int(spend[i]),
            win_cents=0,
            points=int(spend[i]) // 100,
        )
        for i in range(n)
    ]
    for start in range(0, n, 2_000):
        await floor.apply_batch(events[start : start + 2_000], [])
    return events


async def play_on(
    r: aioredis.Redis, keys: Keys, layout: list[FloorEvent], at: dt.datetime, *, n: int, seed: int
) -> None:
    """`n` players of a seeded floor each play one more rated game where they sit, in the
    minute before `at` (one ingest batch): the churn a floor sees between two picks."""
    rng = np.random.default_rng(seed)
    at_ms = int(at.timestamp() * 1000)
    who = rng.choice(len(layout), size=min(n, len(layout)), replace=False)
    ago = rng.integers(0, 60_000, size=len(who))
    events = [
        dataclasses.replace(
            layout[i], id=f"churn-{seed}-{i}", ts_ms=at_ms - int(a), wager_cents=500, points=5
        )
        for i, a in zip(who.tolist(), ago.tolist(), strict=True)
    ]
    if events:
        await bench_store(r, keys).apply_batch(events, [])
