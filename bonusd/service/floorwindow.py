"""When a daemon keeps its copy of the floor current for RAPS picks (`FloorMirror`,
docs/draws.md, "The RAPS floor mirror"): from `BONUSD_RAPS_FLOOR_LEAD_S` before a session's
first jackpot until no pick from the floor is still to come. Outside those windows the copy
is let go, so a RAPS site spends neither the event loop's time (about 2 ms every 0.25 s)
nor the memory of 20,000 rows all day; a pick outside a window still works, reading the
floor whole (about 70 ms at 20,000 players) once.

Only a pick reads the live floor: a claim's reselection picks from the jackpot's frozen
pool, and the crew's places come from the floor archived with it. So a session's window
opens `lead` before its first jackpot (a session with random times not yet known here:
before its start) and stays open until `SETTLE` after its last jackpot (or its end); after
that, for at most `TAIL`, while a jackpot of the session may still be picked: in the
runner's book of it, one not run yet or an empty pool's retry to come; without that book
(a daemon that never loaded the session), while the session has a timer in the deadline
index (a claim's or a retry's: the index does not tell which). The windows and the
pending picks are read every `check_s` seconds, not at every sync. After a
release the C heap's free pages go back to the system (`trim_heap`): what the mirror and the
picks freed would otherwise stay in the daemon's RSS until the next evening reused it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from bonusd.errors import BonusdError
from bonusd.infra.heap import trim_heap
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.promotions import Promotion
from bonusd.raps.runner import RapsRunner
from bonusd.settings import Settings

logger = logging.getLogger(__name__)

SETTLE = dt.timedelta(seconds=60)  # after the last jackpot: its pick and its claim begin
TAIL = dt.timedelta(hours=12)  # the longest a session's pending picks keep the floor followed
CHECK_S = 5.0  # seconds between two reads of the windows and the open claims
NEAR = dt.timedelta(seconds=10)  # before a jackpot's time: the mirror syncs every `near_s`


@dataclass(frozen=True)
class SessionWindow:
    """One RAPS session's stretch of the daemon's clock that needs the live floor."""

    promotion_id: str
    session_id: str
    subject: str
    opens: dt.datetime  # `lead` before the first jackpot
    last: dt.datetime  # the last jackpot (a session's end while its random times are unknown)
    times: tuple[dt.datetime, ...] = ()  # its jackpots' times, when known here


class FloorWindow:
    """Follows the floor (`FloorMirror.follow`) only while some RAPS session needs it, and
    frees the copy when none does."""

    def __init__(
        self,
        jackpots: RapsRunner,
        promotions: Callable[[], tuple[Promotion, ...]],
        *,
        lead_s: float,
        every_s: float,
        near_s: float | None = None,
        check_s: float = CHECK_S,
        base_lead_s: float = 0.0,
    ) -> None:
        self.jackpots, self.mirror = jackpots, jackpots.live_floor
        self._promotions = promotions
        self.lead = dt.timedelta(seconds=lead_s)
        self.every_s, self.check_s = every_s, check_s
        self.near_s = every_s if near_s is None else min(near_s, every_s)
        self.windows: list[SessionWindow] = []
        self.unsettled: set[str] = set()  # sessions past their window with picks to come
        self.releases = 0  # how many times the copy was let go (for tests and logs)
        self.base_lead = dt.timedelta(seconds=base_lead_s)  # 0: picks archive the floor whole
        self.based: dict[tuple[str, int], dt.datetime] = {}  # (session, jackpot) -> its time

    @classmethod
    def of(
        cls,
        settings: Settings,
        jackpots: RapsRunner,
        promotions: Callable[[], tuple[Promotion, ...]],
    ) -> FloorWindow:
        """The window the settings give (`BONUSD_RAPS_FLOOR_LEAD_S`, `..._SYNC_S`,
        `..._NEAR_SYNC_S`)."""
        every_s, lead_s = settings.raps_floor_sync_s, settings.raps_floor_lead_s
        near_s, base_s = settings.raps_floor_near_sync_s, settings.raps_floor_base_lead_s
        return cls(
            jackpots, promotions, lead_s=lead_s, every_s=every_s, near_s=near_s, base_lead_s=base_s
        )

    def sessions(self) -> list[SessionWindow]:
        """The window of every RAPS session of the promotions running now."""
        out = []
        for promotion in self._promotions():
            for session in promotion.jackpot_sessions:
                times: tuple[dt.datetime, ...] = ()
                try:
                    times = tuple(self.jackpots.plan(promotion.id, session.id).times)
                    first, last = min(times), max(times)
                except BonusdError:  # random times not loaded here: the whole session
                    first = dt.datetime.combine(session.date, session.start, promotion.zone)
                    last = dt.datetime.combine(session.date, session.end, promotion.zone)
                subject = f"{promotion.id}.{session.id}"
                opens = first - self.lead
                out.append(SessionWindow(promotion.id, session.id, subject, opens, last, times))
        return out

    def wanted(self, now: dt.datetime | None = None) -> bool:
        """Whether a session needs the live floor now (as of the last `check`)."""
        now = now or self.jackpots.clock.now()
        return bool(self.unsettled) or any(w.opens <= now <= w.last + SETTLE for w in self.windows)

    def interval(self, now: dt.datetime | None = None) -> float:
        """Seconds until the next sync: `near_s` from `NEAR` before a jackpot's time until
        `SETTLE` after it (the pick's own sync then carries a fraction of the changes a
        regular interval gathers), `every_s` otherwise."""
        now = now or self.jackpots.clock.now()
        close = any(
            at - NEAR <= now <= at + SETTLE for window in self.windows for at in window.times
        )
        return self.near_s if close else self.every_s

    async def check(self) -> None:
        """Read the windows again, and which sessions past theirs may still pick from the
        floor: the runner's books it holds already, and one Redis call for the deadline
        index of the others."""
        now = self.jackpots.clock.now()
        self.windows = self.sessions()
        tail = [w for w in self.windows if w.last + SETTLE < now <= w.last + TAIL]
        if not tail:
            self.unsettled = set()
            return
        members = [f"{self.jackpots.kind}:{w.subject}" for w in tail]
        timed = await self.jackpots.redis.zmscore(self.jackpots.deadlines, members)
        self.unsettled = {
            w.subject
            for w, at in zip(tail, timed, strict=True)
            if self._picks_ahead(w, at is not None)
        }

    def _picks_ahead(self, window: SessionWindow, timed: bool) -> bool:
        """Whether the session may still pick from the floor: as the runner's book of it
        says, if it holds one; otherwise whether it has a timer in the deadline index. The
        book is taken as cached, not read again: that would keep it in the desk's cache
        (with the floors of its open jackpots) all through the tail; one behind its ledger
        can only say a pick is still to come when another daemon has made it."""
        book = self.jackpots.cached(window.subject)
        if book is None:
            return timed  # not held here: a claim's timer or a retry's, unknown which
        return any(st.to_pick for st in book.jackpots.values())

    async def run(self, stop: asyncio.Event) -> None:
        """Follow the floor while it is wanted, and free it when not, until `stop`."""
        await self._check_quietly()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.mirror.follow(stop, self.interval, self.wanted), name="floor")
            tg.create_task(self._watch(stop), name="floor-window")

    async def _watch(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.check_s)
            await self._check_quietly()
            if not self.wanted() and self.mirror.seq is not None and self.mirror.release():
                self.releases += 1
                trim_heap()
                logger.info("RAPS floor mirror released: no session needs it until the next")

    async def bases(self, stop: asyncio.Event) -> None:
        """Archive each jackpot's base `base_lead` before its time (`prepare_floor`), so its
        pick archives only what changed since (the leader runs this: it runs the picks),
        until `stop`."""
        if not self.base_lead:
            return
        while not stop.is_set():
            await self.prepare_due()
            self.compact()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.near_s)

    async def prepare_due(self, now: dt.datetime | None = None) -> int:
        """Archive the base of every jackpot whose time is within `base_lead` (once each);
        returns how many. A failure is logged: that pick archives its floor whole."""
        now = now or self.jackpots.clock.now()
        self.based = {k: at for k, at in self.based.items() if at > now - SETTLE}
        done = 0
        for window in self.windows:
            for number, at in enumerate(window.times, 1):
                if not at - self.base_lead <= now < at or (window.subject, number) in self.based:
                    continue
                self.based[(window.subject, number)] = at
                try:
                    ok = await self.jackpots.prepare_floor(
                        window.promotion_id, window.session_id, number
                    )
                    done += ok
                except (BonusdError, *REDIS_ERRORS) as exc:
                    logger.warning(
                        "RAPS jackpot %s.j%d: its floor base was not archived (%s); its pick "
                        "archives the whole floor",
                        window.subject,
                        number,
                        exc,
                    )
        return done

    def compact(self) -> int:
        """Hold the floors of the jackpots picked here as one string each, once picked
        (`FloorSnapshot.compact`: the pick keeps them as the mirror's lines, which hold
        about 2.7 times the memory once the mirror has moved on); how many were."""
        done = 0
        for window in self.windows:
            book = self.jackpots.cached(window.subject)
            for st in book.jackpots.values() if book is not None else ():
                if st.floor is not None and not isinstance(st.floor.source, str):
                    st.floor = st.floor.compact()
                    done += 1
        return done

    async def _check_quietly(self) -> None:
        try:
            await self.check()
        except REDIS_ERRORS as exc:  # the windows stay as last read; Redis is watched elsewhere
            logger.debug("RAPS floor window: Redis unavailable (%s)", exc)
