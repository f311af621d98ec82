"""Fixtures of the draw tests: `small`, the Golden Horse halfway draw over 20 members on a manual clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.runner import DrawRunner
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.store import PromotionStore
from tests.draws.helpers import (
    GH,
    HW,
    Site,
    seeds,
)
from tests.seal_helpers import SEAL


@pytest.fixture
async def small(site: str, redis_url: str) -> AsyncIterator[Site]:
    """The Golden Horse halfway draw over 20 members (C00..C19), clock at 12:00 on draw day."""
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    promotion = load_promotion(GH)
    store = PromotionStore(r, keys, [promotion])
    noon = dt.datetime.combine(promotion.draw(HW).date, dt.time(12, 0), promotion.zone)
    clock = ManualClock(noon)
    d = DrawRunner(
        redis=r,
        keys=keys,
        audit=AuditStore(r, keys),
        promotions=store,
        clock=clock,
        seal=SEAL,
        seed_source=seeds(7),
    )
    s = Site(r, keys, promotion, store, clock, d)
    await s.entry_pool(HW, {Tombola.POOLED: {f"C{n:02d}": 1 + n % 4 for n in range(20)}})
    yield s
    await r.aclose()
