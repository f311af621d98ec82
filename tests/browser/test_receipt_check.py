"""The receipt a draw winner presents, checked on the crew handheld and looked up on the
desk, in headless Chromium against a running daemon (docs/kiosk.md): every activated
member printed a receipt at a kiosk before the draw; at the claim the crew types the code
(or scans the QR where the browser has a BarcodeDetector and a camera) and the daemon's
verdict shows big and coloured: the winner's own receipt valid (original, or reprint n of
m), another member's, forged when one character is altered; text that is no code at all is
refused in the daemon's words. Each check lands in the draw's audit ledger; the desk looks
the receipt up by number with its prints and checks."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.async_api import Browser, Locator, Page, expect

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.browser.helpers import (
    ACTIVATED,
    GH,
    assert_no_page_errors,
    at,
    golden_horse_week,
    new_page,
    shot,
    wait_for,
)
from tests.browser.kiosk_helpers import print_receipt
from tests.daemon_helpers import Daemon, running
from tests.staff_helpers import add_staff, sign_in_page
from tests.telemetry_helpers import Publisher

pytestmark = pytest.mark.browser
BOOK = f"/promotions/{GH}/draws/halfway/book"
# a browser with a QR scanner: a BarcodeDetector that "sees" window.__qr, a camera that
# films a canvas, and a page allowed to use it (the daemon's headers say camera=())
SCANNER = """
(() => {
  const allow = { allowsFeature: () => true };
  Object.defineProperty(Document.prototype, 'permissionsPolicy', { get: () => allow });
  Object.defineProperty(Document.prototype, 'featurePolicy', { get: () => allow });
  window.BarcodeDetector = class {
    async detect() { return window.__qr ? [{ rawValue: window.__qr, format: 'qr_code' }] : []; }
    static async getSupportedFormats() { return ['qr_code']; }
  };
  navigator.mediaDevices.getUserMedia = async () => {
    const canvas = document.createElement('canvas');
    canvas.width = 64; canvas.height = 64;
    const ink = canvas.getContext('2d');
    setInterval(() => { ink.fillStyle = `hsl(${Date.now() % 360} 50% 50%)`; ink.fillRect(0, 0, 64, 64); }, 50);
    return canvas.captureStream(10);
  };
})();
"""


async def crew_page(browser: Browser, base: str, staff: str, *, scanner: bool = False) -> Page:
    page = await new_page(browser, width=390, height=844, mobile=True)
    if scanner:
        await page.add_init_script(SCANNER)
    await page.goto(f"{base}/crew")
    await sign_in_page(page, staff)
    await expect(page.locator("#alerts .alert")).to_have_count(5)
    return page


async def check(alert: Locator, code: str) -> Locator:
    """Type `code` into the alert's receipt field and check it; the verdict's node."""
    await alert.locator("input[name=receipt_code]").fill(code)
    await alert.locator("button.check").click()
    return alert.locator(".verdict-slot")


async def show(page: Page, alert: Locator) -> None:
    """Scroll so the alert's receipt check and its verdict fill the phone's screen."""
    await alert.locator(".receipt-check-box").evaluate("el => el.scrollIntoView({block: 'center'})")


def altered(code: str) -> str:
    """One character of the code's MAC changed (Crockford base32: still a well-formed code)."""
    last = code[-1]
    return code[:-1] + ("X" if last != "X" else "Y")


async def test_the_crew_checks_receipts_and_the_desk_looks_one_up(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        clock.set(at(11, 7, 18, 40))
        kiosk = await d.client(Role.KIOSK)
        try:
            receipts = {card: await print_receipt(kiosk, card) for card in ACTIVATED}
            clock.set(at(11, 7, 19))

            async def drawn() -> bool:
                return bool((await d.get(BOOK))["claims"])

            await wait_for(drawn, "the scheduler to draw round 1")
            claims = [c for c in (await d.get(BOOK))["claims"] if c["round"] == 1]
            winners = [c["card"] for c in claims]
            loser = next(c for c in ACTIVATED if c not in winners)
            # the third winner printed a second copy at the kiosk: reprint 1 of 2
            reprinted = await print_receipt(kiosk, winners[2])
        finally:
            await kiosk.aclose()
        assert reprinted["reprint"] == 1 and reprinted["number"] == receipts[winners[2]]["number"]
        base = str(d.http.base_url).rstrip("/")
        await add_staff(d.service, "2001", "Sipho Dube", "crew")
        page = await crew_page(browser, base, "2001")

        def alert(i: int) -> Locator:
            return page.locator(f'#alerts .alert[data-claim="{claims[i]["claim"]}"]')

        # no BarcodeDetector in this browser (nor the camera): no Scan button
        await expect(alert(0).locator("button.scan")).to_be_hidden()

        # the winner's own receipt: valid, the original
        verdict = await check(alert(0), receipts[winners[0]]["code"])
        await expect(verdict.locator(".verdict.valid")).to_be_visible()
        await expect(verdict).to_contain_text("✓ Valid receipt")
        await expect(verdict).to_contain_text("valid — original (1 printed)")
        await show(page, alert(0))
        await shot(page, "crew-receipt-valid")

        # another member's receipt (a member who did not win), typed in lower case
        verdict = await check(alert(1), receipts[loser]["code"].lower())
        await expect(verdict.locator(".verdict.other_member")).to_be_visible()
        await expect(verdict.locator(".headline")).to_have_text("✗ Another member's receipt")
        await expect(verdict.locator(".words")).to_have_count(0)  # the same words once
        await show(page, alert(1))
        await shot(page, "crew-receipt-other-member")

        # the reprint the winner holds: valid, reprint 1 of 2
        verdict = await check(alert(2), reprinted["code"])
        await expect(verdict).to_contain_text("valid — reprint 1 of 2 printed")
        await expect(verdict.locator(".number")).to_have_text(
            f"receipt no. {reprinted['number']} · reprint 1 of 2"
        )

        # one character altered: forged
        verdict = await check(alert(3), altered(receipts[winners[3]]["code"]))
        await expect(verdict.locator(".verdict.forged")).to_be_visible()
        await expect(verdict).to_contain_text("✗ Forged or altered")
        await show(page, alert(3))
        await shot(page, "crew-receipt-forged")

        # text that is no receipt code at all: the daemon's words, no verdict
        verdict = await check(alert(4), "hello")
        await expect(verdict.locator(".verdict-error")).to_contain_text("Not checked:")
        await expect(verdict.locator(".verdict")).to_have_count(0)
        # the winner presents: "Verified" is offered with "Receipt seen" already ticked
        await alert(0).locator("button[data-action=present]").click()
        await expect(alert(0).locator("input[name=receipt_checked]")).to_be_checked()
        await expect(alert(0).locator("input[name=id_checked]")).not_to_be_checked()
        assert_no_page_errors(page)

        # a handheld that can scan: the QR code read by the camera is checked at once
        scanning = await crew_page(browser, base, "2001", scanner=True)
        fifth = scanning.locator(f'#alerts .alert[data-claim="{claims[4]["claim"]}"]')
        scan = fifth.locator("button.scan")
        await expect(scan).to_be_visible()
        await scan.click()
        await expect(fifth.locator("video.camera")).to_be_visible()
        await scanning.evaluate("(qr) => { window.__qr = qr; }", receipts[winners[4]]["qr"])
        await expect(fifth.locator(".verdict.valid")).to_be_visible()
        await expect(fifth.locator("video.camera")).to_be_hidden()
        assert_no_page_errors(scanning)

        await ledger_has_the_checks(d, claims)
        await desk_looks_up(browser, base, d, reprinted, claims[2]["claim"])


async def ledger_has_the_checks(d: Daemon, claims: list[dict[str, Any]]) -> None:
    """Every check is in the draw's audit ledger, with its verdict, on its claim."""
    records = (await d.get("/audit?kind=receipt_check&count=50"))["records"]
    verdicts = sorted(str(r["payload"]["verdict"]) for r in records)
    assert verdicts == ["forged", "other_member", "valid", "valid", "valid"], records
    checked = {str(r["payload"]["claim"]) for r in records}
    assert all(any(str(c["claim"]) in claim for claim in checked) for c in claims), checked


async def desk_looks_up(
    browser: Browser, base: str, d: Daemon, receipt: dict[str, Any], claim: int
) -> None:
    await add_staff(d.service, "1042", "Naledi Mahlangu", "desk")
    desk = await new_page(browser, width=1440, height=900)
    await desk.goto(f"{base}/desk")
    await sign_in_page(desk, "1042")
    await desk.click("button[data-tab=letters]")
    await desk.fill("#receipt-find input[name=number]", str(receipt["number"]))
    await desk.click("#receipt-find button[type=submit]")
    found = desk.locator("#receipt-record .receipt-record")
    await expect(found.locator("h3")).to_have_text(f"Receipt no. {receipt['number']}")
    await expect(found).to_contain_text(receipt["masked_name"])
    await expect(found).to_contain_text(re.compile(r"card \d{10}"))  # the desk sees the card
    prints = found.locator("table").first.locator("tbody tr")
    await expect(prints).to_have_count(2)
    await expect(prints.nth(1)).to_contain_text("REPRINT 1")
    checks = found.locator("table").nth(1).locator("tbody tr")
    await expect(checks).to_have_count(1)
    await expect(checks.first).to_contain_text("✓ Valid receipt")
    await expect(checks.first).to_contain_text(str(claim))
    await found.evaluate("el => el.scrollIntoView({block: 'start'})")
    await shot(desk, "desk-receipt")
    assert_no_page_errors(desk)
