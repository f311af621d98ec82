"""Where a RAPS pick's time goes, for `bench_draws.py`: the pick's parts timed from inside
(the mirror's sync, the snapshot's view, the decision, the audit commit, the rest), its CPU
time, and how many Redis round trips it makes. The parts are timed by wrapping the
methods that do them while the benchmark runs (a few microseconds each), so the split
comes from the same picks as the end-to-end figures."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

from redis.asyncio.connection import Connection

from bonusd.audit.store import AuditStore
from bonusd.raps.book import RapsBook
from bonusd.raps.mirror import FloorMirror

Parts = dict[str, list[float]]  # part -> seconds per pick

PARTS = (  # (label, class, method, is a coroutine)
    ("mirror sync (Redis script + applying the changed rows)", FloorMirror, "sync", True),
    ("snapshot view (the columns and the difference file)", FloorMirror, "view", False),
    ("decision (judge, pool, pick, records)", RapsBook, "select", False),
    ("audit commit (1 round trip, files and records)", AuditStore, "commit", True),
)


class PickParts:
    """Accumulates each part's time within the current pick (`start` … `end`)."""

    def __init__(self) -> None:
        self.parts: Parts = {label: [] for label, *_ in PARTS}
        self.parts |= {"rest (book, seeds, plan)": [], "CPU time": [], "round trips": []}
        self._now: dict[str, float] = {}
        self._trips = 0
        self._t0 = self._cpu0 = 0.0

    def add(self, label: str, took: float) -> None:
        self._now[label] = self._now.get(label, 0.0) + took

    def trip(self) -> None:
        self._trips += 1

    def start(self) -> None:
        self._now, self._trips = {}, 0
        self._t0, self._cpu0 = time.perf_counter(), time.process_time()

    def end(self) -> None:
        took = time.perf_counter() - self._t0
        for label, *_ in PARTS:
            self.parts[label].append(self._now.get(label, 0.0))
        self.parts["rest (book, seeds, plan)"].append(took - sum(self._now.values()))
        self.parts["CPU time"].append(time.process_time() - self._cpu0)
        self.parts["round trips"].append(float(self._trips))


def _timed(method: Callable[..., Any], label: str, parts: PickParts, is_async: bool) -> Any:
    if is_async:

        @functools.wraps(method)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                parts.add(label, time.perf_counter() - t0)

        return timed_async

    @functools.wraps(method)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            parts.add(label, time.perf_counter() - t0)

    return timed


@contextlib.contextmanager
def watched(parts: PickParts) -> Iterator[PickParts]:
    """While inside: the parts' methods timed into `parts`, and each command (or pipeline)
    sent to Redis counted as one round trip."""
    saved = [(cls, name, getattr(cls, name)) for _, cls, name, _ in PARTS]
    send = Connection.send_packed_command

    async def counted(self: Connection, command: Any, check_health: bool = True) -> None:
        parts.trip()
        await send(self, command, check_health)

    try:
        for label, cls, name, is_async in PARTS:
            setattr(cls, name, _timed(getattr(cls, name), label, parts, is_async))
        Connection.send_packed_command = counted  # type: ignore[method-assign,assignment]
        yield parts
    finally:
        for cls, name, method in saved:
            setattr(cls, name, method)
        Connection.send_packed_command = send  # type: ignore[method-assign]
