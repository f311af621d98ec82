"""The C heap's figures and its trim (bonusd/infra/heap.py), on this machine's glibc; the
traced allocations written on SIGUSR2."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import tracemalloc
from pathlib import Path

import psutil
import pytest

from bonusd.infra.heap import dump_traced, heap_figures, trim_every, trim_heap, watch_heap_dumps
from bonusd.infra.metrics import Metrics

pytestmark = pytest.mark.skipif(heap_figures() is None, reason="needs glibc 2.33 or later")

BLOCK = 64 * 1024  # below glibc's mmap threshold: kept in the heap, not mapped alone
BLOCKS = 600  # ~38 MB


def test_a_trim_gives_back_the_pages_freed_in_the_middle_of_the_heap() -> None:
    me = psutil.Process()
    trim_heap()
    held = [bytearray(BLOCK) for _ in range(BLOCKS)]
    for block in held:  # touch every page: resident
        block[::4096] = b"\1" * len(block[::4096])
    keep = held[-1]  # the heap's top stays in use: only a trim, not free, lets go
    del held
    freed = heap_figures()
    assert freed is not None and freed.free >= (BLOCKS - 2) * BLOCK
    before = me.memory_info().rss
    assert trim_heap()
    after = me.memory_info().rss
    assert before - after > BLOCKS * BLOCK // 2, (before, after)
    assert keep[0] == 1


async def test_the_periodic_trim_stops_with_the_daemon_and_zero_turns_it_off() -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(trim_every(0.01, stop))
    await asyncio.sleep(0.05)
    assert not task.done()
    stop.set()
    await asyncio.wait_for(task, 1)
    await asyncio.wait_for(trim_every(0, asyncio.Event()), 1)  # returns at once


def test_the_heap_is_on_the_metrics_page() -> None:
    text = Metrics().render().decode()
    found = dict(re.findall(r'^bonusd_heap_bytes\{part="(\w+)"\} (\S+)$', text, re.M))
    assert set(found) == {"in_use", "free", "mapped"}
    assert float(found["in_use"]) > 1_000_000


async def test_sigusr2_writes_the_allocations_traced_since_start_up(
    tmp_path: Path,
) -> None:
    assert dump_traced(tmp_path) is None  # not tracing: nothing written
    loop = asyncio.get_running_loop()
    try:
        watch_heap_dumps(loop, tmp_path, frames=5)  # BONUSD_HEAP_TRACE_FRAMES: traced from now
        assert tracemalloc.is_tracing()
        held = [bytearray(1000) for _ in range(2000)]  # ~2 MB from this line
        os.kill(os.getpid(), signal.SIGUSR2)
        async with asyncio.timeout(10):
            while not os.listdir(tmp_path):
                await asyncio.sleep(0.01)
    finally:
        loop.remove_signal_handler(signal.SIGUSR2)
        tracemalloc.stop()
    (dumped,) = [tmp_path / name for name in os.listdir(tmp_path)]
    top = tracemalloc.Snapshot.load(str(dumped)).statistics("lineno")[0]
    assert top.traceback[0].filename == __file__ and top.size >= 2_000_000, top
    assert len(held) == 2000
