"""The demo's crew leaves a claim to a person: it takes a step only on an alert nobody
touched for `after` seconds, every step of it, not only the first (a person pressed
"Presented" and the demo crew verified 2.6 s later).

The bot reads the wall time with `time.monotonic()` and waits between looks with the
module's `_pause`: both are replaced by a virtual wall clock that a pause moves on, so
the seconds below are exact and take no real time."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from simulators.demo import floor
from simulators.demo.floor import CrewBot

PATH = "/claims/1/"


def alert(state: str) -> dict[str, Any]:
    actions = ["present", "verify", "pick_reveal"]
    return {
        "subject": "gh.halfway", "claim": 1, "kind": "draw", "round": 1, "state": state,
        "actions": actions, "endpoints": {a: PATH + a for a in actions},
        "title": "Halfway round 1", "name": "T. Winner",
    }  # fmt: skip


class Feed:
    def __init__(self) -> None:
        self.alerts: list[dict[str, Any]] = []


class WallClock:
    """The bot's wall time: it moves only when the bot pauses between its looks."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    async def pause(self, stop: asyncio.Event, seconds: float) -> None:
        if not stop.is_set():
            self.now += seconds
        await asyncio.sleep(0)  # the test (and the mock server) take their turn

    async def until(self, instant: float) -> None:
        while self.now < instant:
            await asyncio.sleep(0)


async def until_posted(posted: list[tuple[str, float]], action: str) -> float:
    """When the bot posted `action` (waiting for it up to 20 real seconds)."""
    async with asyncio.timeout(20):
        while not any(name == action for name, _ in posted):
            await asyncio.sleep(0)
    return next(at for name, at in posted if name == action)


async def test_a_claim_a_person_worked_on_waits_for_them_at_every_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wall = WallClock()
    monkeypatch.setattr(floor, "time", SimpleNamespace(monotonic=wall.monotonic))
    monkeypatch.setattr(floor, "_pause", wall.pause)
    posted: list[tuple[str, float]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        posted.append((request.url.path.rsplit("/", 1)[-1], wall.monotonic()))
        return httpx.Response(200, json={})

    feed = Feed()
    http = httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://bonusd")
    bot = CrewBot(feed, http, after=3.0)  # type: ignore[arg-type]
    stop = asyncio.Event()
    task = asyncio.create_task(bot.run(stop))
    try:
        feed.alerts = [alert("announced")]
        await wall.until(wall.now + 1.0)
        feed.alerts = [alert("presented")]  # a person pressed "Presented"
        pressed = wall.monotonic()
        verified_at = await until_posted(posted, "verify")
        # not at the bot's own pace (2 s a step): nobody touched it for `after` first
        assert verified_at - pressed >= 3.0, verified_at - pressed
        assert [name for name, _ in posted] == ["verify"]
        feed.alerts = [alert("verified")]  # its own step: it goes on with the claim
        await until_posted(posted, "pick_reveal")
    finally:
        stop.set()
        await task
        await http.aclose()
