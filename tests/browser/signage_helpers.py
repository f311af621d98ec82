"""What the signage browser tests share: a screen opened with a watch on what takes its
stage (each change noted with the browser's wall time, so a test can say when a RAPS win
reached the screen), the order a round's winners were revealed in, and the checks a floor
manager would make by eye (full-screen, legible from 5 m, no motion when the screen asks
for none, no sound unless asked)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from playwright.async_api import Browser, Page, expect

from tests.browser.helpers import new_page

# notes [Date.now(), stage, revealed claim] at every change of the stage, and counts the
# audio contexts and tones the page makes (the sound cue is off unless asked for)
WATCH = """
window.__stages = [];
window.__contexts = 0;
window.__tones = 0;
const Audio = window.AudioContext;
if (Audio) {
  window.AudioContext = class extends Audio {
    constructor(...args) { super(...args); window.__contexts += 1; }
    createOscillator() { window.__tones += 1; return super.createOscillator(); }
  };
}
document.addEventListener('DOMContentLoaded', () => {
  const note = () => window.__stages.push([
    Date.now(), document.body.dataset.stage || '', document.getElementById('reveal').dataset.claim || '',
  ]);
  const watch = new MutationObserver(note);
  watch.observe(document.body, { attributes: true, attributeFilter: ['data-stage'] });
  watch.observe(document.getElementById('reveal'), { attributes: true, attributeFilter: ['data-claim'] });
});
"""

REVEAL_MS = 3000  # a winner's reveal on the screen (signage-stage.js; 2 s each past six)

# every visible text a player reads is at least 2.6vmin (28 px on a 1080p screen), but the
# fine print (`.fine`: the seed commitment, the boards' publication note)
SMALL_TEXT = """
() => {
  const least = Math.min(innerWidth, innerHeight) * 0.026 - 0.5;
  const small = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || el.closest('.fine, #login, #connection')) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || el.getClientRects().length === 0) continue;
    if (parseFloat(style.fontSize) < least) small.push(`${style.fontSize} ${text.slice(0, 40)}`);
  }
  return small;
}
"""


async def hold_credential(page: Page, url: str, token: str) -> str:
    """Give the screen `page` the credential `token` as pairing leaves it (in the screen's
    own storage, never in its URL); `url` with any `token=` taken out of it."""
    parts = urlsplit(url)
    await page.goto(f"{parts.scheme}://{parts.netloc}/health")
    await page.evaluate(
        "t => localStorage.setItem('bonusd.screen', JSON.stringify({token: t}))", token
    )
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "token"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


async def open_signage(
    browser: Browser,
    url: str,
    *,
    portrait: bool = False,
    query: str = "",
    reduced_motion: bool = False,
    own_clock: bool = False,
    held: bool = False,
) -> Page:
    """A floor screen at `url`, landscape 1920×1080 or portrait, live. A `token=` in `url`
    (as the tests build it) is the screen's credential: it is kept as a paired screen keeps
    it, and the page opened without it (`hold_credential`). With `own_clock` the page's
    time (its timers, `Date`, `performance`) is Playwright's, which a test may stop and move
    on (`hold_time`, `reveal_each`): the screen's own durations (a reveal's 3 s, a slide's
    dwell, a reconnection's back-off) then pass without waiting for them; `held`: that
    clock stands still from the start (`hold_time`)."""
    width, height = (1080, 1920) if portrait else (1920, 1080)
    page = await new_page(browser, width=width, height=height, reduced_motion=reduced_motion)
    if own_clock or held:
        await page.clock.install()
    if held:  # before the page's first tick: it shows what it opens on until moved on
        await page.clock.pause_at(time.time() + 0.5)
    token = dict(parse_qsl(urlsplit(url).query)).get("token", "")
    if token:
        url = await hold_credential(page, url, token)
    await page.add_init_script(WATCH)  # after: it watches the screen's page, not /health
    await page.goto(f"{url}{query}")
    await expect(page.locator("body")).to_have_class("live")
    return page


async def page_time(page: Page) -> float:
    """The page's wall time now, in s (the time `stages` notes changes in)."""
    ms: float = await page.evaluate("Date.now()")
    return ms / 1000


async def hold_time(page: Page) -> None:
    """Stop the clock of a page opened with `own_clock` (half a second on, as Playwright
    pauses only ahead): its timers then fire only when the test moves it on, while what
    the stream brings is still shown at once."""
    await page.clock.pause_at(await page_time(page) + 0.5)


async def reveal_each(page: Page, count: int, *, redraw: bool = False) -> None:
    """The `count` winners of a round revealed one after another on a page whose clock is
    held: each shown in turn, then the page's clock moved over its reveal."""
    kind = "Redraw · " if redraw else ""
    for index in range(1, count + 1):
        await expect(page.locator("#reveal-count")).to_have_text(f"{kind}Winner {index} of {count}")
        await page.clock.fast_forward(REVEAL_MS)


async def stages(page: Page) -> list[tuple[float, str, str]]:
    """Every change of the screen's stage so far: (wall time in s, stage, revealed claim)."""
    found: list[list[Any]] = await page.evaluate("window.__stages")
    return [(float(at) / 1000, str(stage), str(claim)) for at, stage, claim in found]


async def first_seen(page: Page, stage: str, since: float) -> float | None:
    """The wall time `stage` first took the screen after `since`, or None."""
    return next((at for at, name, _ in await stages(page) if name == stage and at >= since), None)


async def revealed(page: Page, since: float) -> list[int]:
    """The claims revealed one by one after `since`, in order."""
    out: list[int] = []
    for at, stage, claim in await stages(page):
        if at >= since and stage == "reveal" and claim and (not out or out[-1] != int(claim)):
            out.append(int(claim))
    return out


async def assert_full_screen(page: Page, selector: str) -> None:
    """`selector` covers the whole viewport and is what the screen shows."""
    box = await page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None
    assert (box["x"], box["y"], box["width"], box["height"]) == (
        0,
        0,
        size["width"],
        size["height"],
    )
    assert await page.evaluate(
        f"document.elementFromPoint(innerWidth / 2, innerHeight / 2).closest('{selector}') !== null"
    )


async def assert_legible(page: Page) -> None:
    small = await page.evaluate(SMALL_TEXT)
    assert not small, f"text under 2.6vmin on a floor screen: {small}"


# what moves on the screen: animations running and transitions that take time
MOVING = """
() => [...document.querySelectorAll('.slide, .stage, .stage *')].filter((el) => {
  const style = getComputedStyle(el);
  const slow = style.transitionDuration.split(',').some((d) => parseFloat(d) > 0);
  return style.animationName !== 'none' || slow;
}).map((el) => `${el.tagName}.${el.className}`)
"""


async def moving(page: Page) -> list[str]:
    """The screen's elements that animate or transition (none when it asks for no motion)."""
    found: list[str] = await page.evaluate(MOVING)
    return found
