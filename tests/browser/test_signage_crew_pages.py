"""The signage and crew pages in headless Chromium against a running daemon with real
telemetry and a real draw. Before it, the signage's attract loop: the next draw with its
countdown, prizes and seed commitment, the multiplier, and slides taking turns (the masked
boards, the draws coming up with their times, the multiplier, how to enter), legible from
5 m on a landscape and a portrait screen. At the draw, each winner revealed one after
another, then the grid with the claim timers; then each outcome, the redraws revealed in
turn, and once every claim is settled the results. The crew page receives the alerts with
the winners' locations, and its actions change the claims' states (a refusal shows the
server's reason). When the daemon goes away the signage says it is reconnecting, and
recovers by itself."""

from __future__ import annotations

import asyncio
import re

import pytest
from playwright.async_api import Browser, Page, expect

from bonusd.access.auth import Role
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
    seat_players,
    shot,
    token,
)
from tests.browser.signage_helpers import (
    assert_legible,
    hold_time,
    open_signage,
    page_time,
    reveal_each,
    revealed,
)
from tests.daemon_helpers import Daemon, running
from tests.staff_helpers import add_staff, sign_in_page
from tests.telemetry_helpers import Publisher

pytestmark = pytest.mark.browser
BOOK = f"/promotions/{GH}/draws/halfway/book"
CLAIMS = f"/promotions/{GH}/draws/halfway/claims"
SLIDES = ("boards", "upcoming", "multiplier", "enter")  # the attract loop's, in turn
ON = re.compile(r"\bon\b")
DWELL_MS = 4000  # the portrait screen's `&dwell=4`
BACKOFF_MAX_MS = 10_000  # the longest a page waits to reconnect (stream.js)
# the slides' cross-fade (opacity and visibility transitions) run to their end at once, as
# a screenshot with animations disabled does: what the screen shows once the fade is over
END_FADE = """
() => document.getAnimations()
  .filter((a) => a.effect && a.effect.target && a.effect.target.classList
    && a.effect.target.classList.contains('slide'))
  .forEach((a) => a.finish())
"""


async def assert_masked(page: Page) -> None:
    """No full name and no full card number anywhere on the public screen."""
    text = await page.evaluate("document.documentElement.innerText")
    html = await page.content()
    for card, name, *_ in MEMBERS:
        for shown in (text, html):
            assert card not in shown, f"full card {card} on the public screen"
            assert name not in shown, f"full name {name} on the public screen"


async def claim_state(d: Daemon, claim: int) -> str:
    book = await d.get(BOOK)
    return next(str(c["state"]) for c in book["claims"] if c["claim"] == claim)


async def slide(page: Page, name: str) -> None:
    """Wait until the attract loop shows slide `name` (and its fade is over: ended at once,
    the slide then fully opaque and the others hidden)."""
    await expect(page.locator("body")).to_have_attribute("data-attract", name)
    shown = page.locator(f".slide[data-slide={name}]")
    await expect(shown).to_have_class(re.compile(r"\bactive\b"))
    await page.evaluate(END_FADE)
    await expect(shown).to_have_css("opacity", "1")
    await expect(page.locator(".slide:not(.active)")).to_have_count(3)
    for hidden in await page.locator(".slide:not(.active)").all():
        await expect(hidden).to_have_css("visibility", "hidden")


async def landscape_slides(browser: Browser, url: str) -> None:
    """Each slide of the attract loop on a landscape screen pinned to it (`&show=`); the
    three screens opened at once."""
    upcoming, multiplier, enter = await asyncio.gather(
        *(open_signage(browser, url, query=f"&show={name}") for name in SLIDES[1:])
    )
    await slide(upcoming, "upcoming")
    first = upcoming.locator("#upcoming-list li").first
    await expect(first).to_contain_text("Halfway draw · round 1")
    await expect(first.locator(".at")).to_have_text("19:00")  # today: the time alone
    await expect(first.locator(".prize")).to_have_text("5 winners · up to R10,000")
    await expect(first.locator(".in")).to_have_text("1:00")
    await assert_legible(upcoming)
    await shot(upcoming, "signage-attract")
    await slide(multiplier, "multiplier")
    await expect(multiplier.locator("#hero-factor")).to_have_text("3×")
    await expect(multiplier.locator("#hero-what")).to_have_text("on all play until 21:00")
    await assert_legible(multiplier)
    await shot(multiplier, "signage-multiplier")
    await slide(enter, "enter")
    await expect(enter.locator("#enter-steps")).to_contain_text(
        "Activate your entries at any eHost"
    )
    await assert_legible(enter)
    await shot(enter, "signage-enter")
    for page in (upcoming, multiplier, enter):
        assert_no_page_errors(page)
        await page.context.close()


async def portrait_loop(portrait: Page) -> None:
    """The portrait screen's attract loop turns by itself (`&dwell=4`): the boards, the
    draws coming up, the multiplier, how to enter. Its clock is held (from its opening):
    each slide stays until the test moves the clock over its dwell, then the page turns to
    the next."""
    await slide(portrait, "boards")
    await expect(portrait.locator("#next-countdown")).to_have_text("1:00")
    await expect(portrait.locator("#board-slots li")).to_have_count(10)
    await assert_legible(portrait)
    await shot(portrait, "signage-countdown-portrait")
    await portrait.clock.fast_forward(DWELL_MS)
    await slide(portrait, "upcoming")
    await expect(portrait.locator("#upcoming-list li").first).to_contain_text("Halfway draw")
    await assert_legible(portrait)
    await shot(portrait, "signage-attract-portrait")
    await portrait.clock.fast_forward(DWELL_MS)
    await slide(portrait, "multiplier")
    await expect(portrait.locator("#hero-factor")).to_have_text("3×")
    await shot(portrait, "signage-multiplier-portrait")
    await portrait.clock.fast_forward(DWELL_MS)
    await slide(portrait, "enter")
    await assert_legible(portrait)
    await shot(portrait, "signage-enter-portrait")
    await portrait.clock.fast_forward(DWELL_MS)
    await slide(portrait, "boards")  # and round again


async def settle_redraws(d: Daemon) -> None:
    """The four redrawn winners present, are verified and pick reveals 1, 3, 4 and 5."""
    crew = await d.client(Role.CREW)
    try:
        book = await d.get(BOOK)
        open_claims = sorted(c["claim"] for c in book["claims"] if c["state"] == "announced")
        assert len(open_claims) == 4
        checks = {"id_checked": True, "receipt_checked": True}
        for claim, reveal in zip(open_claims, (1, 3, 4, 5), strict=True):
            for step, body in (
                ("present", None),
                ("verify", checks),
                ("reveal", {"reveal": reveal}),
            ):
                r = await crew.post(f"{CLAIMS}/{claim}/{step}", json=body)
                assert r.status_code == 200, r.text
    finally:
        await crew.aclose()


async def test_signage_and_crew_through_a_draw(
    browser: Browser, gh_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(11, 5, 10))
    async with running(gh_settings, clock) as d:
        await golden_horse_week(d, clock, pub)
        desk = await d.client(Role.DESK)
        r = await desk.post(
            f"/promotions/{GH}/draws/halfway/prizes",
            json={
                "tombola": "pooled",
                "round": 1,
                "values_cents": [50000, 100000, 200000, 500000, 1000000],
            },
        )
        assert r.status_code == 200, r.text
        await desk.aclose()
        clock.set(at(11, 7, 18, 50))
        await seat_players(d, pub, at(11, 7, 18, 49))
        clock.set(at(11, 7, 18, 59))
        base = str(d.http.base_url).rstrip("/")
        signage_url = f"{base}/signage?area=main&token={await token(d, Role.SIGNAGE, 'main')}"

        # -- before the draw: countdown, prizes, commitment, multiplier, masked boards ------
        signage = await open_signage(browser, signage_url, query="&show=boards", own_clock=True)
        await expect(signage.locator("#promotion-name")).to_have_text("Mega Points Chase")
        await expect(signage.locator("#next-name")).to_have_text("Halfway draw")
        await expect(signage.locator("#next-round")).to_have_text("Round 1")
        await expect(signage.locator("#next-countdown")).to_have_text("1:00")
        await expect(signage.locator("#next-prizes")).to_have_text(
            "5 winners · prizes up to R10,000"
        )
        book = await d.get(BOOK)
        commitment = next(x["seed_commitment"] for x in book["rounds"] if x["round"] == 1)
        shown = (await signage.locator("#commitment-hash").inner_text()).replace(" ", "")
        assert shown == commitment
        await expect(signage.locator("#multiplier")).to_be_visible()
        await expect(signage.locator("#multiplier-factor")).to_have_text("3×")
        await expect(signage.locator("#multiplier-text")).to_contain_text("play until 21:00")
        await slide(signage, "boards")
        await expect(signage.locator("#board-slots li")).to_have_count(10)
        await expect(signage.locator("#board-tables li").first).to_contain_text("****")
        await expect(signage.locator("#winners")).to_be_hidden()
        await assert_masked(signage)
        await assert_legible(signage)
        await shot(signage, "signage-countdown")
        await landscape_slides(browser, signage_url)
        portrait = await open_signage(
            browser, signage_url, portrait=True, query="&dwell=4", held=True
        )
        await portrait_loop(portrait)

        # -- the crew handheld, logged in, nothing open yet ----------------------------------
        crew = await new_page(browser, width=390, height=844, mobile=True)
        await crew.clock.install()  # its reconnection's back-off is moved over below
        await crew.add_init_script(
            "navigator.vibrate = (p) => { window.__vibrated = (window.__vibrated || 0) + 1; return true; };"
        )
        await crew.goto(f"{base}/crew")
        await add_staff(d.service, "2001", "Sipho Dube", "crew")
        await sign_in_page(crew, "2001")
        await expect(crew.locator("#live")).to_have_text("live")
        await expect(crew.locator("#none")).to_be_visible()
        await shot(crew, "crew-idle")

        # -- 19:00: the scheduler draws round 1; each winner revealed, then the grid ---------
        # the screens' clocks are held: each reveal stays until the test moves it on
        await hold_time(signage)  # the portrait's is held since its opening
        since = {page: await page_time(page) for page in (signage, portrait)}
        clock.set(at(11, 7, 19, 0, 1))
        await expect(signage.locator("#reveal")).to_have_class(ON)
        await expect(signage.locator("#reveal-count")).to_have_text("Winner 1 of 5")
        await expect(signage.locator("#reveal-card .timer")).to_have_text("1:30")
        await assert_masked(signage)
        await assert_legible(signage)
        await shot(signage, "signage-reveal")
        await expect(portrait.locator("#reveal")).to_have_class(ON)
        await shot(portrait, "signage-reveal-portrait")
        for page in (signage, portrait):
            await reveal_each(page, 5)
            await expect(page.locator("body")).to_have_attribute("data-stage", "winners")
            assert await revealed(page, since[page]) == [1, 2, 3, 4, 5]
            await page.clock.resume()
        winners = signage.locator("#winners .winner")
        await expect(winners).to_have_count(5)
        await expect(signage.locator("#winners")).to_be_visible()
        await expect(signage.locator("#winners .winner .timer").first).to_have_text("1:30")
        await expect(signage.locator("#winners-sub")).to_contain_text(
            "show your ID and ticket receipt before your timer runs out"
        )
        await assert_masked(signage)
        await assert_legible(signage)
        await shot(signage, "signage-winners")
        await shot(portrait, "signage-winners-portrait")

        alerts = crew.locator("#alerts > li")
        await expect(alerts).to_have_count(5)
        book = await d.get(BOOK)
        claims = sorted(book["claims"], key=lambda c: c["claim"])
        first = claims[0]
        names = {card: name for card, name, *_ in MEMBERS}
        card1 = crew.locator(f"#alerts > li[data-claim='{first['claim']}']")
        await expect(card1).to_contain_text(f"Ask for {names[first['card']]}")
        await expect(card1.locator(".where")).to_contain_text("Area main")
        await expect(card1.locator(".timer")).to_have_text("1:30")
        await expect(card1.locator(".pa")).not_to_be_empty()
        assert await crew.evaluate("window.__vibrated || 0") >= 1
        await shot(crew, "crew-alerts")

        # present from the handheld: the claim's state changes on the server
        await card1.locator("button[data-action=present]").click()
        await expect(card1.locator(".result")).to_contain_text("Presented ✓")
        assert await claim_state(d, first["claim"]) == "presented"
        # verify without ticking ID and receipt: refused, with the server's reason
        await card1.locator("button[data-action=verify]").click()
        await expect(card1.locator(".result")).to_contain_text("Refused:")
        await expect(card1.locator(".result")).to_contain_text("without ID and receipt")
        await shot(crew, "crew-refused")
        assert await claim_state(d, first["claim"]) == "presented"
        await card1.locator("input[name=id_checked]").check()
        await card1.locator("input[name=receipt_checked]").check()
        await card1.locator("button[data-action=verify]").click()
        await expect(card1.locator(".result")).to_contain_text("verified")
        assert await claim_state(d, first["claim"]) == "verified"
        await card1.locator("input[name=reveal]").fill("2")
        await card1.locator("button[data-action=pick_reveal]").click()
        # a settled claim leaves the open alerts for the recent list
        await expect(alerts).to_have_count(4)
        await expect(crew.locator(f"#recent li[data-claim='{first['claim']}']")).to_contain_text(
            "reveal picked"
        )
        assert await claim_state(d, first["claim"]) == "reveal_picked"
        await shot(crew, "crew-settled")

        # the signage shows that winner's outcome, in rands, while the others' timers run
        won = signage.locator(f"#winners .winner[data-claim='{first['claim']}']")
        await expect(won.locator(".outcome")).to_have_text(re.compile(r"^Won R[0-9,]+$"))
        await expect(signage.locator("#winners .winner .timer")).to_have_count(4)

        # -- the claim time runs out: four no-shows, each redrawn and revealed in turn ------
        for page in (signage, portrait):
            await hold_time(page)
        since = {page: await page_time(page) for page in (signage, portrait)}
        clock.set(at(11, 7, 19, 1, 32))
        await expect(signage.locator("#reveal-count")).to_have_text("Redraw · Winner 1 of 4")
        for page in (signage, portrait):
            await reveal_each(page, 4, redraw=True)
            await page.clock.resume()
        await expect(signage.locator("body")).to_have_attribute("data-stage", "winners")
        assert await revealed(signage, since[signage]) == [6, 7, 8, 9]
        await expect(signage.locator("#winners .winner.no_show")).to_have_count(4)
        await expect(signage.locator("#winners .winner .timer")).to_have_count(4)  # the redraws
        await expect(signage.locator("#winners .winner.no_show .outcome").first).to_have_text(
            "Not claimed — redrawn"
        )
        await assert_masked(signage)
        await shot(signage, "signage-outcomes")
        await expect(portrait.locator("body")).to_have_attribute("data-stage", "winners")
        await shot(portrait, "signage-outcomes-portrait")
        book = await d.get(BOOK)
        assert sum(c["state"] == "no_show" for c in book["claims"]) == 4
        await expect(alerts).to_have_count(4)  # the redrawn winners
        for page in (signage, portrait, crew):
            assert_no_page_errors(page)

    # -- the daemon is gone: the screen says so, and recovers when it is back -------------
    await expect(signage.locator("body")).to_have_class("reconnecting")
    await expect(signage.locator("#connection")).to_contain_text("Reconnecting")
    await shot(signage, "signage-reconnecting")
    restarted = await page_time(signage)
    async with running(gh_settings, clock) as d:
        # the daemon is back: each page's next try is due within its longest back-off
        for page in (signage, portrait, crew):
            await page.clock.fast_forward(BACKOFF_MAX_MS)
        await expect(signage.locator("body")).to_have_class("live")
        await expect(signage.locator("#connection")).to_be_hidden()
        await expect(signage.locator("#winners .winner")).to_have_count(9)
        assert await revealed(signage, restarted) == []  # nothing new: nothing replayed
        await expect(crew.locator("#live")).to_have_text("live")
        await expect(crew.locator("#alerts > li")).to_have_count(4)

        # -- the crew member leaves in a hurry; a supervisor disables the account ------------
        # the open page is told at once (4401) and drops everything it showed: back at the
        # sign-in form with the reason, no winner's name left in the DOM
        r = await d.http.post("/staff/2001/disable")
        assert r.status_code == 200 and r.json()["sessions_ended"] == 1, r.text
        await expect(crew.locator("#login")).to_be_visible()
        await expect(crew.locator("#login-error")).to_contain_text("Signed out")
        await expect(crew.locator("#login-error")).to_contain_text("disabled")
        assert await crew.locator("#alerts > li").count() == 0
        html = await crew.content()
        for _card, name, *_ in MEMBERS:
            assert name not in html, f"{name} still in the signed-out page"
        await shot(crew, "crew-signed-out")

        # -- every claim settled: the subtitle gives the outcomes -------------------------
        await settle_redraws(d)
        await expect(signage.locator("#winners-title")).to_have_text("Results")
        await expect(signage.locator("#winners-sub")).to_have_text(
            "Halfway draw · round 1 — 5 prizes won · 4 not claimed (redrawn). Congratulations!"
        )
        await expect(signage.locator("#winners .winner.won")).to_have_count(5)
        await assert_masked(signage)
        await shot(signage, "signage-results")
        await expect(portrait.locator("#winners-title")).to_have_text("Results")
        await shot(portrait, "signage-results-portrait")
        for page in (signage, portrait):
            assert_no_page_errors(page)
    assert len(ACTIVATED) == 9
