"""Floor screens paired by code, in headless Chromium against a running daemon: a new
signage page (no token anywhere) shows its pairing code big with its screen size, keeps
the same code across a reload, is paired from the desk's Screens tab, then shows its
area's content and survives a reload with no token in any URL it ever requested; the desk
lists it connected with its size and browser, moves it to another area (its stream
switches), and revokes it (it shows a new pairing code at once). Screenshots of each."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from playwright.async_api import Browser, Page, expect

from bonusd.access.auth import Role
from bonusd.access.sessions import COOKIE
from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.browser.helpers import (
    assert_no_page_errors,
    at,
    devices_csv,
    new_page,
    shot,
    wait_for,
)
from tests.browser.signage_helpers import assert_legible
from tests.daemon_helpers import Daemon, running

pytestmark = pytest.mark.browser
CODE = re.compile(r"^[2-9BCDFGHJKMNPQRSTWXYZ]{3}-[2-9BCDFGHJKMNPQRSTWXYZ]{3}$")
STAFF = "Naledi Mahlangu (staff 1042)"
# the pages' own cadences (pairing.js, desk-screens.js), passed on each page's clock (which
# the test moves on) instead of waited out: a waiting screen asks whether it was paired,
# the desk's Screens tab looks again
POLL_MS, LOOK_MS = 3000, 4000


async def own_clock_page(browser: Browser, *, width: int = 1920, height: int = 1080) -> Page:
    """A page whose time (its timers, `performance`) is Playwright's, moved on by the test."""
    page = await new_page(browser, width=width, height=height)
    await page.clock.install()
    return page


async def all_connected(d: Daemon) -> bool:
    """Every paired screen connected, none waiting, as the daemon lists them."""
    listing = await d.get("/screens")
    live = [s for s in listing["screens"] if s["connection"] != "revoked"]
    return listing["waiting"] == 0 and all(s["connection"] == "connected" for s in live)


async def open_desk(browser: Browser, d: Daemon, base: str) -> Page:
    """The desk page of a signed-in desk staff member (the session cookie sign-in gives)."""
    page = await own_clock_page(browser, width=1440, height=900)
    issued = await d.service.tokens.issue(
        role=Role.DESK, name=STAFF, staff="1042", now=d.service.clock.now(),
        valid_for=dt.timedelta(hours=12), idle_for=dt.timedelta(hours=1),
    )  # fmt: skip
    cookie = {"name": COOKIE, "value": issued.token, "url": base, "httpOnly": True}
    await page.context.add_cookies([{**cookie, "sameSite": "Strict"}])  # type: ignore[list-item]
    await page.goto(f"{base}/desk#screens")
    pasted = page.locator("#login input[name=token]")
    if await pasted.count() and await pasted.is_visible():  # a desk page taking a pasted token
        await pasted.fill(issued.token)
        await page.click("#login button[type=submit]")
    await expect(page.locator("#tabs")).to_be_visible()
    await page.click("nav button[data-tab=screens]")
    return page


async def pair_from_desk(desk: Page, code: str, area: str, name: str) -> None:
    form = desk.locator("form[name=pair-screen]")
    await form.locator("input[name=code]").fill(code)
    await form.locator("input[name=area]").fill(area)
    await form.locator("input[name=name]").fill(name)
    await form.locator("button[type=submit]").click()
    await expect(desk.locator("#screens-pair .result")).to_contain_text(f"Paired: “{name}”")


async def test_a_new_screen_is_paired_from_the_desk_moved_and_revoked(
    browser: Browser, gh_settings: Settings
) -> None:
    clock = ManualClock(at(11, 7, 12))
    async with running(gh_settings, clock) as d:
        r = await d.http.post(
            "/devices/import", content=devices_csv(), headers={"content-type": "text/csv"}
        )
        assert r.status_code == 200, r.text
        base = str(d.http.base_url).rstrip("/")

        # -- a new screen: its code, big, with its size; a reload keeps the code ------------
        screen = await own_clock_page(browser)
        asked: list[str] = []
        screen.on("request", lambda request: asked.append(request.url))
        screen.on("websocket", lambda ws: asked.append(ws.url))
        await screen.goto(f"{base}/signage")
        code = screen.locator("#pairing-code")
        await expect(code).to_have_text(CODE)
        await expect(screen.locator("#pairing-size")).to_have_text("1920 × 1080 · landscape")
        await expect(screen.locator("#pairing-command")).to_contain_text("bonusd screens pair")
        shown = await code.inner_text()
        await assert_legible(screen)
        await shot(screen, "signage-pairing")
        await screen.reload()
        await expect(code).to_have_text(shown)

        portrait = await own_clock_page(browser, width=1080, height=1920)
        await portrait.goto(f"{base}/signage")
        await expect(portrait.locator("#pairing-size")).to_have_text("1080 × 1920 · portrait")
        await expect(portrait.locator("#pairing-code")).to_have_text(CODE)
        portrait_code = await portrait.locator("#pairing-code").inner_text()
        assert portrait_code != shown  # two screens never show one code
        await shot(portrait, "signage-pairing-portrait")

        # -- paired from the desk: it shows its area's content, and a reload keeps it ------
        desk = await open_desk(browser, d, base)
        await expect(desk.locator("#screens-list")).to_contain_text("2 screen(s) show a pairing")
        await pair_from_desk(desk, shown.lower().replace("-", ""), "main", "Bar 3")
        await screen.clock.fast_forward(POLL_MS)  # its next look: paired
        await expect(screen.locator("body")).to_have_class("live")
        await expect(screen.locator("#pairing")).to_be_hidden()
        await expect(screen.locator("#promotion-name")).to_have_text("Mega Points Chase")
        await expect(screen.locator("#area")).to_have_text("Area main")
        await screen.reload()
        await expect(screen.locator("body")).to_have_class("live")
        await expect(screen.locator("#area")).to_have_text("Area main")
        await expect(screen.locator("#pairing")).to_be_hidden()
        assert screen.url == f"{base}/signage"
        secrets = [u for u in asked if re.search(r"bd_|sp_|token|secret", u)]
        assert not secrets, secrets  # no credential or pairing secret in any URL asked

        await pair_from_desk(desk, portrait_code, "bar", "Cashier queue")
        await portrait.clock.fast_forward(POLL_MS)
        await expect(portrait.locator("#area")).to_have_text("Area bar")
        await wait_for(lambda: all_connected(d), "both screens connected")
        await desk.clock.fast_forward(LOOK_MS)  # the desk's next look at the screens

        # -- the desk's list: connected, with size, browser and who paired it --------------
        bar3 = desk.locator("#screens-list tr", has_text="Bar 3")
        await expect(bar3).to_contain_text("connected")
        await expect(bar3).to_contain_text("1920 × 1080")
        await expect(bar3).to_contain_text("HeadlessChrome")
        await expect(bar3).to_contain_text(STAFF)
        await expect(desk.locator("#screens-list tr", has_text="Cashier queue")).to_contain_text(
            "1080 × 1920"
        )
        await expect(desk.locator("#screens-list")).to_contain_text("No screen is waiting")
        await shot(desk, "desk-screens")

        # -- moved mid-event: the screen's stream switches to the new area ------------------
        await bar3.locator("select").select_option("bar")
        await bar3.locator("button", has_text="Move").click()
        await expect(screen.locator("#area")).to_have_text("Area bar")
        await expect(screen.locator("body")).to_have_class("live")
        await expect(bar3).to_contain_text("bar")

        # -- every machine credential, with its last use -----------------------------------
        year = dt.timedelta(days=365)
        await d.service.tokens.issue(
            role=Role.KIOSK, name="Kiosk entrance", now=clock.now(), valid_for=year
        )
        await d.service.tokens.issue(
            role=Role.APP, name="Casino app server 1", now=clock.now(), valid_for=year
        )
        await desk.click("nav button[data-tab=live]")
        await desk.click("nav button[data-tab=screens]")
        credentials = desk.locator("#credentials")
        await expect(bar3).to_contain_text("connected")  # reconnected after the move
        await expect(credentials).to_contain_text("Kiosk entrance")
        await expect(credentials).to_contain_text("app server")
        await credentials.scroll_into_view_if_needed()
        await shot(desk, "desk-credentials")

        # -- revoked: the screen shows a new pairing code at once ---------------------------
        desk.on("dialog", lambda dialog: dialog.accept())
        await bar3.locator("button", has_text="Revoke").click()
        await expect(screen.locator("#pairing")).to_be_visible()
        await expect(screen.locator("#pairing-note")).to_contain_text("pair it again")
        await expect(screen.locator("#pairing-code")).to_have_text(CODE)
        assert await screen.locator("#pairing-code").inner_text() != shown
        await expect(screen.locator("#promotion-name")).not_to_be_visible()
        await shot(screen, "signage-pairing-revoked")
        await expect(desk.locator("#credentials tr", has_text="Bar 3")).to_contain_text("revoked ")
        await expect(portrait.locator("body")).to_have_class("live")  # the other one stays

        for page in (screen, portrait, desk):
            assert_no_page_errors(page)
