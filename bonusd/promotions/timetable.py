"""A promotion's timetable as every daemon and desk sees it: its timed actions, with the
random jackpot times drawn from a seed kept once per promotion in Redis."""

from __future__ import annotations

import random
import secrets
from typing import cast

from redis.asyncio import Redis

from bonusd.errors import ConflictError
from bonusd.infra.keys import Keys
from bonusd.promotions import Promotion, TimedAction, schedule


async def promotion_timetable(
    redis: Redis, keys: Keys, promotion: Promotion, *, create: bool = True
) -> list[TimedAction]:
    """The promotion's timed actions. Random jackpot times come from a seed kept per
    promotion in Redis (set once), so a restart, another daemon and the RAPS runner all
    see the same times. A reader (`create=False`) never sets it: `ConflictError` until
    the scheduler has."""
    key = keys.schedule_seed(promotion.id)
    if create:
        await redis.set(key, secrets.token_hex(16), nx=True)
    seed = cast(str | None, await redis.get(key))
    if seed is None:
        raise ConflictError(
            f"the random jackpot times of {promotion.id} are not fixed yet: the leading "
            "daemon's scheduler fixes them when it starts; retry in a moment"
        )
    return list(schedule(promotion, rng=random.Random(seed)))  # times only; never a winner
