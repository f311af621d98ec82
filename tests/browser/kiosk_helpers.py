"""What the kiosk and receipt-check page tests share: opening the kiosk page (its token in
the URL, as a kiosk's configured address carries it; window.print counted instead of
opening a dialog), a card typed by the reader (a keyboard wedge: digits, then Enter),
receipts printed through the kiosk API, members given PINs, what must be gone from the
page after a visit, and the printed receipt as Chromium renders it through receipt.css to
PDF, then to PNG with pdftoppm at a thermal printer's 203 dpi."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from bonusd.access.pins import hash_pin
from tests.browser.helpers import GH, MEMBERS, SCRATCH, SCREEN_MAX_BYTES, SCREENS, new_page
from tests.daemon_helpers import Daemon

PRINT_STUB = "window.print = () => { window.__printed = (window.__printed || 0) + 1; };"
PRINTER_DPI = 203  # an 80 mm thermal receipt printer's resolution


async def open_kiosk(
    browser: Browser,
    base: str,
    kiosk_token: str,
    *,
    portrait: bool = False,
    idle: int = 0,
    own_clock: bool = False,
) -> Page:
    """The kiosk page on a landscape (1920×1080) or portrait (1080×1920) touch screen;
    `own_clock`: its time (timers, `performance`) is Playwright's, which the test may move
    on (`page.clock.fast_forward`) over the idle time instead of waiting it out."""
    width, height = (1080, 1920) if portrait else (1920, 1080)
    page = await new_page(browser, width=width, height=height)
    if own_clock:
        await page.clock.install()
    await page.add_init_script(PRINT_STUB)
    query = f"?token={kiosk_token}" + (f"&idle={idle}" if idle else "")
    await page.goto(f"{base}/kiosk{query}")
    await expect(page.locator("#attract")).to_be_visible()
    await expect(page.locator("#card")).to_be_focused()
    return page


async def swipe(page: Page, card: str) -> None:
    """The card reader: it types the card number, then Enter, into whatever has the focus
    (a key event per digit, as fast as the page takes them: the kiosk does not time them)."""
    await page.keyboard.type(card)
    await page.keyboard.press("Enter")


async def tap(page: Page, *keys: str) -> None:
    """Keys of the kiosk's PIN pad, tapped."""
    for key in keys:
        await page.click(f'#pad button[data-key="{key}"]')


async def tap_pin(page: Page, pin: str) -> None:
    await tap(page, *pin, "ok")


async def visit_ended(d: Daemon, kiosk_token: str, visit: str) -> bool:
    """The daemon has forgotten the kiosk's visit (its header no longer admitted)."""
    async with httpx.AsyncClient(base_url=str(d.http.base_url), timeout=10) as http:
        r = await http.get(
            "/kiosk/visit",
            headers={"Authorization": f"Bearer {kiosk_token}", "X-Kiosk-Visit": visit},
        )
    return r.status_code == 401


def member_name(card: str) -> str:
    return next(name for c, name, *_ in MEMBERS if c == card)


async def page_text(page: Page) -> str:
    """Everything the page holds: its markup, every input's value, the visible text."""
    html = await page.content()
    values = await page.evaluate(
        "[...document.querySelectorAll('input')].map((i) => i.value).join('\\n')"
    )
    text = await page.evaluate("document.documentElement.innerText")
    return "\n".join((html, values, text))


async def assert_nothing_of(
    page: Page, card: str, *words: str, showing: tuple[str, ...] = ()
) -> None:
    """Nothing of the player is left in the DOM: no card digits, no name, no draw words,
    and the containers their data went into are empty (but those `showing` a notice)."""
    held = await page_text(page)
    for word in (card, card[-4:], member_name(card), *words):
        assert word not in held, f"{word!r} is still in the page after the visit"
    ids = ["player-body", "receipt-body", "notice-body", "print-receipt", "who", "pin-card"]
    ids += ["pin-dots", "reading-card"]
    empty = await page.evaluate(
        "(ids) => ids.filter((id) => document.getElementById(id).childNodes.length)",
        [i for i in ids if i not in showing],
    )
    assert empty == [], f"still holding nodes: {empty}"


async def kiosk_visit(kiosk: httpx.AsyncClient, card: str) -> str:
    r = await kiosk.post("/kiosk/visits", json={"card": card})
    assert r.status_code == 201, r.text
    assert r.json()["needs_pin"] is False
    return str(r.json()["visit"])


async def print_receipt(kiosk: httpx.AsyncClient, card: str, draw: str = "halfway") -> Any:
    """A receipt of `draw` printed for `card` through the kiosk API (as a kiosk would)."""
    visit = await kiosk_visit(kiosk, card)
    headers = {"X-Kiosk-Visit": visit}
    r = await kiosk.post(
        "/kiosk/visit/receipts", json={"promotion": GH, "draw": draw}, headers=headers
    )
    assert r.status_code == 201, r.text
    await kiosk.delete("/kiosk/visit", headers=headers)
    return r.json()


def members_csv_with(pins: dict[str, str], excluded: tuple[str, ...] = ()) -> str:
    """The browser tests' members again, with a `pin_hash` column (argon2id) for `pins`
    and the cards in `excluded` excluded (imported over them: create or update)."""
    out = io.StringIO()
    rows = csv.writer(out, lineterminator="\n")
    head = "card name tier app_user date_of_birth sms_opt_in excluded exclusion_reason"
    rows.writerow([*head.split(), "last_visit", "pin_hash"])
    for card, name, tier, app in MEMBERS:
        shut = ["true", "self-exclusion"] if card in excluded else ["false", ""]
        pin = hash_pin(pins[card]) if card in pins else ""
        rows.writerow([card, name, tier, app, "1980-01-01", "true", *shut, "", pin])
    return out.getvalue()


async def import_members(d: Daemon, text: str) -> None:
    r = await d.http.post("/members/import", content=text, headers={"content-type": "text/csv"})
    assert r.status_code == 200, r.text


async def pdf_shot(page: Page, name: str) -> Path:
    """docs/screens/{name}.png: the page as it prints (Chromium's PDF of the print
    stylesheet, at the @page size the page set), rasterised by pdftoppm at 203 dpi."""
    pdftoppm = shutil.which("pdftoppm")
    if pdftoppm is None:
        pytest.fail("no pdftoppm: `sudo apt-get install -y poppler-utils`")
    folder = SCREENS if os.environ.get("BONUSD_SCREENS") == "1" else SCRATCH
    folder.mkdir(parents=True, exist_ok=True)
    pdf = await page.pdf(prefer_css_page_size=True, print_background=True)
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "receipt.pdf"
        source.write_bytes(pdf)
        stem = Path(scratch) / "receipt"
        command = [pdftoppm, "-png", "-r", str(PRINTER_DPI), "-gray", "-singlefile"]
        proc = await asyncio.create_subprocess_exec(*command, str(source), str(stem))
        assert await proc.wait() == 0, "pdftoppm failed"
        path = folder / f"{name}.png"
        shutil.move(str(stem.with_suffix(".png")), path)
    assert path.stat().st_size < SCREEN_MAX_BYTES, f"{path.name} is too heavy"
    return path


def pdf_pages(pdf: bytes) -> int:
    return pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")
