"""Four eyes on the promotions desk page, in headless Chromium against a running daemon
(docs/draws.md, "Changes after the freeze"): before the bin closes the desk excludes
directly and an early close asked by a desk member is refused; once the scheduler has closed
the bin, the page offers requests with a reason instead; desk one's own request cannot be
approved by desk one (the daemon's words are shown) and desk two, in a second browser
session, approves it."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Dialog, Page, expect

from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.browser.helpers import (
    ACTIVATED,
    GH,
    MEMBERS,
    assert_no_page_errors,
    at,
    golden_horse_week,
    new_page,
    shot,
    wait_for,
)
from tests.daemon_helpers import Daemon, running
from tests.staff_helpers import add_staff, sign_in_page
from tests.telemetry_helpers import Publisher

pytestmark = pytest.mark.browser
BOOK = f"/promotions/{GH}/draws/halfway/book"
REASON = "Self-exclusion form handed in at the desk at 19:02"


async def desk_page(browser: Browser, base: str, staff: str) -> Page:
    """A desk page in its own browser session, signed in, with the Halfway draw open."""
    page = await new_page(browser, width=1440, height=900)
    await page.goto(f"{base}/desk")
    await sign_in_page(page, staff)
    await page.click("button[name=open-halfway]")
    await expect(page.locator("#draw-panel")).to_contain_text("Halfway draw")
    return page


def answer(page: Page, asked: list[str]) -> None:
    """Accept the page's next confirm(), keeping its question."""

    async def accept(dialog: Dialog) -> None:
        asked.append(dialog.message)
        await dialog.accept()

    page.once("dialog", accept)


async def show_changes(page: Page) -> None:
    await page.locator("#draw-changes").evaluate("el => el.scrollIntoView({block: 'start'})")


async def test_an_exclusion_after_the_freeze_is_approved_by_a_second_desk_member(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        clock.set(at(11, 7, 18, 40))
        base = str(d.http.base_url).rstrip("/")
        await add_staff(d.service, "1042", "Naledi Mahlangu", "desk")
        await add_staff(d.service, "1077", "Lindiwe Khoza", "desk")
        one = await desk_page(browser, base, "1042")
        panel = one.locator("#draw-panel")

        # before the close: exclusions are direct (with a note); an early close is an
        # admin's request, so the desk's is refused with the daemon's words
        await expect(one.locator("#draw-changes")).to_contain_text("No change requested.")
        note = one.locator("form[name=exclusion] input[name=note]")
        await expect(note).to_have_attribute("required", "")
        await expect(one.locator("form[name=exclusion-request]")).to_have_count(0)
        early = one.locator("form[name=early-close]")
        await expect(panel).to_contain_text("Close the entry bin early")
        await early.locator("input[name=reason]").fill("Fire alarm: the floor is evacuated")
        await early.locator("button[type=submit]").click()
        await expect(early.locator("xpath=..")).to_contain_text(
            "Refused: closing the entry bin early is requested by an admin"
        )

        # the bin closes at 19:00: the scheduler freezes the pools and draws round 1
        clock.set(at(11, 7, 19))

        async def drawn() -> bool:
            return bool((await d.get(BOOK))["claims"])

        await wait_for(drawn, "the scheduler to draw round 1")
        await panel.locator("button", has_text="Refresh").click()
        request = one.locator("form[name=exclusion-request]")
        await expect(request).to_be_visible()
        await expect(one.locator("form[name=exclusion]")).to_have_count(0)
        await expect(one.locator("form[name=early-close]")).to_have_count(0)
        await expect(one.locator("form[name=proxy-request]")).to_be_visible()
        reason = request.locator("input[name=reason]")
        await expect(reason).to_have_attribute("placeholder", re.compile("10 characters"))
        await expect(reason).to_have_attribute("required", "")

        # desk one asks to exclude a member who has not won; it waits for a second member
        book = await d.get(BOOK)
        taken = {c["card"] for c in book["claims"]} | {s["card"] for s in book["seats"]}
        card = next(c for c in ACTIVATED if c not in taken)
        name = next(n for c, n, *_ in MEMBERS if c == card)
        await request.locator("input[name=card]").fill(card)
        await reason.fill(REASON)
        await request.locator("button[type=submit]").click()
        row = one.locator("#draw-changes tbody tr").first
        await expect(row).to_contain_text("Exclusion")
        await expect(row).to_contain_text(name)  # the approver sees who, not only a card
        await expect(row).to_contain_text(f"card {card}")
        await expect(row).to_contain_text("waiting")
        await expect(row).to_contain_text("Naledi Mahlangu (staff 1042) (desk)")
        await expect(panel).to_contain_text("Request 1: exclude card")

        # desk one cannot approve their own request: the daemon's refusal is on the page
        asked: list[str] = []
        answer(one, asked)
        await one.click("button[name=approve-1]")
        await expect(one.locator("#draw-changes-result")).to_contain_text(
            re.compile(
                r"Refused: .*request 1 was made by Naledi Mahlangu \(staff 1042\) \(desk\).*four eyes"
            )
        )
        assert asked and f"exclude {name} (card {card})" in asked[0] and REASON in asked[0]
        await expect(row).to_contain_text("waiting")
        await show_changes(one)
        await shot(one, "desk-changes-own-refused")

        # desk two, in a second browser session, approves it
        two = await desk_page(browser, base, "1077")
        answer(two, asked)
        await two.click("button[name=approve-1]")
        done = two.locator("#draw-changes tbody tr").first
        await expect(done).to_contain_text("approved")
        await expect(done).to_contain_text("Lindiwe Khoza (staff 1077) (desk)")
        await expect(two.locator("button[name=approve-1]")).to_have_count(0)
        await expect(two.locator("#draw-result")).to_contain_text("Request 1 approved")
        assert "Approve request 1" in asked[1] and "passed over" in asked[1]
        await show_changes(two)
        await shot(two, "desk-changes-approved")

        # desk one's page shows the decision after a refresh; the daemon made the exclusion
        await panel.locator("button", has_text="Refresh").click()
        await expect(row).to_contain_text("approved")
        await check_exclusion(d, card)
        assert_no_page_errors(one)
        assert_no_page_errors(two)


async def check_exclusion(d: Daemon, card: str) -> None:
    changes = await d.get(f"/promotions/{GH}/draws/halfway/changes")
    assert changes["frozen"] is True
    [made] = changes["changes"]
    assert made["card"] == card and made["state"] == "approved"
    assert made["requested_by"] == "Naledi Mahlangu (staff 1042) (desk)"
    assert made["decided_by"] == "Lindiwe Khoza (staff 1077) (desk)"
    # the exclusion's record names the request and both staff members
    [record] = (await d.get(f"/audit?kind=exclusion&q={card}"))["records"]
    assert record["payload"]["request"] == 1 and record["payload"]["note"] == REASON
    assert record["payload"]["requested_by"] == "Naledi Mahlangu (staff 1042) (desk)"
    assert record["payload"]["approved_by"] == "Lindiwe Khoza (staff 1077) (desk)"
