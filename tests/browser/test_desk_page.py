"""The promotions desk page in headless Chromium against a running daemon: the draws and
their states, a round run from the page, prizes loaded, a winner's claim taken to a prize
letter that is issued, printed, looked up and redeemed from the page; a member found; the
audit trail and the draw's report."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from bonusd.access.auth import Role
from bonusd.access.lockout import Lockout
from bonusd.clocks.clock import ManualClock
from bonusd.kiosk.desk import PIN_SCOPE
from bonusd.settings import Settings
from tests.browser.helpers import (
    GH,
    WAIT_MS,
    assert_no_page_errors,
    at,
    golden_horse_week,
    new_page,
    shot,
    wait_for,
)
from tests.daemon_helpers import running
from tests.staff_helpers import add_staff, sign_in_page
from tests.telemetry_helpers import Publisher

pytestmark = pytest.mark.browser
DRAW = f"{GH}.halfway"


async def test_desk_runs_a_draw_and_prints_a_prize_letter(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        clock.set(at(11, 7, 18, 40))
        base = str(d.http.base_url).rstrip("/")
        page = await new_page(browser, width=1440, height=900)
        await page.add_init_script(
            "window.print = () => { window.__printed = (window.__printed || 0) + 1; };"
        )

        # a crew member's sign-in does not open the desk; a desk member's does
        await add_staff(d.service, "2001", "Sipho Dube", "crew")
        await add_staff(d.service, "1042", "Naledi Mahlangu", "desk")
        await page.goto(f"{base}/desk")
        await sign_in_page(page, "2001", admitted=False)
        await expect(page.locator("#login-error")).to_contain_text("the desk needs a desk")
        await sign_in_page(page, "1042")
        await expect(page.locator("#tabs")).to_be_visible()

        # promotions and draws with their states
        halfway_row = page.locator("tr", has=page.locator("code", has_text=re.compile("^halfway$")))
        await expect(halfway_row).to_contain_text("activation")
        await expect(page.locator("#promotions")).to_contain_text("Mega Points Chase")
        await shot(page, "desk-draws")

        # the draw's book before it runs: seed commitments, no pool yet
        await page.click("button[name=open-halfway]")
        panel = page.locator("#draw-panel")
        await expect(panel).to_contain_text(DRAW)
        await expect(panel).to_contain_text("not frozen")
        # prizes sealed into reveals before the round
        prizes = panel.locator("form[name=prizes]")
        await prizes.locator("input[name=values]").fill("500, 1000, 2000, 5000, 10000")
        await prizes.locator("button[type=submit]").click()
        await expect(panel).to_contain_text("5 prize value(s) sealed")
        await shot(page, "desk-draw-before")

        # round 1 cannot be run from the page while the entry bin is open: the button is
        # disabled with the reason (it closes at 19:00, on the scheduler's clock)
        run_1 = panel.locator("button[name=run-round-1]")
        await expect(run_1).to_be_disabled()
        await expect(run_1).to_have_attribute("title", "the entry bin closes at 19:00")
        await expect(panel).to_contain_text("the entry bin closes at 19:00")
        await expect(panel).to_contain_text("not frozen")
        clock.set(at(11, 7, 19))  # the scheduler closes the bin and draws round 1

        async def drawn() -> bool:
            return bool((await d.get(f"/promotions/{GH}/draws/halfway/book"))["claims"])

        await wait_for(drawn, "the scheduler to draw round 1")
        book = await d.get(f"/promotions/{GH}/draws/halfway/book")
        claims = [c for c in book["claims"] if c["round"] == 1]
        assert len(claims) == 5 and all(c["state"] == "announced" for c in claims)
        # the page follows without a reload (the live push), round 1 now drawn
        await expect(run_1).to_have_attribute("title", "drawn at 19:00")
        await expect(page.locator("#draw-panel tbody tr", has_text="announced")).to_have_count(5)
        await shot(page, "desk-draw-drawn")

        # the live panel: each open claim with the PA text to read out (crew stream)
        await page.click("button[data-tab=live]")
        await expect(page.locator("#alerts .pa")).to_have_count(5)
        await shot(page, "desk-live-pa")
        await page.click("button[data-tab=draws]")
        await expect(page.locator("#draw-panel")).to_contain_text(DRAW)

        # the crew takes winner 1 through presented, verified, reveal (their endpoints)
        first = claims[0]
        crew = await d.client(Role.CREW)
        try:
            url = f"/promotions/{GH}/draws/halfway/claims/{first['claim']}"
            for step, body in (("present", None), ("verify", None), ("reveal", {"reveal": 3})):
                r = await crew.post(f"{url}/{step}", json=body)
                assert r.status_code == 200, r.text
        finally:
            await crew.aclose()

        # the desk issues the letter and prints it
        await page.locator("#draw-panel button", has_text="Refresh").click()
        issue = page.locator(f"button[name=issue_letter-{first['claim']}]")
        await issue.click()
        await expect(page.locator(f"button[name=print-{first['claim']}]")).to_be_visible()
        book = await d.get(f"/promotions/{GH}/draws/halfway/book")
        letter = next(c["letter"] for c in book["claims"] if c["claim"] == first["claim"])
        assert letter and letter.startswith(f"{DRAW}-")
        await page.click(f"button[name=print-{first['claim']}]")
        sheet = page.locator("#print-letter")
        await expect(sheet).to_contain_text(letter)
        await page.wait_for_function("() => window.__printed >= 1", timeout=WAIT_MS)
        printed = await sheet.inner_text()
        winner = await d.get(f"/members/{first['card']}")
        assert winner["member"]["name"] in printed  # the letter is in the winner's name
        assert "Redeem by" in printed and "Issued" in printed and "R" in printed
        await page.emulate_media(media="print")
        await shot(page, "desk-letter-print")
        await page.emulate_media(media="screen")

        # look the letter up and redeem it at the cash desk
        await page.click("button[data-tab=letters]")
        await page.fill("#letter-find input[name=number]", letter)
        await page.click("#letter-find button[type=submit]")
        await expect(page.locator("#letter")).to_contain_text("letter issued")
        # the daemon's own printable letter (A5), saved as a file to print
        async with page.expect_download() as saving:
            await page.click("button[name=printable]")
        saved = await saving.value
        printable = await asyncio.to_thread(Path(await saved.path()).read_text, "utf-8")
        assert letter in printable and "<html" in printable.lower()
        await page.click("button[name=redeem-letter]")
        await expect(page.locator("#letter")).to_contain_text("redeemed")
        looked_up = await d.get(f"/letters/{letter}")
        assert looked_up["state"] == "redeemed"
        await shot(page, "desk-letter")

        # find a member: the record, standings, gaming days; her card locked at the kiosks
        pins = Lockout(d.service.redis, d.service.keys, PIN_SCOPE, attempts=5, lock_s=900)
        for _ in range(5):
            await pins.failed("6001001001", clock.now())
        await page.click("button[data-tab=members]")
        await page.fill("#member-find input[name=card]", "6001001001")
        await page.click("#member-find button[type=submit]")
        member = page.locator("#member")
        await expect(member).to_contain_text("Thandi Mokoena")
        await expect(member.locator("tr", has_text="Halfway draw")).to_contain_text("yes")
        await expect(member).to_contain_text("2026-11-01")
        await expect(page.locator("#pin-lock")).to_contain_text("15 more minute(s)")
        await shot(page, "desk-member")
        await page.fill("#pin-lock input[name=reason]", "ID book checked at the desk")
        await page.click("#pin-lock button[type=submit]")
        await expect(page.locator("#pin-lock")).to_have_count(0)
        assert not (await pins.state("6001001001", clock.now())).locked

        # the audit trail (chain intact) and the draw's report
        await page.click("button[data-tab=audit]")
        await expect(page.locator("#chain")).to_contain_text("chain intact")
        await expect(page.locator("#audit")).to_contain_text("letter")
        # one winner's history: every record naming the card
        await page.fill("#audit-find input[name=q]", first["card"])
        await page.click("#audit-find button[type=submit]")
        await expect(page.locator("#audit tbody tr", has_text="redeem")).to_have_count(1)
        await expect(page.locator("#audit tbody tr", has_text="action=created")).to_have_count(1)
        await shot(page, "desk-audit")
        await page.click("button[data-tab=draws]")
        await page.click("button[name=open-halfway]")
        await page.click("#draw-panel button[name=report]")
        await expect(page.locator("#report")).to_contain_text(DRAW)
        await page.click("#draw-panel button[name=verify]")
        await expect(page.locator("#verify-result")).to_contain_text("Audit chain")
        assert_no_page_errors(page)
