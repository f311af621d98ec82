"""Staff sign-in on the crew handheld and the promotions desk, in headless Chromium against a
running daemon: the sign-in form (a badge reader types the number and Enter, the PIN on the
pad), a wrong PIN and the lock after five, signing out, the desk refusing a crew account,
the admin's staff panel, a disabled account's open page signed out within a second, a
session ended by inactivity on the daemon's clock; and no token, session id or PIN in any
URL the pages request, nor anywhere a page script can read."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, Request, WebSocket, expect

from bonusd.access.sessions import COOKIE
from bonusd.clocks.clock import ManualClock
from bonusd.push import hub
from bonusd.settings import Settings
from tests.browser.helpers import assert_no_page_errors, at, new_page, shot
from tests.daemon_helpers import Daemon, running
from tests.staff_helpers import PIN, add_staff, sign_in_page

pytestmark = pytest.mark.browser
CREW_PIN = "135792"


@pytest.fixture
async def staffed(gh_settings: Settings) -> AsyncIterator[Daemon]:
    clock = ManualClock(at(11, 7, 18, 30))
    defaults = {"staff_idle_s": 15 * 60, "staff_shift_s": 12 * 3600}
    async with running(gh_settings.model_copy(update=defaults), clock) as d:
        await add_staff(d.service, "2001", "Sipho Dube", "crew", CREW_PIN)
        await add_staff(d.service, "2002", "Lerato Khumalo", "crew", CREW_PIN)
        await add_staff(d.service, "1042", "Naledi Mahlangu", "desk")
        await add_staff(d.service, "9001", "Ruth Mokoena", "admin")
        yield d


class Seen:
    """Every URL a page asked for (HTTP and websockets), and the request bodies."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.bodies: list[str] = []

    def watch(self, page: Page) -> Page:
        page.on("request", self._request)
        page.on("websocket", self._websocket)
        return page

    def _request(self, request: Request) -> None:
        self.urls.append(request.url)
        if request.post_data:
            self.bodies.append(request.post_data)

    def _websocket(self, ws: WebSocket) -> None:
        self.urls.append(ws.url)


async def crew_page(browser: Browser, base: str, seen: Seen) -> Page:
    page = seen.watch(await new_page(browser, width=390, height=844, mobile=True))
    await page.goto(f"{base}/crew")
    await expect(page.locator("#login")).to_be_visible()
    return page


async def session_of(page: Page) -> str:
    """The session cookie the browser holds (Playwright sees it; the page's scripts do not)."""
    cookies = {c["name"]: c for c in await page.context.cookies()}
    cookie = cookies[COOKIE]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert await page.evaluate("document.cookie") == ""
    stored = await page.evaluate(
        "JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])"
    )
    assert cookie["value"] not in stored and "bd_" not in stored
    return cookie["value"]


async def test_crew_signs_in_with_a_badge_and_the_pin_pad_and_is_locked_after_five_wrong(
    browser: Browser, staffed: Daemon
) -> None:
    base = str(staffed.http.base_url).rstrip("/")
    seen = Seen()
    crew = await crew_page(browser, base, seen)
    await expect(crew.locator("#login input[name=staff]")).to_be_focused()
    await shot(crew, "crew-login")
    # a wrong PIN: the server's words, the PIN field emptied for the next try
    await crew.locator("#login input[name=staff]").fill("2002")
    await crew.locator("#login input[name=staff]").press("Enter")  # the badge reader's Enter
    await expect(crew.locator("#login input[name=pin]")).to_be_focused()
    for digit in "000000":
        await crew.locator(f"#login button[data-digit='{digit}']").click()
    await crew.locator("#login button[type=submit]").click()
    error = crew.locator("#login-error")
    await expect(error).to_have_text(
        "Staff number or PIN not recognised: 4 more wrong PIN(s) lock it for 15 minutes"
    )
    await expect(crew.locator("#login input[name=pin]")).to_have_value("")
    await shot(crew, "crew-login-wrong-pin")
    for left in (3, 2, 1):
        await crew.locator("#login input[name=pin]").fill("999999")
        await crew.locator("#login button[type=submit]").click()
        await expect(error).to_contain_text(f"{left} more wrong PIN(s)")
    await crew.locator("#login input[name=pin]").fill("999999")
    await crew.locator("#login button[type=submit]").click()
    await expect(error).to_contain_text("locked for 15 more minute(s)")
    await crew.locator("#login input[name=pin]").fill(CREW_PIN)  # the right one: still locked
    await crew.locator("#login button[type=submit]").click()
    await expect(error).to_contain_text("locked")
    await shot(crew, "crew-login-locked")

    # another crew member signs in on the same handheld: named in the bar, live
    await crew.locator("#login input[name=staff]").fill("")
    await sign_in_page(crew, "2001", CREW_PIN)
    await expect(crew.locator("#who")).to_have_text("Sipho Dube · staff 2001")
    await expect(crew.locator("#live")).to_have_text("live")
    await expect(crew.locator("#none")).to_be_visible()
    session = await session_of(crew)
    await shot(crew, "crew-signed-in")
    # the session survives a reload (the cookie), and ends with Sign out
    await crew.reload()
    await expect(crew.locator("#live")).to_have_text("live")
    await crew.locator("#logout").click()
    await expect(crew.locator("#login")).to_be_visible()
    await expect(crew.locator("#login-error")).to_have_text("Signed out.")
    me = await staffed.http.get("/staff/me", headers={"Authorization": f"Bearer {session}"})
    assert me.status_code == 401 and "signed out" in me.json()["detail"]
    _assert_nothing_secret(seen, [session], [CREW_PIN, "000000", "999999"])
    assert_no_page_errors(crew)


async def test_the_desk_refuses_crew_and_the_admin_disables_an_open_handheld(
    browser: Browser, staffed: Daemon
) -> None:
    base = str(staffed.http.base_url).rstrip("/")
    seen = Seen()
    desk = seen.watch(await new_page(browser, width=1440, height=900))
    await desk.goto(f"{base}/desk")
    await shot(desk, "desk-login")
    await sign_in_page(desk, "2001", CREW_PIN, admitted=False)
    await expect(desk.locator("#login-error")).to_contain_text(
        "Staff 2001 is a crew account: the desk needs a desk or admin sign-in."
    )
    # a desk member gets the desk, without the Staff tab
    await sign_in_page(desk, "1042")
    await expect(desk.locator("#who")).to_have_text("Naledi Mahlangu · staff 1042")
    await expect(desk.locator("#tabs")).to_be_visible()
    await expect(desk.locator("button[data-tab=staff]")).to_be_hidden()
    desk_session = await session_of(desk)
    for tab in ("draws", "jackpots", "letters", "members", "audit", "live"):
        await desk.click(f"button[data-tab={tab}]")
    await desk.locator("#logout").click()
    await expect(desk.locator("#login")).to_be_visible()

    # the admin: the Staff tab; adds a crew member
    await sign_in_page(desk, "9001")
    await desk.click("button[data-tab=staff]")
    rows = desk.locator("#staff-list tbody tr")
    await expect(rows).to_have_count(4)
    form = desk.locator("#staff-add")
    await form.locator("input[name=staff]").fill("2003")
    await form.locator("input[name=name]").fill("Bongani Zulu")
    await form.locator("select[name=role]").select_option("crew")
    await form.locator("input[name=pin]").fill("24682468")
    await form.locator("button[type=submit]").click()
    await expect(desk.locator("#staff-result")).to_contain_text(
        "Added Bongani Zulu (staff 2003), crew."
    )
    await expect(rows).to_have_count(5)
    own = desk.locator("#staff-list [data-staff='9001'] button[name=disable]")
    await expect(own).to_be_disabled()
    admin_session = await session_of(desk)

    # Sipho's handheld is open and live; the admin disables him: signed out within a second
    crew = await crew_page(browser, base, seen)
    await sign_in_page(crew, "2001", CREW_PIN)
    await expect(crew.locator("#live")).to_have_text("live")
    crew_session = await session_of(crew)
    await shot(desk, "desk-staff")
    started = time.monotonic()
    await desk.locator("#staff-list [data-staff='2001'] button[name=disable]").click()
    await expect(crew.locator("#main")).to_be_hidden(timeout=1000)
    dropped = time.monotonic() - started
    await expect(crew.locator("#login")).to_be_visible()
    await expect(crew.locator("#login-error")).to_have_text(
        "Signed out: this staff account was disabled. Ask a supervisor."
    )
    assert dropped < 1.0, f"the disabled member's page took {dropped:.2f} s to sign out"
    await shot(crew, "crew-signed-out")
    await expect(desk.locator("#toast")).to_contain_text(
        "Sipho Dube (staff 2001) disabled; 1 open sign-in(s) ended."
    )
    await expect(
        desk.locator("#staff-list [data-staff='2001'] button[name=enable]")
    ).to_be_visible()
    # and he cannot sign in again
    await crew.locator("#login input[name=staff]").fill("2001")
    await crew.locator("#login input[name=pin]").fill(CREW_PIN)
    await crew.locator("#login button[type=submit]").click()
    await expect(crew.locator("#login-error")).to_contain_text("disabled")

    # a new PIN from the panel
    await desk.locator("#staff-list [data-staff='2003'] button[name=new-pin]").click()
    reset = desk.locator("#staff-list form[name=reset-pin]")
    await reset.locator("input[name=pin]").fill("11335577")
    await reset.locator("button[type=submit]").click()
    await expect(desk.locator("#toast")).to_contain_text("Bongani Zulu (staff 2003) has a new PIN.")
    pins = [PIN, CREW_PIN, "24682468", "11335577"]
    _assert_nothing_secret(seen, [desk_session, admin_session, crew_session], pins)
    for page in (desk, crew):
        assert_no_page_errors(page)


async def test_an_idle_session_is_signed_out_on_the_daemons_clock(
    browser: Browser, staffed: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the hub looks at the held sessions each tick here, not each 15th (a wall cadence:
    # waiting for it proves nothing more)
    monkeypatch.setattr(hub, "TOKEN_RECHECK_TICKS", 1)
    base = str(staffed.http.base_url).rstrip("/")
    seen = Seen()
    crew = await crew_page(browser, base, seen)
    await sign_in_page(crew, "2002", CREW_PIN)
    await expect(crew.locator("#live")).to_have_text("live")
    # nobody touches it for 15 minutes of the daemon's clock: the daemon ends the session
    # (the push hub's next look at the sockets' sessions) and the page follows
    staffed.service.clock.advance(15 * 60 + 1)  # type: ignore[attr-defined]
    await expect(crew.locator("#login")).to_be_visible(timeout=30_000)
    await expect(crew.locator("#login-error")).to_have_text(
        "Signed out after a while without activity. Sign in again."
    )
    await shot(crew, "crew-signed-out-idle")
    assert_no_page_errors(crew)


def _assert_nothing_secret(seen: Seen, sessions: list[str], pins: list[str]) -> None:
    """No session token or PIN in any URL a page requested (HTTP or websocket), and no
    `token=` at all; a session never in a request body either (the PINs travel only in
    the sign-in's and the admin's bodies)."""
    assert len(seen.urls) > 10, seen.urls
    for url in seen.urls:
        assert "token=" not in url, url
        for secret in sessions + pins:
            assert secret not in url, f"{url} holds a secret"
    for body in seen.bodies:
        for session in sessions:
            assert session not in body
