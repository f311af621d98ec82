"""The demo's floor: the simulator as a child process, and the people of the floor as
clients of the daemon like any real ones.

- `Kiosk`: players printing their draw entries at the eHost kiosk (three in four of those
  playing while a draw's activation is open), through `POST …/activations`;
- `CrewFeed`: the crew stream (`/ws/crew`) as a handheld sees it, kept current;
- `CrewBot`: a crew member working the alerts of that stream, posting the actions each
  alert lists, but only on an alert nobody touched for `after` wall seconds (every step
  of it: once a person takes a step, the next waits `after` again), so a person on the
  `/crew` page always gets there first and keeps the claim. From the second round of each draw on,
  one winner never comes forward (a no-show, then a redraw), and every second RAPS
  winner has left the machine (not at device, called over the PA, presents on stage);
- `SlowMotion`: the demo's clock operator. The floor runs at the demo's speed (x60), but
  a claim's 90 seconds would then last a second and a half, so the shared clock runs at
  x1 from just before each draw round and jackpot until every open claim is settled.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from bonusd.infra.sharedclock import SharedClock
from bonusd.registry.masking import mask_name

logger = logging.getLogger("simulators.demo.main")
LEAD = dt.timedelta(seconds=3)  # x1 this long (simulated) before a round or a jackpot ...
HOLD = dt.timedelta(seconds=4)  # ... and after it, until its claims show on the crew stream
STEP_S = 2.0  # wall seconds between the crew's steps on one claim (present, verify, ...)
POLL_S = 0.25

# Starts the simulator with SIGTERM as its parent-death signal (Linux), so it stops even if
# the demo is killed (kill -9) before it could stop it; argv: the demo's pid, then the
# simulator's arguments.
LAUNCHER = """
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except Exception:
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)  # the demo is gone already
os.execv(sys.executable, [sys.executable, "-m", "simulators", *sys.argv[2:]])
"""


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


@dataclass(frozen=True, slots=True)
class DrawWindow:
    """When a draw's entries may be activated: [opens, closes)."""

    promotion: str
    draw: str
    opens: dt.datetime
    closes: dt.datetime


class Kiosk:
    """The eHost kiosk: three in four of the members playing while a draw's activation is
    open print their entries (the same three in four every run: a hash of the card)."""

    def __init__(
        self,
        *,
        clock: SharedClock,
        desk: httpx.AsyncClient,
        kiosk: httpx.AsyncClient,
        windows: Sequence[DrawWindow],
    ) -> None:
        self._clock, self._desk, self._kiosk = clock, desk, kiosk
        self._windows = tuple(windows)
        self._done: set[tuple[str, str, str]] = set()
        self.activated = 0

    @staticmethod
    def prints(card: str) -> bool:
        return zlib.crc32(card.encode()) % 4 != 0

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            now = self._clock.now()
            if all(w.closes <= now for w in self._windows):
                return
            for w in (w for w in self._windows if w.opens <= now < w.closes):
                try:
                    await self._round(w)
                except httpx.HTTPError as exc:
                    logger.warning("demo kiosk: %s", exc)
            await _pause(stop, 1.0)

    async def _round(self, w: DrawWindow) -> None:
        response = await self._desk.get("/floor/active")
        response.raise_for_status()
        for row in response.json():
            key = (w.promotion, w.draw, str(row["card"]))
            if key in self._done:
                continue
            self._done.add(key)
            if not self.prints(key[2]):
                continue
            path = f"/promotions/{w.promotion}/draws/{w.draw}/activations"
            answer = await self._kiosk.post(path, json={"card": key[2], "channel": "kiosk"})
            if answer.status_code == 200:
                self.activated += 1
            elif answer.status_code != 409:  # 409: refused (the bin closed meanwhile)
                answer.raise_for_status()


class CrewFeed:
    """The crew stream as a handheld sees it: `alerts` is the open alerts, by urgency."""

    def __init__(self, url: str, token: str) -> None:
        self._url, self._token = url, token
        self.alerts: list[dict[str, Any]] = []

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async with connect(self._url, open_timeout=5, close_timeout=1) as ws:
                    await ws.send(json.dumps({"token": self._token}))
                    seq = -1
                    async for raw in ws:
                        msg = json.loads(raw)
                        if msg["type"] == "snapshot":
                            self.alerts, seq = list(msg["state"]["alerts"]), msg["seq"]
                        elif msg["type"] == "delta":
                            if msg["seq"] != seq + 1:
                                break  # a gap: reconnect for a fresh snapshot
                            seq = msg["seq"]
                            if "alerts" in msg["set"]:
                                self.alerts = list(msg["set"]["alerts"])
            except (OSError, TimeoutError, WebSocketException) as exc:
                logger.debug("demo crew stream: %s; reconnecting", exc)
            await _pause(stop, 0.5)


@dataclass(slots=True)
class _Seen:
    state: str
    since: float  # wall time (monotonic) the alert was first seen in this state
    acted: bool = False


@dataclass(slots=True)
class CrewBot:
    """A crew member on the demo's floor, working the alerts of `feed` (see the module
    docstring for the stories it plays)."""

    feed: CrewFeed
    http: httpx.AsyncClient
    after: float  # wall seconds an alert waits for a person before the bot takes it
    _seen: dict[tuple[str, int], _Seen] = field(default_factory=dict)
    _left_alone: set[tuple[str, int]] = field(default_factory=set)  # no-shows chosen
    _no_show_rounds: set[tuple[str, int]] = field(default_factory=set)
    # alerts whose last step the bot took: it goes on with them after STEP_S; any other
    # waits `after` from its last change, so a person who took a step keeps the claim
    _mine: set[tuple[str, int]] = field(default_factory=set)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            now = time.monotonic()
            for row in list(self.feed.alerts):
                key = (str(row["subject"]), int(row["claim"]))
                seen = self._seen.get(key)
                if seen is None or seen.state != row["state"]:
                    if seen is not None and not seen.acted:
                        self._mine.discard(key)  # a person (or a timer) moved it on
                    self._seen[key] = _Seen(str(row["state"]), now)
                    continue
                wait = STEP_S if key in self._mine else self.after
                if seen.acted or now - seen.since < wait:
                    continue
                action = self.choose(row)
                if action is not None:
                    seen.acted = True  # once per state: the next step waits for the change
                    self._mine.add(key)
                    await self._act(row, action)
            await _pause(stop, POLL_S)

    def choose(self, row: dict[str, Any]) -> str | None:
        """The step the bot takes next on this alert, if it is one the alert allows."""
        key = (str(row["subject"]), int(row["claim"]))
        state, actions = row["state"], row["actions"]
        if row["kind"] == "draw":
            if state == "announced" and int(row["round"]) >= 2:
                this_round = (key[0], int(row["round"]))
                if this_round not in self._no_show_rounds:
                    self._no_show_rounds.add(this_round)
                    self._left_alone.add(key)
            if key in self._left_alone:
                return None  # this winner never comes: the deadline makes it a no-show
            step = {"announced": "present", "presented": "verify", "verified": "pick_reveal"}
        else:
            away = int(row["jackpot"]) % 2 == 0  # every second winner has left the machine
            step = {
                "alerted": "crew_arrived",
                "crew_at_device": "not_at_device" if away else "verify_at_device",
                "not_at_device": "announce",
                "announced": "present",
                "presented": "verify",
            }
        action = step.get(state)
        return action if action in actions else None

    async def _act(self, row: dict[str, Any], action: str) -> None:
        path = row["endpoints"][action]
        bodies: list[dict[str, Any] | None] = [None]
        if action == "verify" and row["kind"] == "draw":
            bodies = [{"id_checked": True, "receipt_checked": True}]
        if action == "pick_reveal":  # the winner points at a reveal not picked yet
            bodies = [{"reveal": n} for n in range(1, 21)]
        for body in bodies:
            try:
                response = await self.http.post(path, json=body)
            except httpx.HTTPError as exc:
                logger.warning("demo crew: %s on %s: %s", action, row["title"], exc)
                return
            if response.status_code == 200:
                logger.info(
                    "demo crew: %s, claim %s (%s): %s",
                    row["title"],
                    row["claim"],
                    mask_name(str(row["name"])),  # as signage shows it: no full name in a log
                    action.replace("_", " "),
                )
                return
            if response.status_code != 409 or action != "pick_reveal":
                break  # 409: someone acted first, or the time ran out; the feed shows it
        logger.info("demo crew: %s on %s refused: %s", action, row["title"], response.text)


class SlowMotion:
    """Runs the shared clock at the demo's speed, and at x1 from `LEAD` before each of
    `moments` (draw rounds, jackpots) until `HOLD` after it and while any alert is open."""

    def __init__(self, clock: SharedClock, feed: CrewFeed, moments: Sequence[dt.datetime]) -> None:
        self._clock, self._feed = clock, feed
        self._moments = sorted(moments)
        self._fast = 0.0  # the speed to go back to; 0 while running fast
        self.slowed = 0

    def _wanted(self, now: dt.datetime) -> str:
        if self._feed.alerts:
            return "a claim is open"
        for m in self._moments:
            if m - LEAD <= now <= m + HOLD:
                return "a draw round or a jackpot is due"
        return ""

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            now = self._clock.now()
            why = self._wanted(now)
            if why and not self._fast and self._clock.state.speed > 1:
                self._fast = self._clock.state.speed
                await self._clock.set_speed(1)
                self.slowed += 1
                logger.info("demo clock: x1 from %s (%s)", now.isoformat(), why)
            elif not why and self._fast:
                await self._clock.set_speed(self._fast)
                logger.info("demo clock: x%g again from %s", self._fast, now.isoformat())
                self._fast = 0.0
            wait = POLL_S
            state = self._clock.state
            ahead = [m - LEAD for m in self._moments if m - LEAD > now]
            if ahead and not state.paused:
                wait = min(wait, (ahead[0] - now).total_seconds() / state.speed)
            await _pause(stop, max(wait, 0.002))


# -- the simulated floor: a child process -----------------------------------------------
async def start_simulator(args: Sequence[str]) -> asyncio.subprocess.Process:
    """`python -m simulators ARGS` in a session of its own (a Ctrl-C in the terminal reaches
    the demo, which stops the floor), with the demo's death as its SIGTERM."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", LAUNCHER, str(os.getpid()), *args,
        stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


async def watch_simulator(simulator: asyncio.subprocess.Process, stop: Callable[[], None]) -> None:
    """Say when the simulator ends by itself; stop the demo if it failed."""
    code = await simulator.wait()
    if code == 0:
        logger.warning("demo: the simulated floor closed (its hours ran out); Ctrl-C stops")
    else:
        logger.error("demo: the floor simulator failed (exit %s); stopping", code)
        stop()


async def stop_simulator(simulator: asyncio.subprocess.Process) -> int:
    """SIGTERM, then SIGKILL after 10 s; its exit status."""
    if simulator.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            simulator.terminate()
        try:
            return await asyncio.wait_for(simulator.wait(), 10)
        except TimeoutError:
            simulator.kill()
    return await simulator.wait()
