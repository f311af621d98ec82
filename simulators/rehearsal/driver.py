"""The rehearsal's clock: simulated time moved in lock-step with the daemon.

Between two instants at which something happens — a scheduled action, a claim deadline,
people acting — nothing reads the floor, so the floor's events flow without a stop: at
most `window` of them unacknowledged by the daemon and at most `horizon` ahead of the
clock, which follows the events the daemon has committed. At each such instant A the
flow stops: every event stamped before A is committed, and none after it is sent until
the clock is at A and the daemon has done everything due then (`Driver._settle`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bonusd.errors import BonusdError
from bonusd.infra.sharedclock import SharedClock
from bonusd.promotions.schedule import schedule
from bonusd.promotions.timing import round_instants
from bonusd.service.root import Service
from simulators.rehearsal.crew import Crew
from simulators.rehearsal.feed import Feed
from simulators.rehearsal.summary import Observer

if TYPE_CHECKING:
    from simulators.rehearsal.plan import Prepared

DEADLINE_SLACK = dt.timedelta(seconds=1)  # claim timers act strictly after a deadline
STALL_S = 120.0  # no progress from the daemon this long (wall) is an error
PACED_HORIZON = dt.timedelta(minutes=15)


class Commits:
    """Wakes waiters on every batch the daemon commits (the ingest's commit hook)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def hook(self, *_args: object) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, seconds: float) -> None:
        async with asyncio.timeout(seconds):
            await self._event.wait()


class Driver:
    """Moves simulated time in lock-step with the daemon (see the module docstring)."""

    def __init__(
        self,
        *,
        service: Service,
        clock: SharedClock,
        feed: Feed,
        crew: Crew,
        observer: Observer,
        commits: Commits,
        prepared: Prepared,
        show: Callable[[dt.datetime, int], None],
    ) -> None:
        self.service, self.clock, self.feed = service, clock, feed
        self.crew, self.observer, self._commits = crew, observer, commits
        self.prepared, self._show = prepared, show
        self.published = 0
        self.stops = 0
        self._next_event: int | None = None
        self._deadlines = service.draws.deadlines
        self._started = time.monotonic()
        plan = prepared.plan
        # paced for watching (--speed): the clock follows the floor in small steps
        self._horizon = plan.horizon if plan.speed <= 0 else min(plan.horizon, PACED_HORIZON)

    async def run(self) -> None:
        p = self.prepared
        now = p.start
        await self._settle(now)  # the scheduler has read its timetable: next_at is known
        while now < p.settle_end:
            target = await self._next(now)
            if now < p.floor_end:
                await self._feed(min(target, p.floor_end))
            await self._move(target)
            await self._settle(target)
            await self.observer.observe(target)
            await self.crew.act(target)
            now = target
            self.stops += 1

    async def _next(self, now: dt.datetime) -> dt.datetime:
        """The next instant anything happens: an action, a deadline, or people acting."""
        p = self.prepared
        found = [p.settle_end]
        if now < p.floor_end:
            found.append(p.floor_end)
        scheduled = self.service.scheduler.next_at
        if scheduled is not None and scheduled > now:
            found.append(scheduled)
        rows = cast(
            list[tuple[str, float]],
            await self.service.redis.zrangebyscore(
                self._deadlines,
                f"({now.timestamp() - 1.0}",
                "+inf",
                start=0,
                num=1,
                withscores=True,
            ),
        )
        if rows:
            found.append(dt.datetime.fromtimestamp(rows[0][1], dt.UTC) + DEADLINE_SLACK)
        people = self.crew.next_instant(now)
        if people is not None:
            found.append(people)
        return max(min(found), now + dt.timedelta(milliseconds=1))

    async def _feed(self, until: dt.datetime) -> None:
        """Have every event stamped before `until` published and committed; the clock
        follows the committed events (never past `until`) when the floor would otherwise
        run more than `horizon` ahead of it."""
        plan, ingest = self.prepared.plan, self.service.ingest
        marks: list[tuple[int, dt.datetime]] = []  # (published, every event before it sent)
        frontier = self.clock.now()
        while self._next_event is None or 0 <= self._next_event < _ms(until):
            bound = min(until, self.clock.now() + self._horizon)
            room = plan.window - (self.published - ingest.committed)
            if frontier >= bound:  # too far ahead of the clock: bring the clock along
                if not await self._follow(marks):
                    await self._committed(ingest.committed + 1)
                continue
            if room < plan.window // 4:
                await self._committed(ingest.committed + 1)
                continue
            self.published, self._next_event = await self.feed.until(_ms(bound), room)
            if 0 <= self._next_event < _ms(bound):
                frontier = dt.datetime.fromtimestamp(self._next_event / 1000, dt.UTC)
            else:
                frontier = bound
            marks.append((self.published, frontier))
        await self._committed(self.published)

    async def _follow(self, marks: list[tuple[int, dt.datetime]]) -> bool:
        """Move the clock to the latest mark whose events are all committed; False if
        there is none beyond the clock yet."""
        committed, target = self.service.ingest.committed, None
        while marks and marks[0][0] <= committed:
            target = marks.pop(0)[1]
        if target is None or target <= self.clock.now():
            return False
        await self._move(target)
        return True

    async def _move(self, target: dt.datetime) -> None:
        if target > self.clock.now():
            plan = self.prepared.plan
            if plan.speed > 0:  # at most `speed` simulated seconds per wall second
                due = self._started + (target - self.prepared.start).total_seconds() / plan.speed
                await asyncio.sleep(max(0.0, due - time.monotonic()))
            await self.clock.jump_to(target)
        self._show(target, self.service.ingest.committed)

    async def _committed(self, n: int) -> None:
        """Wait until the daemon has committed `n` events this run."""
        ingest = self.service.ingest
        while ingest.committed < n:
            before = ingest.committed
            try:
                await self._commits.wait(STALL_S)
            except TimeoutError:
                if ingest.committed == before:
                    raise BonusdError(
                        f"the daemon committed {before:,} of {self.published:,} published "
                        f"events and no more for {STALL_S:g} s: is the broker dropping "
                        "messages? It needs the settings in deploy/mosquitto/ (or use "
                        "--services own)"
                    ) from None

    async def _settle(self, target: dt.datetime) -> None:
        """Wait until the scheduler and the claim timers have done everything up to
        `target`."""
        scheduler, give_up = self.service.scheduler, time.monotonic() + STALL_S
        while True:
            if scheduler.caught_up.is_set() and (
                scheduler.next_at is None or scheduler.next_at > target
            ):
                due = await self.service.redis.zrangebyscore(
                    self._deadlines, "-inf", target.timestamp() - 0.01, start=0, num=1
                )
                if not due:
                    return
            if time.monotonic() > give_up:
                raise BonusdError(
                    f"the daemon did not finish what is due at {target.isoformat()} within "
                    f"{STALL_S:g} s (scheduler at {scheduler.next_at}); see its log above"
                )
            await asyncio.sleep(0.001)


def _ms(instant: dt.datetime) -> int:
    return int(instant.timestamp() * 1000)


def progress_bar(
    prepared: Prepared, *, enabled: bool
) -> tuple[Progress | None, Callable[[dt.datetime, int], None]]:
    """A rich progress bar (simulated date, events, draws and jackpots done) and the
    function that updates it."""
    p = prepared.promotion
    rounds = {d.id: round_instants(p, d)[-1] for d in p.draw_list}
    jackpots = [a.at for a in schedule(p, rng=random.Random(0)) if a.action.value == "jackpot"]
    if not enabled:
        return None, lambda *_: None
    bar = Progress(
        TextColumn("[bold]{task.fields[date]}"),
        BarColumn(),
        TextColumn("{task.fields[events]:>10,} events"),
        TextColumn("draws {task.fields[draws]}"),
        TextColumn("jackpots {task.fields[jackpots]}"),
        TimeElapsedColumn(),
    )
    total = (prepared.settle_end - prepared.start).total_seconds()
    task = bar.add_task("rehearsal", total=total, date="", events=0, draws="", jackpots="")
    last = [0.0]

    def show(now: dt.datetime, events: int) -> None:
        if time.monotonic() - last[0] < 0.1 and now < prepared.settle_end:
            return
        last[0] = time.monotonic()
        drawn = sum(at <= now for at in rounds.values())
        run = sum(at <= now for at in jackpots)
        bar.update(
            task,
            completed=(now - prepared.start).total_seconds(),
            date=f"{now.astimezone(p.zone):%a %d %b %Y %H:%M}",
            events=events,
            draws=f"{drawn}/{len(rounds)}",
            jackpots=f"{run}/{len(jackpots)}",
        )

    return bar, show
