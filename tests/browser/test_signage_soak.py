"""The signage page's stream client against a scripted server (Playwright's websocket
routing stands in for the daemon, so every frame is chosen): it runs for days without
growing — over a thousand deltas leave the DOM node and listener counts where they were —
and it keeps the protocol: a gap in `seq` or a new epoch reconnects with `resume`, a drop
shows "reconnecting" and recovers by itself, a refused token says so."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.async_api import Browser, Page, WebSocketRoute, expect

from tests.browser.helpers import new_page
from tests.browser.signage_helpers import hold_credential
from tests.daemon_helpers import Daemon

pytestmark = pytest.mark.browser
AT = "2026-11-07T19:00:00+02:00"
# the deltas after the warm-up (a multiple of 6: they end in the warm-up's phase of every
# section), and the DOM nodes they may add: one per 60 deltas at most (the page renders
# each delta in a few ms, nearly all of this test's time)
SOAK, NODES_PER_DELTA = 1200, 1 / 60


def winners(round_no: int, settled: bool) -> list[dict[str, Any]]:
    rows = []
    for k in range(5):
        claim = round_no * 10 + k
        rows.append(
            {
                "promotion": "p",
                "draw": "halfway",
                "title": "Halfway draw",
                "claim": claim,
                "tombola": "pooled",
                "round": round_no,
                "name": f"{'ABCDE'[k]}. S****",
                "card": f"****{1000 + claim}",
                "prize": "R500" if settled and k == 0 else None,
                "state": ("reveal_picked" if k == 0 else "no_show") if settled else "announced",
                "at": AT,
                "deadline": None if settled else "2026-11-07T19:01:30+02:00",
                "outcome": ("won" if k == 0 else "no_show") if settled else None,
            }
        )
    return rows


def board(shift: int) -> dict[str, Any]:
    rows = [
        {
            "rank": r + 1,
            "name": "T. M****",
            "card": f"****{r:04d}",
            "points": 90000 - r * 1000 + shift,
        }
        for r in range(10)
    ]
    return {
        "promotion": "p",
        "draw": "halfway",
        "published_at": AT,
        "slots": rows,
        "tables": rows[:6],
    }


def state(i: int) -> dict[str, Any]:
    return {
        "promotion": {"id": "p", "name": f"Soak {i}", "site": "s"},
        "next_draw": {
            "promotion": "p",
            "draw": "halfway",
            "name": "Halfway draw",
            "round": 1 + i % 3,
            "at": "2026-11-07T20:00:00+02:00",
            "commitment": f"{i:064x}",
        },
        "multiplier": {"factor": 3, "ends_at": "2026-11-07T21:00:00+02:00", "label": "3x points"}
        if i % 2
        else None,
        "boards": board(i),
        "announcements": winners(i // 2, settled=bool(i % 2)),
        "jackpot": {
            "session": "s",
            "number": i,
            "at": AT,
            "amount_cents": 500000,
            "state": "upcoming",
            "winner": None,
            "deadline": None,
            "name": "Bonus Jackpot",
        },
    }


class FakeDaemon:
    """The signage stream as a script: records each connection's first frame."""

    def __init__(self) -> None:
        self.connections: list[WebSocketRoute] = []
        self.hellos: list[dict[str, Any]] = []
        self.epoch, self.seq = "e1", 0

    async def handler(self, ws: WebSocketRoute) -> None:
        self.connections.append(ws)

        def on_message(message: str | bytes) -> None:
            frame = json.loads(message)
            if "token" in frame:
                self.hellos.append(frame)
                self.snapshot(ws, 0)

        ws.on_message(on_message)

    def snapshot(self, ws: WebSocketRoute, i: int) -> None:
        ws.send(
            json.dumps(
                {
                    "type": "snapshot",
                    "stream": "signage:s:main",
                    "epoch": self.epoch,
                    "seq": self.seq,
                    "at": AT,
                    "state": state(i),
                }
            )
        )

    def delta(self, i: int, *, seq: int | None = None) -> None:
        self.seq = self.seq + 1 if seq is None else seq
        sections = state(i)
        self.connections[-1].send(
            json.dumps(
                {
                    "type": "delta",
                    "epoch": self.epoch,
                    "seq": self.seq,
                    "at": AT,
                    "set": sections,
                    "events": [],
                }
            )
        )


async def until(predicate: Callable[[], bool], what: str, timeout: float = 20) -> None:
    """Wait for a condition (a generous limit, not a timing assertion)."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.02)
    except TimeoutError:
        pytest.fail(f"waited {timeout} s for {what}")


async def counters(page: Page) -> dict[str, int]:
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("HeapProfiler.collectGarbage")
    found = await cdp.send("Memory.getDOMCounters")
    await cdp.detach()
    return {k: int(v) for k, v in found.items()}


async def test_signage_stream_client_keeps_the_protocol_and_does_not_grow(
    browser: Browser, daemon: Daemon
) -> None:
    fake = FakeDaemon()
    page = await new_page(browser)
    await page.route_web_socket(re.compile(r".*/ws/signage.*"), fake.handler)
    base = str(daemon.http.base_url).rstrip("/")
    await hold_credential(page, base, "bd_soak_token")  # as pairing leaves it
    await page.goto(f"{base}/signage?area=main")
    await expect(page.locator("body")).to_have_class("live")
    assert fake.hellos == [{"token": "bd_soak_token"}]

    # warm up, then over a thousand deltas through every section, ending in the same phase
    for i in range(1, 201):
        fake.delta(i)
    await expect(page.locator("#promotion-name")).to_have_text("Soak 200")
    before = await counters(page)
    for i in range(201, 201 + SOAK):
        fake.delta(i)
    await expect(page.locator("#promotion-name")).to_have_text(f"Soak {200 + SOAK}")
    after = await counters(page)
    assert after["nodes"] <= before["nodes"] + SOAK * NODES_PER_DELTA, (before, after)
    assert after["jsEventListeners"] <= before["jsEventListeners"], (before, after)
    assert after["documents"] <= before["documents"], (before, after)
    await expect(page.locator("#winners .winner")).to_have_count(5)

    # a gap in seq: reconnect at once and resume from the last delta applied
    last = fake.seq
    fake.delta(201 + SOAK, seq=last + 2)
    await until(lambda: len(fake.hellos) == 2, "a resumed connection")
    assert fake.hellos[1] == {"token": "bd_soak_token", "resume": {"epoch": "e1", "seq": last}}
    await expect(page.locator("body")).to_have_class("live")

    # a delta of another epoch (the daemon restarted): resume is asked, a snapshot answers
    fake.epoch = "e2"
    fake.delta(202 + SOAK)
    await until(lambda: len(fake.hellos) == 3, "a connection after the new epoch")
    assert fake.hellos[2]["resume"]["epoch"] == "e1"

    # the connection drops: "reconnecting", then live again by itself
    await fake.connections[-1].close(code=1011, reason="gone")
    await expect(page.locator("body")).to_have_class("live")
    assert len(fake.hellos) == 4

    # a refused credential is said plainly, and the screen pairs again (nothing it showed stays)
    await fake.connections[-1].close(code=4401, reason="token t1 expired")
    await expect(page.locator("body")).to_have_class("pairing")
    await expect(page.locator("#pairing-note")).to_contain_text("token t1 expired")
    await expect(page.locator("#promotion-name")).not_to_be_visible()
