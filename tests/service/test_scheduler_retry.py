"""The scheduler against a real Redis: an action that lost its races to other writers
(`ConflictError`: nothing written) is tried again until it runs, while an action refused
for good (any other `BonusdError`) is logged, left unmarked for a restart, and does not
hold up the rest of the timetable."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import redis.asyncio as aioredis

from bonusd.clocks.clock import ManualClock
from bonusd.errors import BonusdError, ConflictError
from bonusd.infra.keys import Keys
from bonusd.promotions import Action, TimedAction, load_promotion
from bonusd.service.scheduler import Scheduler
from tests.service.helpers import PROMOTION, WINDOW

SAST = dt.timezone(dt.timedelta(hours=2))


async def test_a_lost_race_is_retried_and_a_refusal_skipped(
    aredis: aioredis.Redis, site: str, tmp_path: Path
) -> None:
    path = tmp_path / "p.toml"
    windows = "".join(WINDOW.format(n=n, a=10 * n, b=10 * n + 5) for n in range(2))
    path.write_text(PROMOTION.format(site=site, windows=windows))
    keys = Keys("bonusd", site)
    calls: list[str] = []

    async def opens(a: TimedAction) -> None:
        calls.append(f"open {a.ids[1]}")
        if a.ids[1] == "m0" and calls.count("open m0") < 3:
            raise ConflictError("draw x kept changing (8 attempts)")

    async def ends(a: TimedAction) -> None:
        calls.append(f"end {a.ids[1]}")
        if a.ids[1] == "m0":
            raise BonusdError("refused")

    scheduler = Scheduler(
        promotions=[load_promotion(path)],
        clock=ManualClock(dt.datetime(2026, 10, 3, 18, 0, tzinfo=SAST)),  # all are due
        redis=aredis,
        keys=keys,
        handlers={Action.MULTIPLIER_STARTS: opens, Action.MULTIPLIER_ENDS: ends},
    )
    await asyncio.wait_for(scheduler.run(asyncio.Event()), 30)
    assert calls == ["open m0", "open m0", "open m0", "end m0", "open m1", "end m1"]
    assert scheduler.fired == 3  # m0 opened at the third try; m0's end stays unmarked
    fired = sorted(await aredis.keys(keys.base + "fired:*"))
    assert [k.rsplit(":", 1)[1] for k in fired] == ["m0", "m1", "m1"]
