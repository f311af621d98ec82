"""The scheduler: runs each promotion's timed actions (leaderboard publications, entry
bins closing, multiplier windows, and later draw rounds and jackpots) at their instants on
the daemon's clock, so simulated, accelerated time drives it exactly like real time.

Each action runs once: a marker in Redis (`fired:{instant}:{action}:{ids}`) is written
when it has run, and a restarted daemon runs what it missed, in order, late rather than
never. Handlers are idempotent, so a crash between running and marking only repeats work
that changes nothing.

Only the site's leader runs the scheduler. With a `Fence` (bonusd/infra/leader.py), the check
before an action and its marker are scripts that first compare the lease with this
daemon's fencing token: a leader that lost its lease (paused, cut off) is refused
(`FencedOut`) and its timetable stops, so it can neither start nor mark an action the
new leader owns.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from redis.asyncio import Redis

from bonusd.clocks.clock import Clock, sleep_until_or_stop
from bonusd.errors import BonusdError, ConflictError
from bonusd.infra.backoff import Backoff, pause
from bonusd.infra.keys import Keys
from bonusd.infra.leader import Claim, Fence, FencedOut
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.promotions import Action, Promotion, TimedAction
from bonusd.promotions.timetable import promotion_timetable

logger = logging.getLogger(__name__)

Handler = Callable[[TimedAction], Awaitable[None]]
# actions whose late run only matters for the newest instance
COALESCED = frozenset({Action.LEADERBOARD_PUBLISH})


class Scheduler:
    """Drives the timed actions of the site's promotions from a `Clock`."""

    def __init__(
        self,
        *,
        promotions: Sequence[Promotion],
        clock: Clock,
        redis: Redis,
        keys: Keys,
        handlers: Mapping[Action, Handler],
        fence: Fence | None = None,
    ) -> None:
        self._promotions = tuple(promotions)
        self._clock = clock
        self._redis = redis
        self._keys = keys
        self._handlers = dict(handlers)
        self._fence = fence
        self._reloaded = asyncio.Event()
        self.fired = 0
        self.caught_up = asyncio.Event()  # set once nothing due is left to run
        # the instant of the action being waited for or run (None: none left), so a driver
        # of simulated time (simulators/rehearsal/run.py) knows when every action up to T has run
        self.next_at: dt.datetime | None = None

    def reload(self, promotions: Sequence[Promotion]) -> None:
        """Use new promotion rules from now on: the timetable is rebuilt at once; actions
        that already ran (their markers) are not run again."""
        self._promotions = tuple(promotions)
        self._reloaded.set()

    async def timetable(self) -> list[TimedAction]:
        """Every action of every promotion, in order. Random jackpot times come from a seed
        kept per promotion in Redis, so a restart sees the same times."""
        out: list[TimedAction] = []
        for promotion in self._promotions:
            out += await promotion_timetable(self._redis, self._keys, promotion)
        return sorted(out, key=lambda a: a.sort_key)

    def _superseded(self, action: TimedAction, later: list[TimedAction]) -> bool:
        """A late publication with a newer one of the same board already due is skipped:
        publishing today's totals under last week's date would mislead."""
        if action.action not in COALESCED:
            return False
        now = self._clock.now()
        for nxt in later:
            if nxt.at > now:
                return False
            if nxt.action is action.action and nxt.ids == action.ids:
                logger.info(
                    "%s %s skipped: superseded by %s",
                    action.action.value,
                    "/".join(action.ids),
                    nxt.at.isoformat(),
                )
                return True
        return False

    def _marker(self, action: TimedAction) -> str:
        return self._keys.fired(
            f"{action.at.isoformat()}:{action.action.value}:{':'.join(action.ids)}"
        )

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._reloaded.clear()
            await self._run_timetable(stop)
            if not self._reloaded.is_set():
                return

    async def _run_timetable(self, stop: asyncio.Event) -> None:
        backoff = Backoff()
        while True:
            try:
                timetable = await self.timetable()
                break
            except REDIS_ERRORS as exc:
                logger.warning("scheduler waits for Redis (%s)", exc)
                if await pause(stop, backoff.next_delay()):
                    return
        actions = [a for a in timetable if a.action in self._handlers]
        logger.info("scheduler: %d timed action(s) with handlers", len(actions))
        for position, action in enumerate(actions):
            self.next_at = action.at
            if action.at > self._clock.now():
                self.caught_up.set()
            if await sleep_until_or_stop(self._clock, action.at, stop, self._reloaded):
                return
            if self._superseded(action, actions[position + 1 :]):
                continue
            backoff.reset()
            while True:
                try:
                    await self._fire(action)
                    break
                except REDIS_ERRORS as exc:
                    logger.warning("%s waits for Redis (%s)", action.action.value, exc)
                    if await pause(stop, backoff.next_delay()):
                        return
                except FencedOut as exc:  # the lease was lost (to load): a recovered fault
                    logger.warning("scheduler stops until this daemon leads again: %s", exc)
                    return
                except ConflictError as exc:  # lost races only: nothing written, try again
                    logger.warning(
                        "%s %s retries: %s", action.action.value, "/".join(action.ids), exc
                    )
                    if await pause(stop, backoff.next_delay()):
                        return
                except BonusdError as exc:
                    # a refused step (e.g. an altered draw) must not stop every other
                    # promotion's timetable; it stays unmarked, so a restart tries again
                    logger.error("%s %s failed: %s", action.action.value, "/".join(action.ids), exc)
                    break
        self.next_at = None
        self.caught_up.set()  # every action ran: nothing is due, ever again

    async def _fire(self, action: TimedAction) -> None:
        marker = self._marker(action)
        if self._fence is not None:
            if await self._fence.claim(marker) is Claim.FIRED:
                return
        elif await self._redis.exists(marker):
            return
        late = self._clock.now() - action.at
        if late > dt.timedelta(minutes=1):
            logger.warning("running %s %s late by %s", action.action, "/".join(action.ids), late)
        await self._handlers[action.action](action)
        if self._fence is not None:
            if not await self._fence.mark(marker, self._clock.now().isoformat()):
                logger.warning("%s %s was marked by another leader", action.action.value, marker)
                return
        else:
            await self._redis.set(marker, self._clock.now().isoformat())
        self.fired += 1
        logger.info("%s %s done", action.action.value, "/".join(action.ids))
