"""`bonusd run` that kills itself with SIGKILL at one named point: the fault tests' way of
landing a `kill -9` exactly inside a step instead of somewhere near it.

    BONUSD_TEST_CRASH=board-before:3 python -m tests.crashpoint   # before the 3rd board write
    BONUSD_TEST_CRASH=board-after:3  python -m tests.crashpoint   # after it, before the marker
    BONUSD_TEST_CRASH=claim-before   python -m tests.crashpoint   # a claim action not committed
    BONUSD_TEST_CRASH=claim-after    python -m tests.crashpoint   # committed, no HTTP answer

The process dies as from `kill -9`: no handler, no flush, no graceful anything.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from typing import Any

from bonusd.cli.main import main
from bonusd.draws.runner import DrawRunner
from bonusd.promotions.store import PromotionStore


def _die() -> None:
    sys.stderr.write(f"crashpoint: SIGKILL at {os.environ['BONUSD_TEST_CRASH']}\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _wrap(cls: Any, name: str, *, after: bool, nth: int) -> None:
    original = getattr(cls, name)
    calls = 0

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == nth and not after:
            _die()
        result = await original(*args, **kwargs)
        if calls == nth and after:
            _die()
        return result

    setattr(cls, name, wrapper)


def install(point: str) -> None:
    where, _, nth = point.partition(":")
    target, _, when = where.partition("-")
    classes = {"board": (PromotionStore, "publish_board"), "claim": (DrawRunner, "act")}
    cls, name = classes[target]
    _wrap(cls, name, after=when == "after", nth=int(nth or 1))


if __name__ == "__main__":
    install(os.environ["BONUSD_TEST_CRASH"])
    sys.argv = ["bonusd", "run"]
    main()
