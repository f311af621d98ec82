"""A RAPS bonus-jackpot session (Festa Fortuna) through the three pages in headless
Chromium, against a running daemon with real telemetry: the desk signs a member into the
decline register before the session; the signage banner counts down to the jackpot and
shows its winner, masked; the crew handheld gets the alert with the device, area and bank,
and its actions take one winner to "verified at the device" and another through "not at
the device" and the announcement to the outcome the daemon settles at the deadline."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.browser.helpers import (
    FESTA,
    MEMBERS,
    assert_no_page_errors,
    devices_csv,
    members_csv,
    new_page,
    promotions_folder,
    shot,
    token,
)
from tests.daemon_helpers import Daemon, running
from tests.telemetry_helpers import Publisher, event, game

pytestmark = pytest.mark.browser
SESSION = "jackpot-2025-10-04"
SESSION_URL = f"/promotions/{FESTA}/jackpots/{SESSION}"
PLAYERS = [card for card, *_ in MEMBERS[:3]]
SAST = dt.timezone(dt.timedelta(hours=2))


def at(hour: int, minute: int, second: int = 0) -> dt.datetime:
    return dt.datetime(2025, 10, 4, hour, minute, second, tzinfo=SAST)


@pytest.fixture
def festa_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    return settings.model_copy(update={"promotions": promotions_folder(tmp_path, site, FESTA)})


async def play(d: Daemon, pub: Publisher, minute: int) -> None:
    """The three players spend R150 each in the few minutes before `minute` (main area)."""
    before = d.service.ingest.committed
    sent = 0
    for i, card in enumerate(PLAYERS):
        egm = f"EGM-{401 + i:04d}"
        sent += pub.egm(
            egm,
            *(
                game(card, at(14 + (minute - 3) // 60, (minute - 3 + k) % 60), 5000, 50)
                for k in range(3)
            ),
        )
    await d.wait_committed(before + sent)


async def session(d: Daemon) -> dict[str, object]:
    return dict(await d.get(SESSION_URL))


async def test_a_raps_session_on_signage_crew_and_desk(
    browser: Browser, festa_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(13, 50))
    async with running(festa_settings, clock) as d:
        for path, body in (("/members/import", members_csv()), ("/devices/import", devices_csv())):
            r = await d.http.post(path, content=body, headers={"content-type": "text/csv"})
            assert r.status_code == 200, r.text
        base = str(d.http.base_url).rstrip("/")
        signed = PLAYERS[1]

        # -- the desk, before the session: the decline register -----------------------------
        desk = await new_page(browser, width=1440, height=900)
        await desk.goto(f"{base}/desk#jackpots")
        await desk.fill("#login input[name=token]", await token(d, Role.DESK))
        await desk.click("#login button[type=submit]")
        await desk.click(f"button[name=open-{SESSION}]")
        panel = desk.locator("#session-panel")
        await panel.locator("form[name=decline] input[name=card]").fill(signed)
        await panel.locator("form[name=decline] button[type=submit]").click()
        await expect(desk.locator("#session-panel")).to_contain_text(
            f"{signed} signed the decline register"
        )
        assert (await session(d))["declined"] == [signed]

        # -- on the floor: three players in the main area, carded in and playing --------------
        clock.set(at(14, 20))
        before = d.service.ingest.committed
        sent = sum(
            pub.egm(f"EGM-{401 + i:04d}", event("card_in", c, at(14, 15)))
            for i, c in enumerate(PLAYERS)
        )
        await d.wait_committed(before + sent)
        clock.set(at(14, 29, 30))
        await play(d, pub, 30)

        signage = await new_page(browser)
        await signage.goto(f"{base}/signage?area=main&token={await token(d, Role.SIGNAGE, 'main')}")
        banner = signage.locator("#jackpot")
        await expect(banner).to_be_visible()
        await expect(signage.locator("#jackpot-what")).to_contain_text("#1")
        await expect(signage.locator("#jackpot-state")).to_have_text("next jackpot")
        await expect(signage.locator("#jackpot-left")).to_have_text("0:30")
        await shot(signage, "signage-jackpot-upcoming")

        crew = await new_page(browser, width=390, height=844, mobile=True)
        await crew.goto(f"{base}/crew")
        await crew.fill("#login input[name=token]", await token(d, Role.CREW))
        await crew.click("#login button[type=submit]")
        await expect(crew.locator("#live")).to_have_text("live")

        # -- 14:30 jackpot #1: the card is not the player's; the reselected winner is found --
        clock.set(at(14, 30, 1))
        alert = crew.locator("#alerts > li.raps")
        await expect(alert).to_have_count(1)
        reselections = alert.locator(".reselect")
        await expect(reselections).to_contain_text("Reselections left: 3 of 3")
        await expect(reselections).to_contain_text("next allowed in")
        await alert.locator("button[data-action=crew_arrived]").click()
        await expect(alert.locator("button[data-action=not_owner]")).to_have_count(0)
        clock.set(at(14, 31, 1))  # a minute after the selection reached the crew
        not_owner = alert.locator("button[data-action=not_owner]")
        await not_owner.click()
        await expect(alert.locator(".result")).to_contain_text("write the reason first")
        await alert.locator("input[name=reason]").fill("the card is her husband's")
        await not_owner.click()
        await expect(alert).to_have_attribute("data-claim", "2")
        await expect(reselections).to_contain_text("Reselections left: 2 of 3")
        s = await session(d)
        assert s["jackpots"][0]["reselections"] == 1  # type: ignore[index]
        claim = s["claims"][-1]  # type: ignore[index]
        names = {card: name for card, name, *_ in MEMBERS}
        await expect(alert).to_contain_text(f"Ask for {names[claim['card']]}")
        await expect(alert.locator(".where")).to_contain_text(
            f"Area main · bank {claim['bank']} · {claim['device']}"
        )
        await shot(crew, "crew-jackpot-alert")
        await alert.locator("button[data-action=crew_arrived]").click()
        await expect(alert.locator(".result")).to_contain_text("At device ✓")
        await alert.locator("button[data-action=verify_at_device]").click()
        await expect(crew.locator("#alerts > li.raps")).to_have_count(0)
        s = await session(d)
        assert s["claims"][-1]["state"] == "verified_at_device"  # type: ignore[index]
        await expect(signage.locator("#jackpot-state")).to_contain_text("Won by")
        await expect(banner).to_have_class("jackpot won")
        await assert_public(signage)
        await shot(signage, "signage-jackpot-won")

        # -- 15:00 jackpot #2: the winner has left the device; announced, then settled -------
        clock.set(at(14, 59, 30))
        await play(d, pub, 60)
        clock.set(at(15, 0, 1))
        await expect(alert).to_have_count(1)
        await expect(alert.locator("button[data-action=crew_arrived]")).to_be_visible()
        await alert.locator("button[data-action=crew_arrived]").click()
        await alert.locator("button[data-action=not_at_device]").click()
        await expect(alert.locator("button[data-action=announce]")).to_be_visible()
        await alert.locator("button[data-action=announce]").click()
        await expect(alert.locator(".timer")).to_have_text("1:30")
        await expect(alert.locator(".pa")).not_to_be_empty()
        s = await session(d)
        second = s["claims"][-1]  # type: ignore[index]
        assert second["state"] == "announced"
        await expect(signage.locator("#jackpot-state")).to_contain_text("present yourself now")
        await expect(signage.locator("#jackpot-left")).to_have_text("1:30")
        await assert_public(signage)
        await shot(signage, "signage-jackpot-called")
        await shot(crew, "crew-jackpot-announced")

        # the claim time runs out: the register settles a signed winner, else a reselect
        clock.set(at(15, 1, 32))
        s = await session(d)
        if second["card"] == signed:
            await expect(crew.locator("#recent li").first).to_contain_text("declined register")
            await expect(signage.locator("#jackpot-state")).to_contain_text("Won by")
        else:
            await expect(crew.locator("#recent li").first).to_contain_text("reselected")
            await expect(alert).to_have_count(1)  # the next pick, alerted
        await desk.click("button[data-tab=jackpots]")
        await desk.click(f"button[name=open-{SESSION}]")
        await expect(
            desk.locator("#session-panel tbody tr", has_text="verified at device")
        ).to_have_count(1)
        rows = desk.locator("#session-panel tbody tr", has_text=f"{FESTA}.{SESSION}.j1")
        first_jackpot = rows.first  # j1, then j10 to j14
        await expect(first_jackpot).to_contain_text("1 of 3")  # the crew's reselections
        await shot(desk, "desk-jackpots")
        # the PA texts of the session: both jackpots' winners by full name, oldest first
        said = (await d.get(f"{SESSION_URL}/announcements"))["announcements"]
        texts = [str(a["text"]) for a in said]  # type: ignore[index]
        assert any(names[claim["card"]] in t for t in texts), texts
        assert any(names[second["card"]] in t for t in texts), texts
        assert [a["at"] for a in said] == sorted(a["at"] for a in said)  # type: ignore[index]
        for page in (desk, signage, crew):
            assert_no_page_errors(page)


async def assert_public(page: Page) -> None:
    text = await page.evaluate("document.documentElement.innerText")
    for card, name, *_ in MEMBERS:
        assert card not in text and name not in text
