"""What the browser tests share (their fixtures are in conftest.py): Chromium's path and
arguments, opening a page and checking it raised no error, screenshots, tokens, the
Golden Horse members and devices, a week of play on the floor, and waiting for a page."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import struct
import tempfile
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from tests.daemon_helpers import PROJECT, SAST, Daemon
from tests.telemetry_helpers import Publisher, event, game, rating

CHROMIUM = os.environ.get("BONUSD_CHROMIUM", "/usr/bin/chromium")


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


SCREENS = PROJECT / "docs" / "screens"


SCRATCH = Path(tempfile.gettempdir()) / "bonusd-screens"


SCREEN_MAX_BYTES = 300 * 1024


WAIT_MS = 20_000  # generous: waiting for an element is not a timing assertion


GH = "golden-horse-mega-points-chase"


FESTA = "montecasino-festa-fortuna"


async def new_page(
    browser: Browser,
    *,
    width: int = 1920,
    height: int = 1080,
    mobile: bool = False,
    reduced_motion: bool = False,
) -> Page:
    """A page in a fresh context (its own sessionStorage); console errors fail the test."""
    context = await browser.new_context(
        viewport={"width": width, "height": height},
        device_scale_factor=1,
        is_mobile=mobile,
        has_touch=mobile,
        reduced_motion="reduce" if reduced_motion else "no-preference",
    )
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on(
        "console",
        lambda msg: (
            errors.append(f"console {msg.type}: {msg.text}")
            if msg.type == "error" and "Content Security Policy" in msg.text
            else None
        ),
    )
    page.errors = errors  # type: ignore[attr-defined]
    return page


def assert_no_page_errors(page: Page) -> None:
    errors: list[str] = page.errors  # type: ignore[attr-defined]
    assert not errors, errors


async def shot(page: Page, name: str) -> Path:
    """Write docs/screens/{name}.png (what the page shows now) when BONUSD_SCREENS=1 (`make
    screens`); otherwise into a scratch folder, so a test run leaves the checkout as it was."""
    folder = SCREENS if os.environ.get("BONUSD_SCREENS") == "1" else SCRATCH
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    await page.screenshot(path=str(path), animations="disabled", caret="hide")
    size = path.stat().st_size
    assert size < SCREEN_MAX_BYTES, f"{path.name} is {size // 1024} KB; keep screens light"
    return path


async def token(daemon: Daemon, role: Role, area: str = "", *, name: str = "") -> str:
    """A token of `role`; `name` is the staff member the records name (four eyes compares
    it), "browser test {role}" by default."""
    issued = await daemon.service.tokens.issue(
        role=role,
        name=name or f"browser test {role}",
        area=area,
        now=daemon.service.clock.now(),
        valid_for=dt.timedelta(days=400),
    )
    return issued.token


def at(month: int, day: int, hour: int, minute: int = 0, second: int = 0) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, minute, second, tzinfo=SAST)


MEMBERS = [
    ("6001001001", "Thandi Mokoena", "Q", "true"),
    ("6001001002", "Johan Botha", "J", "false"),
    ("6001001003", "Sipho Ndlovu", "A", "false"),
    ("6001001004", "Ayesha Patel", "K", "true"),
    ("6001001005", "Pieter van Wyk", "10", "false"),
    ("6001001006", "Nomvula Dlamini", "Q", "true"),
    ("6001001007", "Lerato Khumalo", "J", "false"),
    ("6001001008", "Marius Steyn", "A", "true"),
    ("6001001009", "Zanele Mthembu", "K", "false"),
    ("6001001010", "Grace Naidoo", "Q", "false"),
    ("6001001011", "Bongani Zulu", "J", "true"),
    ("6001001012", "Refilwe Molefe", "10", "false"),
]


DEVICES = [
    *((f"EGM-{n:04d}", "egm", "main", f"B{1 + n % 4}", str(n)) for n in range(401, 413)),
    ("RT-1", "table", "main", "pit-1", "1"),
    ("BJ-2", "table", "main", "pit-1", "2"),
]


ACTIVATED = [card for card, *_ in MEMBERS[:9]]


def members_csv() -> str:
    head = "card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit"
    rows = [f"{c},{n},{t},{a},1980-01-01,true,false,," for c, n, t, a in MEMBERS]
    return "\n".join([head, *rows]) + "\n"


def devices_csv() -> str:
    return "\n".join(["device,kind,area,bank,position", *(",".join(d) for d in DEVICES)]) + "\n"


def promotions_folder(tmp_path: Path, site: str, *ids: str) -> Path:
    """The seed promotion files, moved to this test's site."""
    folder = tmp_path / "promotions"
    folder.mkdir(exist_ok=True)
    for pid in ids:
        text = (PROJECT / "promotions" / f"{pid}.toml").read_text()
        for seed_site in ("golden-horse", "montecasino"):
            text = text.replace(f'site = "{seed_site}"', f'site = "{site}"')
        (folder / f"{pid}.toml").write_text(text)
    return folder


def png(width: int = 48, height: int = 24, rgba: bytes = b"\xff\xc9\x3c\xff") -> bytes:
    """A valid PNG of one colour (a promotion's logo in the tests)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + rgba * width for _ in range(height))
    head = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows))


@dataclass
class Floor:
    daemon: Daemon
    clock: ManualClock
    pub: Publisher


async def golden_horse_week(d: Daemon, clock: ManualClock, pub: Publisher) -> Floor:
    """Members and devices imported; a week of rated play (slots and tables) in the halfway
    draw's window; the Friday board published; activation open on draw day and nine
    members activated at the kiosk. The clock is left at 12:00 on 07 Nov (draw day)."""
    for path, body in (("/members/import", members_csv()), ("/devices/import", devices_csv())):
        r = await d.http.post(path, content=body, headers={"content-type": "text/csv"})
        assert r.status_code == 200, r.text
    sent = 0
    for i, (card, *_rest) in enumerate(MEMBERS):
        egm = f"EGM-{401 + i:04d}"
        day = 1 + i % 4
        sent += pub.egm(egm, event("card_in", card, at(11, day, 18)))
        plays = [game(card, at(11, day, 18, m + 1), 200000, 4000 + 700 * i) for m in range(6)]
        sent += pub.egm(egm, *plays)
        sent += pub.egm(egm, event("card_out", card, at(11, day, 19)))
        if i % 3 == 0:
            table = "RT-1" if i % 2 else "BJ-2"
            sent += pub.table(
                table,
                rating("rating_start", card, at(11, day, 20), 1 + i % 6),
                rating(
                    "rating_end",
                    card,
                    at(11, day, 21),
                    1 + i % 6,
                    wager_cents=900000,
                    points=21000 + 1500 * i,
                ),
            )
    await d.wait_committed(sent)
    clock.set(at(11, 7, 12))
    # the scheduler publishes Friday's board and commits the seeds at activation (08:00)
    await wait_for(lambda: _published(d), "the Friday board to be published")
    await wait_for(lambda: _committed(d), "the seed commitments")
    kiosk = await d.client(Role.KIOSK)
    try:
        for card in ACTIVATED:
            r = await kiosk.post(
                f"/promotions/{GH}/draws/halfway/activations",
                json={"card": card, "channel": "kiosk"},
            )
            assert r.status_code == 200, r.text
    finally:
        await kiosk.aclose()
    return Floor(d, clock, pub)


async def seat_players(d: Daemon, pub: Publisher, when: dt.datetime) -> None:
    """The activated members carded in on the floor at `when` (EGMs, one at a table), so
    the crew's alerts say where each winner is."""
    sent = d.service.ingest.committed
    for i, card in enumerate(ACTIVATED):
        if i == len(ACTIVATED) - 1:
            sent += pub.table("RT-1", rating("rating_start", card, when, 3))
        else:
            sent += pub.egm(f"EGM-{401 + i:04d}", event("card_in", card, when))
    await d.wait_committed(sent)


async def _published(d: Daemon) -> bool:
    board = await d.get(f"/promotions/{GH}/draws/halfway/leaderboards/slots")
    return bool(board.get("published_at")) and bool(board.get("entries"))


async def _committed(d: Daemon) -> bool:
    book = await d.get(f"/promotions/{GH}/draws/halfway/book")
    return all(r["seed_commitment"] for r in book["rounds"])


async def wait_for(
    predicate: Callable[[], Awaitable[bool]], what: str, timeout: float = 20
) -> None:
    """Poll an async predicate until it holds (a generous limit, not a timing assertion)."""
    try:
        async with asyncio.timeout(timeout):
            while not await predicate():
                await asyncio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"waited {timeout} s for {what}")
