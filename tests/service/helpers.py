"""What the scheduler tests share: a promotion with actions a minute apart, the order the
actions ran in (from the log), and a daemon with its scheduler under a shared clock."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.infra.sharedclock import SharedClock
from bonusd.promotions import TimedAction, load_promotion, schedule

SAST = dt.timezone(dt.timedelta(hours=2))


OPENS = dt.datetime(2026, 10, 3, 17, 0, tzinfo=SAST)


MIN = dt.timedelta(minutes=1)


# "on time": after its instant and well before the next action is due (5 minutes on)
ON_TIME = 3 * MIN


PROMOTION = """
format = 1
id = "clock-rehearsal"
name = "Clock rehearsal"
site = "{site}"
start = 2026-10-03
end = 2026-10-03
{windows}
"""


WINDOW = """
[[multipliers]]
id = "m{n}"
date = 2026-10-03
start = "17:{a:02d}"
end = "17:{b:02d}"
factor = 2
"""


def timetable(promotions: Path) -> list[TimedAction]:
    actions = list(schedule(load_promotion(promotions / "clock.toml")))
    assert [a.at for a in actions] == [OPENS + 5 * n * MIN for n in range(8)]
    return actions


@contextlib.asynccontextmanager
async def controller(
    r: aioredis.Redis, site: str, start: dt.datetime | None = None
) -> AsyncIterator[SharedClock]:
    """The clock as the simulator or `bonusd clock` holds it, with its watcher; created
    paused at `start` if given (so a daemon's start-up takes no simulated time)."""
    prefix = SharedClock.site_prefix("bonusd", site)
    clock = await SharedClock.connect(r, prefix, start=start, speed=600, changed_by="t")
    if start is not None:
        assert clock.state.version == 1  # created here
        await clock.pause()
    stop = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(clock.watch(stop))
        try:
            yield clock
        finally:
            stop.set()


def done_order(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage().removesuffix(" done")
        for r in caplog.records
        if r.name == "bonusd.service.scheduler" and r.getMessage().endswith(" done")
    ]


def label(a: TimedAction) -> str:
    return f"{a.action.value} {'/'.join(a.ids)}"
