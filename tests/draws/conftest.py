"""Fixtures of the draw tests: `small`, the Golden Horse halfway draw over 20 members on a manual clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from tests.browser.helpers import promotions_folder
from tests.draws.helpers import CLOSES, HW, PID, HttpDesk, Site, bounded_site


@pytest.fixture
async def small(site: str, redis_url: str) -> AsyncIterator[Site]:
    """The Golden Horse halfway draw over 20 members (C00..C19), clock at 12:00 on draw day."""
    s = await bounded_site(site, redis_url, draws=(HW,))
    yield s
    await s.redis.aclose()


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
