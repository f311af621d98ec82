"""The eHost kiosk page in headless Chromium against a running daemon with a week of real
telemetry (docs/kiosk.md): the attract screen; a card read by the reader (a keyboard
wedge: digits, then Enter); the member's standing in every running draw in plain words;
"Activate and print" activating the entries and printing the receipt through the 80 mm
print stylesheet (rendered to PDF and PNG); a reprint marked REPRINT 1; a reprint storm
and an activation after the bin closed refused in the daemon's words; the PIN pad, a
wrong PIN and the lockout after five; a card that is no member (only the neutral
message) or no card at all; and the visit ending (Done, the card removed, idle): the
daemon forgets it and nothing of the player is left in the DOM. On a landscape
(1920×1080) and a portrait (1080×1920) screen."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, Route, expect

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.browser.helpers import (
    ACTIVATED,
    GH,
    WAIT_MS,
    assert_no_page_errors,
    at,
    golden_horse_week,
    new_page,
    shot,
    token,
    wait_for,
)
from tests.browser.kiosk_helpers import (
    assert_nothing_of,
    import_members,
    member_name,
    members_csv_with,
    open_kiosk,
    pdf_shot,
    print_receipt,
    swipe,
    tap,
    tap_pin,
    visit_ended,
)
from tests.browser.signage_helpers import assert_legible
from tests.daemon_helpers import Daemon, running
from tests.telemetry_helpers import Publisher

pytestmark = pytest.mark.browser
HALFWAY = f'#player .draw[data-promotion="{GH}"][data-draw="halfway"]'
NOT_ACTIVATED = "6001001010"  # played in the window, not activated by golden_horse_week
PORTRAIT_CARD = "6001001011"
PIN_CARD, PIN = "6001001004", "4826"
IDLE_S = 5  # the idle kiosk's `?idle=`, the least it takes


async def held(page: Page, pattern: str) -> asyncio.Event:
    """Hold the page's requests to `pattern` until the returned event is set (the page's
    state while it waits for the daemon can then be seen)."""
    gate = asyncio.Event()

    async def hold(route: Route) -> None:
        await gate.wait()
        await route.continue_()

    await page.route(pattern, hold)
    return gate


async def card_in(page: Page, card: str) -> str:
    """The reader types the card; the visit the daemon opened for it."""
    async with page.expect_response("**/kiosk/visits") as opened:
        await swipe(page, card)
    response = await opened.value
    assert response.status == 201, await response.text()
    return str((await response.json())["visit"])


async def test_a_player_activates_and_prints_a_receipt_landscape(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        clock.set(at(11, 7, 18, 30))
        base = str(d.http.base_url).rstrip("/")
        kiosk_token = await token(d, Role.KIOSK, name="eHost 3 (main floor)")
        page = await open_kiosk(browser, base, kiosk_token)
        await expect(page.locator("#attract")).to_contain_text("Insert your players card")
        await assert_legible(page)
        await shot(page, "kiosk-attract")

        # the card read: the kiosk says it is reading, showing the last four digits only
        gate = await held(page, "**/kiosk/visits")
        async with page.expect_response("**/kiosk/visits") as opened:
            await swipe(page, NOT_ACTIVATED)
            await expect(page.locator("#reading")).to_be_visible()
            await expect(page.locator("#reading-card")).to_have_text("card ••••1010")
            await assert_legible(page)
            await shot(page, "kiosk-card")
            gate.set()
        visit = str((await (await opened.value).json())["visit"])
        await page.unroute("**/kiosk/visits")

        # the standings, in plain words, for every running draw
        draw = page.locator(HALFWAY)
        await expect(draw).to_be_visible()
        await expect(page.locator("#who")).to_have_text("card ••••1010")
        await expect(page.locator("#player .greeting")).to_contain_text("Hello, G. N****")
        await expect(draw.locator("h2")).to_have_text("Halfway draw")
        await expect(draw.locator(".activation")).to_contain_text("Not activated yet")
        await expect(draw.locator(".activation")).to_contain_text("today 19:00")
        await expect(draw.locator(".times")).to_have_text("Draws: today at 19:00, 20:00 and 21:00")
        await expect(draw.locator("button.print")).to_have_text("Activate and print")
        assert member_name(NOT_ACTIVATED) not in await page.content()
        await assert_legible(page)
        await shot(page, "kiosk-standings")

        # activate and print: the receipt on screen, printed through receipt.css
        await draw.locator("button.print").click()
        await expect(page.locator("#receipt")).to_be_visible()
        await expect(page.locator("#receipt-body h1")).to_have_text("Your receipt is printing")
        await page.wait_for_function("() => window.__printed === 1", timeout=WAIT_MS)
        printed = page.locator("#print-receipt")
        await expect(printed.locator(".line").first).to_be_visible(visible=False)
        lines = await printed.locator(".line").all_text_contents()
        assert any("Halfway draw" in line for line in lines), lines
        assert any("1010" in line for line in lines) and NOT_ACTIVATED not in "".join(lines)
        await expect(printed.locator("svg.qr path, svg.qr rect").first).to_be_attached()
        await assert_legible(page)
        await shot(page, "kiosk-receipt")
        await pdf_shot(page, "kiosk-receipt-print")

        # the daemon activated the entries through the kiosk; the standings say so
        await page.click("button[name=back]")
        await expect(draw.locator(".activation")).to_contain_text("Activated at an eHost")
        await expect(draw.locator(".printed")).to_contain_text("Receipt no.")
        await expect(draw.locator("button.print")).to_have_text("Print my receipt again")

        # a reprint: the same receipt, marked REPRINT 1; never a new entry
        await draw.locator("button.print").click()
        await expect(page.locator("#receipt-body .sub")).to_contain_text("REPRINT 1 of receipt no.")
        await expect(page.locator("#print-receipt")).to_contain_text("REPRINT 1")
        await page.wait_for_function("() => window.__printed === 2", timeout=WAIT_MS)
        await page.click("button[name=back]")
        await expect(draw.locator(".printed")).to_contain_text("(2 copies)")

        # a reprint storm: the daemon's limit, in its words, on the draw's card
        kiosk = await d.client(Role.KIOSK)
        try:
            for _ in range(3):
                await print_receipt(kiosk, NOT_ACTIVATED)
        finally:
            await kiosk.aclose()
        await draw.locator("button.print").click()
        refusal = draw.locator(".refusal")
        await expect(refusal).to_be_visible()
        await expect(refusal).to_contain_text("Too many prints")
        await expect(page.locator("#player")).to_be_visible()

        # Done: the daemon forgets the visit, and nothing of the player stays in the page
        await page.click("#done")
        await expect(page.locator("#attract")).to_be_visible()
        await expect(page.locator("#card")).to_be_focused()
        await assert_nothing_of(page, NOT_ACTIVATED, "G. N****", "Halfway draw", "REPRINT")
        await wait_for(lambda: visit_ended(d, kiosk_token, visit), "the visit to end")
        assert_no_page_errors(page)


async def test_the_kiosk_on_a_portrait_screen_and_a_bin_that_closed(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        clock.set(at(11, 7, 18, 45))
        base = str(d.http.base_url).rstrip("/")
        kiosk_token = await token(d, Role.KIOSK, name="eHost 7 (Salon Privé)")
        page = await open_kiosk(browser, base, kiosk_token, portrait=True)
        await assert_legible(page)
        await shot(page, "kiosk-attract-portrait")

        gate = await held(page, "**/kiosk/visits")
        async with page.expect_response("**/kiosk/visits"):
            await swipe(page, PORTRAIT_CARD)
            await expect(page.locator("#reading-card")).to_have_text("card ••••1011")
            await assert_legible(page)
            await shot(page, "kiosk-card-portrait")
            gate.set()
        await page.unroute("**/kiosk/visits")

        draw = page.locator(HALFWAY)
        await expect(draw.locator("button.print")).to_have_text("Activate and print")
        await expect(page.locator("#player .greeting")).to_contain_text("Hello, B. Z****")
        await assert_legible(page)
        await shot(page, "kiosk-standings-portrait")
        await draw.locator("button.print").click()
        await expect(page.locator("#receipt-body h1")).to_have_text("Your receipt is printing")
        await page.wait_for_function("() => window.__printed === 1", timeout=WAIT_MS)
        await assert_legible(page)
        await shot(page, "kiosk-receipt-portrait")
        await page.click("#done")
        await assert_nothing_of(page, PORTRAIT_CARD, "B. Z****", "Halfway draw")

        # a member who has not activated sees "Activate and print" just before the bin
        # closes; tapped after it closed, the daemon's refusal is shown in its words
        late = "6001001012"
        clock.set(at(11, 7, 18, 59, 30))
        await card_in(page, late)
        await expect(draw.locator("button.print")).to_have_text("Activate and print")
        clock.set(at(11, 7, 19, 0, 1))
        await draw.locator("button.print").click()
        refusal = draw.locator(".refusal")
        await expect(refusal).to_be_visible()
        words = (await refusal.inner_text()).strip()
        assert words.startswith("The entry bin closed at 19:00") and late not in words, words
        await expect(page.locator("#player")).to_be_visible()
        assert await page.evaluate("window.__printed") == 1  # nothing more printed
        await page.keyboard.press("Escape")  # the card is taken out of the reader
        await expect(page.locator("#attract")).to_be_visible()
        await assert_nothing_of(page, late, "R. M****", "Halfway draw", words)
        assert_no_page_errors(page)


async def test_the_pin_pad_a_wrong_pin_and_the_lockout(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        await import_members(d, members_csv_with({PIN_CARD: PIN}))
        clock.set(at(11, 7, 18, 30))
        base = str(d.http.base_url).rstrip("/")
        kiosk_token = await token(d, Role.KIOSK, name="eHost 3 (main floor)")

        # a wrong PIN: the daemon's words with the tries left; the right one opens the view
        page = await open_kiosk(browser, base, kiosk_token)
        await card_in(page, PIN_CARD)
        await expect(page.locator("#pin")).to_be_visible()
        await expect(page.locator("#pin-card")).to_have_text("card ••••1004")
        await expect(page.locator("#player-body")).to_be_empty()
        await tap_pin(page, "1111")
        await expect(page.locator("#pin-message")).to_have_text(
            re.compile(r"Wrong PIN — 4 tries left")
        )
        await tap(page, "4", "8")
        await expect(page.locator("#pin-dots")).to_have_text("●●")
        await assert_legible(page)
        await shot(page, "kiosk-pin")
        await tap(page, "clear", "clear")
        await tap_pin(page, PIN)
        await expect(page.locator(HALFWAY)).to_be_visible()
        await expect(page.locator("#player .greeting")).to_contain_text("Hello, A. P****")
        await page.click("#done")
        await assert_nothing_of(page, PIN_CARD, "A. P****", "Halfway draw")

        # five wrong PINs lock the card at every kiosk, in the daemon's words
        portrait = await open_kiosk(browser, base, kiosk_token, portrait=True)
        await card_in(portrait, PIN_CARD)
        await tap(portrait, "2", "5")
        await expect(portrait.locator("#pin-dots")).to_have_text("●●")
        await assert_legible(portrait)
        await shot(portrait, "kiosk-pin-portrait")
        await tap(portrait, "clear", "clear")
        for left in (4, 3, 2, 1):
            await tap_pin(portrait, "9999")
            await expect(portrait.locator("#pin-message")).to_have_text(
                re.compile(rf"Wrong PIN — {left} tr(y|ies) left")
            )
        await tap_pin(portrait, "9999")
        notice = portrait.locator("#notice")
        await expect(notice).to_be_visible()
        await expect(notice).to_contain_text("This card is locked")
        await expect(notice).to_contain_text("wrong PINs — please see the promotions desk")
        await assert_nothing_of(
            portrait, PIN_CARD, "A. P****", "Halfway draw", showing=("notice-body",)
        )
        await assert_legible(portrait)
        await shot(portrait, "kiosk-pin-locked")
        # the same card at another kiosk, even with the right PIN now, stays locked
        await page.reload()
        await expect(page.locator("#card")).to_be_focused()
        await swipe(page, PIN_CARD)
        await expect(page.locator("#notice")).to_contain_text("locked")
        await expect(page.locator("#pin")).to_be_hidden()
        for one in (page, portrait):
            assert_no_page_errors(one)


async def test_a_visit_ends_idle_or_with_the_card_and_strangers_see_nothing(
    browser: Browser, gh_settings: Settings, pub: Publisher, tmp_path: Path
) -> None:
    paper = tmp_path / "ehost-9.escpos"
    printers = {"eHost 9 (by the bar)": f"file:{paper}"}
    settings = gh_settings.model_copy(update={"receipt_printers": printers})
    clock = ManualClock(at(11, 5, 10))
    async with running(settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        excluded = ACTIVATED[1]
        await import_members(d, members_csv_with({}, excluded=(excluded,)))
        clock.set(at(11, 7, 18, 30))
        base = str(d.http.base_url).rstrip("/")
        kiosk_token = await token(d, Role.KIOSK)
        await token_form(browser, base, d, kiosk_token)
        page = await open_kiosk(browser, base, kiosk_token, idle=IDLE_S, own_clock=True)

        # left alone: after the idle time the kiosk warns, then ends the visit by itself
        # (the idle time passes on the page's clock, moved on by the test)
        first = ACTIVATED[0]
        visit = await card_in(page, first)
        await expect(page.locator(HALFWAY)).to_be_visible()
        await expect(page.locator("#idle")).to_contain_text("touch the screen to stay")
        await page.clock.fast_forward(IDLE_S * 1000)
        await expect(page.locator("#attract")).to_be_visible(timeout=WAIT_MS)
        assert (await page.evaluate("window.kioskEnded.reason")) == "idle"
        await assert_nothing_of(page, first, "T. M****", "Halfway draw", "qualified")
        await wait_for(lambda: visit_ended(d, kiosk_token, visit), "the idle visit to end")

        # another card read during a visit ends it and opens the new card's
        visit = await card_in(page, first)
        await expect(page.locator(HALFWAY)).to_be_visible()
        second = ACTIVATED[2]
        await card_in(page, second)
        await expect(page.locator("#player .greeting")).to_contain_text("Hello, S. N****")
        assert "T. M****" not in await page.content()
        await wait_for(lambda: visit_ended(d, kiosk_token, visit), "the first visit to end")
        await page.keyboard.press("Escape")
        await expect(page.locator("#attract")).to_be_visible()

        # an excluded member and a card that is no member read the same neutral words
        neutral: list[str] = []
        for card in (excluded, "6009999999"):
            await card_in(page, card)
            notice = page.locator("#notice")
            await expect(notice).to_be_visible()
            await expect(page.locator("#player .draw")).to_have_count(0)
            neutral.append(await page.locator("#notice-body").inner_text())
            if card == excluded:
                await assert_legible(page)
                await shot(page, "kiosk-neutral")
            await page.click("#done")
        assert neutral[0] == neutral[1] and "please see the promotions desk" in neutral[0]
        assert "exclu" not in neutral[0].lower()
        await assert_nothing_of(page, excluded, "J. B****")

        # no card at all: letters, 200 characters, nothing the reader could have typed
        for garbage in ("12ab34", "7" * 200):
            await swipe(page, garbage)
            await expect(page.locator("#notice")).to_contain_text("This card could not be read")
            await page.click("#done")
            await expect(page.locator("#attract")).to_be_visible()
        assert_no_page_errors(page)

        # a kiosk with its own receipt printer: the daemon prints, the browser does not
        printing = await token(d, Role.KIOSK, name="eHost 9 (by the bar)")
        bar = await open_kiosk(browser, base, printing)
        await card_in(bar, ACTIVATED[3])
        button = bar.locator(HALFWAY).locator("button.print")
        await expect(button).to_have_text("Print my receipt")  # activated already
        await button.click()
        await expect(bar.locator("#receipt-body h1")).to_have_text(
            "Printed — take your receipt from the printer"
        )
        assert await bar.evaluate("window.__printed || 0") == 0
        assert paper.stat().st_size > 0
        await bar.click("#done")
        await assert_nothing_of(bar, ACTIVATED[3], "Halfway draw")
        assert_no_page_errors(bar)


async def token_form(browser: Browser, base: str, d: Daemon, kiosk_token: str) -> None:
    """A kiosk opened without `?token=` asks for one (as a signage screen does); a token of
    another role is refused at the first card, in the daemon's words."""
    page = await new_page(browser)
    await page.goto(f"{base}/kiosk")
    form = page.locator("#login")
    await expect(form).to_be_visible()
    await expect(page.locator("#kiosk")).to_be_hidden()
    await form.locator("input[name=token]").fill(await token(d, Role.CREW))
    await form.locator("button[type=submit]").click()
    await expect(page.locator("#card")).to_be_focused()
    await swipe(page, ACTIVATED[0])
    await expect(form).to_be_visible()
    await expect(page.locator("#login-error")).to_contain_text("The kiosk token was refused")
    await form.locator("input[name=token]").fill(kiosk_token)
    await form.locator("button[type=submit]").click()
    await expect(page.locator("#card")).to_be_focused()
    await card_in(page, ACTIVATED[0])
    await expect(page.locator(HALFWAY)).to_be_visible()
    assert_no_page_errors(page)
    await page.context.close()
