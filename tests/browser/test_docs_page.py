"""/docs in headless Chromium with every other host unreachable: Swagger UI renders the
API from the daemon's own pinned copy (bonusd/api/docs.py), under its strict CSP (no
violation reported), and the page asks for nothing but this daemon's files."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.async_api import Browser, Route, expect

from tests.browser.helpers import assert_no_page_errors, new_page, shot
from tests.daemon_helpers import Daemon

pytestmark = pytest.mark.browser


async def test_docs_render_offline_from_the_local_copy(browser: Browser, daemon: Daemon) -> None:
    base = str(daemon.http.base_url).rstrip("/")
    own = urlsplit(base).netloc
    elsewhere: list[str] = []

    async def offline(route: Route) -> None:
        if urlsplit(route.request.url).netloc == own or route.request.url.startswith("data:"):
            await route.continue_()
        else:  # as on a floor network without internet
            elsewhere.append(route.request.url)
            await route.abort("internetdisconnected")

    page = await new_page(browser, width=1280, height=900)
    await page.route("**/*", offline)
    await page.goto(f"{base}/docs")
    await expect(page.locator(".swagger-ui .info .title")).to_contain_text("bonusd")
    await expect(page.locator(".swagger-ui")).to_contain_text("/members/import")
    await expect(page.locator(".swagger-ui .btn.authorize")).to_be_visible()
    await shot(page, "docs")
    assert not elsewhere, elsewhere
    assert_no_page_errors(page)  # no CSP violation, no script error
