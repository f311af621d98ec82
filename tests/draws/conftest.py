"""Fixtures of the draw tests: `small`, the Golden Horse halfway draw over 20 members on a manual clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.runner import DrawRunner
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.store import PromotionStore
from bonusd.service.root import Service
from bonusd.settings import Settings
from tests.browser.helpers import promotions_folder
from tests.draws.helpers import CLOSES, GH, HW, PID, HttpDesk, Site, seeds
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


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    return settings.model_copy(update={"promotions": promotions_folder(tmp_path, site, PID)})


@pytest.fixture
async def desk(gh_settings: Settings, redis_url: str) -> AsyncIterator[HttpDesk]:
    clock = ManualClock(CLOSES - dt.timedelta(minutes=8))  # the report: 8 minutes early
    r = aioredis.Redis.from_url(redis_url)
    async with Service(gh_settings, clock=clock) as service:
        d = HttpDesk(service, clock, r)
        await d.issue()
        await service.draws.commit_seeds(PID, HW)  # activation opened at 08:00
        try:
            yield d
        finally:
            await d.http.aclose()
            await r.aclose()
