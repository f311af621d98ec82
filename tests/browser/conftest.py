"""The browser tests' harness: Debian's headless Chromium driven by Playwright, a daemon
running the Golden Horse promotion on a floor built from real telemetry, and screenshots.

Chromium is the system's `/usr/bin/chromium` (installed by `make test` through
`scripts/ensure-services.sh --with-chromium`); Playwright only drives it, so
`playwright install` is never run. Each test launches its own browser (about a second).

Screenshots of every page in every state go to docs/screens/ (see its README), so a reader
sees the pages without running anything.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright, expect

from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.browser.helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    GH,
    WAIT_MS,
    promotions_folder,
)
from tests.telemetry_helpers import Publisher

expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which(CHROMIUM) or CHROMIUM
    if not Path(path).is_file():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: run the tests with `make test`, which installs "
            "Debian's chromium (scripts/ensure-services.sh --with-chromium), or "
            "`sudo apt-get install -y chromium`"
        )
    return path


@pytest.fixture
async def browser(chromium_path: str) -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The tests move the daemon's clock by hours between steps while nobody touches the
    pages: here a staff sign-in lasts a week, however idle (test_staff_signin.py puts the
    defaults back to show the ends of a session)."""
    return settings.model_copy(update={"staff_idle_s": 86_400, "staff_shift_s": 7 * 86_400})


# -- a Golden Horse floor ------------------------------------------------------------------------


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    return settings.model_copy(update={"promotions": promotions_folder(tmp_path, site, GH)})


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()
