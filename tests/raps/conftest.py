"""Fixtures of the RAPS tests: `s`, a site with a RAPS runner on a test copy of Festa Fortuna (tests/raps/helpers.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.raps.helpers import (
    Site,
    make_site,
)


@pytest.fixture
async def s(site: str, redis_url: str, tmp_path: Path) -> AsyncIterator[Site]:
    one = await make_site(site, redis_url, tmp_path, "carry_over")
    yield one
    await one.redis.aclose()
