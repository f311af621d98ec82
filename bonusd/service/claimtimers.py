"""Claim timers: acts on every deadline of the `deadlines` index when it passes.

Deadlines are data in Redis, never sleeps: each draw or RAPS session keeps its next
deadline in one sorted set (`deadlines`: `draw:{subject}` or `raps:{subject}` -> epoch
seconds), written in the same transaction as the step that set it. This task waits on
the daemon's clock until the earliest one (or until a step changes the index), then
asks the owner of that subject to run whatever is due (a no-show, a reselection, a
lapsed letter). A restarted daemon finds the same deadlines and keeps them.

Only the site's leader runs the timers. A desk step taken on another daemon changes
the index without poking this task, so it also listens to the audit trail's channel
(`{base}notify`, published after every commit) and looks again on each message. With a
`Fence`, the leader checks it still holds the lease before acting; the steps themselves
are ledger commits against the ledger's length, so two daemons acting on one claim at
once (an old leader that lost its lease mid-step) still record it once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from redis.asyncio import Redis

from bonusd.clocks.clock import Clock, sleep_until_or_stop
from bonusd.errors import BonusdError, ConflictError
from bonusd.infra.backoff import Backoff, pause
from bonusd.infra.channel import listen
from bonusd.infra.leader import Fence, FencedOut
from bonusd.infra.redisclient import REDIS_ERRORS

logger = logging.getLogger(__name__)

RunDue = Callable[[str], Awaitable[int]]
"""Given a subject, act on its expired timers; returns how many actions ran."""
IDLE = dt.timedelta(minutes=5)  # re-read the index at least this often (clock time)
SLACK = dt.timedelta(milliseconds=5)  # deadlines are strict: act just after them


class ClaimTimers:
    """Owns the wait for the next claim deadline of the site."""

    def __init__(
        self,
        *,
        redis: Redis,
        key: str,
        clock: Clock,
        owners: Mapping[str, RunDue],
        fence: Fence | None = None,
        channel: str | None = None,
    ) -> None:
        self._redis, self._key, self._clock = redis, key, clock
        self._owners = dict(owners)
        self._fence, self._channel = fence, channel
        self.changed = asyncio.Event()
        self.fired = 0

    def poke(self) -> None:
        """A step changed the deadline index: look again."""
        self.changed.set()

    async def run(self, stop: asyncio.Event) -> None:
        if self._channel is None:
            await self._run(stop)
            return
        done = asyncio.Event()  # the listener ends with the timers (also when fenced out)
        async with asyncio.TaskGroup() as tg:
            listener = tg.create_task(self._listen(self._channel, done), name="claim-timers-listen")
            try:
                await self._run(stop)
            finally:
                done.set()
                # it only wakes the timers: do not wait out its poll of the channel
                listener.cancel()

    async def _listen(self, channel: str, stop: asyncio.Event) -> None:
        """Look again whenever a step was committed, on whichever daemon (and whenever the
        channel is back: whatever was committed while nobody listened)."""

        async def wake(_: str | None) -> None:
            self.changed.set()

        await listen(self._redis, channel, stop, wake, what="claim timers")

    async def _run(self, stop: asyncio.Event) -> None:
        backoff = Backoff()
        while not stop.is_set():
            self.changed.clear()
            try:
                wake = await self._tick()
            except FencedOut as exc:
                logger.error("claim timers stop: %s", exc)
                return
            except REDIS_ERRORS as exc:
                logger.warning("claim timers wait for Redis (%s)", exc)
                if await pause(stop, backoff.next_delay()):
                    return
                continue
            if wake is None:  # a step lost a race: again after a short pause
                if await pause(stop, backoff.next_delay()):
                    return
                continue
            backoff.reset()
            if await sleep_until_or_stop(self._clock, wake, stop, self.changed) and stop.is_set():
                return

    async def _tick(self) -> dt.datetime | None:
        """Run what is due now; return when to look next (None: at once, a step lost a
        race to another writer and must be decided again)."""
        now = self._clock.now()
        rows = cast(
            list[tuple[str, float]],
            await self._redis.zrangebyscore(self._key, "-inf", now.timestamp(), withscores=True),
        )
        if rows and self._fence is not None:
            await self._fence.check()
        again = False
        for member, _ in rows:
            owner, _, subject = member.partition(":")
            run_due = self._owners.get(owner)
            if run_due is None:
                logger.error("deadline index holds %r of no known owner; left alone", member)
                continue
            try:
                self.fired += await run_due(subject)
            except ConflictError as exc:  # lost a race, nothing written: decide again soon
                logger.warning("timers of %s raced another step (%s); again shortly", subject, exc)
                again = True
            except BonusdError as exc:  # one broken draw must not stop the others' timers
                logger.error("timers of %s not run: %s", subject, exc)
        if again:
            return None
        # a deadline exactly at `now` is not due yet (deadlines are strict) but is next:
        # without it the wait would run to `IDLE` and act minutes late
        nxt = cast(
            list[tuple[str, float]],
            await self._redis.zrangebyscore(
                self._key, now.timestamp(), "+inf", start=0, num=1, withscores=True
            ),
        )
        later = now + IDLE
        if nxt:
            at = dt.datetime.fromtimestamp(nxt[0][1], dt.UTC) + SLACK
            return min(at, later)
        return later
