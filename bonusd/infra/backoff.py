"""Capped exponential backoff with jitter, for reconnecting to the broker and Redis."""

from __future__ import annotations

import asyncio
import random


class Backoff:
    """Delays between half and all of min(cap, base * 2**attempt) seconds, at random."""

    def __init__(self, *, base: float = 0.2, cap: float = 30.0, rng: random.Random | None = None):
        self._base = base
        self._cap = cap
        self._rng = rng or random.Random()
        self.attempt = 0

    def next_delay(self) -> float:
        ceiling = min(self._cap, self._base * (2 ** min(self.attempt, 30)))
        self.attempt += 1
        return self._rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.attempt = 0


async def pause(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds` of wall time (a retry delay); return True early if `stop` is set."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True
