"""The live desk in headless Chromium against a running daemon (docs/push.md, "The desk's
change marker"): the promotions desk open on the Draws tab follows a draw's state changes
made elsewhere without a reload. The scheduler closes the entry bin at 19:00 on the test
clock and draws round 1; another desk client runs round 2 through the API. Each time the
page shows the new state (frozen, the pool hash, the round's winners) within 1 s of the
change being readable from the API, "Run round N now" is disabled with its reason, and
what the user typed into an open form and the scroll position are kept."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.browser.helpers import (
    GH,
    WAIT_MS,
    assert_no_page_errors,
    at,
    golden_horse_week,
    new_page,
    shot,
)
from tests.daemon_helpers import Daemon, running
from tests.staff_helpers import add_staff, sign_in_page
from tests.telemetry_helpers import Publisher

pytestmark = pytest.mark.browser
logger = logging.getLogger(__name__)
BOOK = f"/promotions/{GH}/draws/halfway/book"
LIVE_MS = 1000  # the desk reflects a draw's state change within 1 s (issue 17, item 4)
HALFWAY_ROW = "#promotions tr:has(code:text-is('halfway'))"

# true once the page shows round `n` drawn: its winners in the panel and its button
# disabled with the reason; answers the page's wall clock then (ms)
SHOWS_DRAWN = """([n, winners, pool, tombola]) => {
  const rows = [...document.querySelectorAll('#promotions tr')].filter(
    (tr) => [...tr.querySelectorAll('code')].some((c) => c.textContent === 'halfway'));
  const listed = rows.length === 1 && rows[0].textContent.includes('frozen')
    && rows[0].textContent.includes(pool.slice(0, 16));
  const run = document.querySelector(`#draw-panel button[name=run-round-${n}]`);
  const picked = [...document.querySelectorAll('#draw-panel tbody tr')].filter(
    (tr) => [...tr.cells].some((td) => td.textContent === `${tombola} / ${n}`)).length;
  const ok = listed && run && run.disabled && /^drawn at \\d\\d:\\d\\d$/.test(run.title)
    && picked === winners;
  return ok ? Date.now() : false;
}"""


async def desk_on_draws(browser: Browser, base: str, d: Daemon) -> Page:
    """The desk signed in, on the Draws tab with the Halfway draw open, stream live."""
    await add_staff(d.service, "1042", "Naledi Mahlangu", "desk")
    page = await new_page(browser, width=1440, height=900)
    await page.goto(f"{base}/desk")
    await sign_in_page(page, "1042")
    await expect(page.locator("#tabs")).to_be_visible()
    await page.click("button[name=open-halfway]")
    await expect(page.locator("#draw-panel")).to_contain_text("Halfway draw")
    await expect(page.locator("#live")).to_have_text("live")
    return page


async def seen_by_api(d: Daemon, round_no: int) -> tuple[float, dict[str, Any]]:
    """Poll the API (every 20 ms) until the draw is frozen with round `round_no` drawn:
    the wall clock (ms) when that was first readable, and the book."""
    while True:
        book, detail = await asyncio.gather(d.get(BOOK), d.get(f"/promotions/{GH}"))
        state = next(x for x in detail["draws"] if x["id"] == "halfway")
        picks = [r["picks"] for r in book["rounds"] if r["round"] == round_no]
        if state["state"] == "frozen" and picks and all(picks):
            return time.time() * 1000, book | {"pool_sha256": state["pool_sha256"]}
        await asyncio.sleep(0.02)


async def page_shows(page: Page, round_no: int, book: dict[str, Any]) -> float:
    """The page's wall clock (ms) when it first showed round `round_no` drawn (polled
    every animation frame)."""
    claims = [c for c in book["claims"] if c["round"] == round_no]
    arg = [round_no, len(claims), book["pool_sha256"], claims[0]["tombola"]]
    shown = await page.wait_for_function(SHOWS_DRAWN, arg=arg, polling="raf", timeout=WAIT_MS)
    return float(await shown.json_value())


async def follow(
    page: Page, d: Daemon, round_no: int, change: Callable[[], Awaitable[object]]
) -> tuple[float, float]:
    """Make `change` and measure: (ms from the change being readable from
    the API to the page showing it, ms from making the change)."""
    started = time.time() * 1000
    api = asyncio.ensure_future(seen_by_api(d, round_no))
    await change()
    seen, book = await asyncio.wait_for(api, WAIT_MS / 1000)
    shown = await page_shows(page, round_no, book)
    return shown - seen, shown - started


async def test_the_desk_follows_a_draw_without_reload(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        clock.set(at(11, 7, 18, 40))
        base = str(d.http.base_url).rstrip("/")
        page = await desk_on_draws(browser, base, d)
        panel = page.locator("#draw-panel")

        # before 19:00: the bin is open, nothing frozen; running a round is not possible
        await expect(page.locator(HALFWAY_ROW)).to_contain_text("activation")
        await expect(panel).to_contain_text("not frozen")
        for n in (1, 2, 3):
            run = panel.locator(f"button[name=run-round-{n}]")
            await expect(run).to_be_disabled()
            await expect(run).to_have_attribute("title", "the entry bin closes at 19:00")
            reason = panel.locator(f".reason[data-round='{n}']")
            await expect(reason).to_have_text(re.compile(r"^\s*the entry bin closes at 19:00$"))

        # the desk member is typing into a form, scrolled to the draw; no reload may lose it
        values = panel.locator("form[name=prizes] input[name=values]")
        await values.fill("500, 1000, 2000")
        await page.evaluate("window.__loaded = 'once'")
        await page.evaluate("window.scrollTo(0, 400)")
        scrolled = await page.evaluate("window.scrollY")

        # the scheduler closes the bin at 19:00 and draws round 1 (five winners)
        async def close_the_bin() -> None:
            clock.set(at(11, 7, 19))

        lag_1, total_1 = await follow(page, d, 1, close_the_bin)
        run_1 = panel.locator("button[name=run-round-1]")
        await expect(run_1).to_have_attribute("title", "drawn at 19:00")
        await expect(panel.locator(".reason[data-round='1']")).to_contain_text("drawn at 19:00")
        await expect(panel.locator("button[name=run-round-2]")).to_be_enabled()
        await shot(page, "desk-live-frozen")

        # another desk client runs round 2 through the API, an hour early
        other = await d.client(Role.DESK)
        try:

            async def run_round_2() -> None:
                r = await other.post(f"/promotions/{GH}/draws/halfway/run", json={"round": 2})
                assert r.status_code == 200, r.text

            lag_2, total_2 = await follow(page, d, 2, run_round_2)
        finally:
            await other.aclose()
        await expect(panel.locator("button[name=run-round-2]")).to_have_attribute(
            "title", "drawn at 19:00"
        )

        logger.warning(
            "desk live: page after the API showed the change: %.0f ms (bin close and round 1),"
            " %.0f ms (round 2 by another client); after making the change: %.0f, %.0f ms",
            lag_1,
            lag_2,
            total_1,
            total_2,
        )
        assert lag_1 < LIVE_MS, f"the desk showed the frozen draw {lag_1:.0f} ms late"
        assert lag_2 < LIVE_MS, f"the desk showed round 2 {lag_2:.0f} ms late"
        # no reload: the page's own state, the typed values and the scroll are still there
        assert await page.evaluate("window.__loaded") == "once"
        await expect(values).to_have_value("500, 1000, 2000")
        assert await page.evaluate("window.scrollY") == scrolled
        assert await page.evaluate("window.deskWatch.refreshes") >= 2
        assert_no_page_errors(page)
