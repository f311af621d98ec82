"""The daemon's heap: what the C allocator holds (in use and free: glibc's `mallinfo2`,
or jemalloc's statistics when the daemon runs on it, `bonusd/infra/allocator.py`) and
giving its free pages back to the system (`malloc_trim`, or jemalloc's purge of every
arena), once after a big release and every `BONUSD_HEAP_TRIM_S` wall seconds
(`trim_every`).

A busy evening leaves the C heap with free memory in the middle that `free` keeps: the
numpy columns of a standings recompute or a floor snapshot, the reply buffers of a whole
hash read. `malloc_trim(0)` hands those pages back (about half a millisecond at a
daemon's size, measured); without it the daemon's RSS stays at the evening's peak.
Python's own small objects live in its 1 MiB arenas, given back only when wholly empty.
(Run with `PYTHONMALLOC=malloc` on glibc they live in this heap instead: measured over a
simulated week that kept more memory resident, not less; on jemalloc, the default, they
go back a few seconds after they are freed: docs/benchmarks.md.) On a C library that is
neither (musl, macOS) nothing is read or trimmed.

To see which code holds the memory, run the daemon with `BONUSD_HEAP_TRACE_FRAMES=25`
(`watch_heap_dumps` then has Python record where each allocation made after start-up
was made, at a cost in speed and memory) and send it SIGUSR2: it writes the traced
allocations to `heap-{pid}-{n}.trace` in `BONUSD_HEAP_DUMP_DIR` (`dump_traced`), to
compare with `tracemalloc.Snapshot.load` and `compare_to` (loadtests/soak.py
`--trace-memory` does this over a week).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import itertools
import logging
import os
import signal
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)
_DUMPS = itertools.count(1)
JEMALLOC_PURGE_ALL = b"arena.4096.purge"  # 4096: MALLCTL_ARENAS_ALL, every arena


class _MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (2.33 and later): every field a size_t."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",  # bytes of the main heap obtained with brk
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",  # bytes in blocks mapped on their own (large allocations)
            "usmblks",
            "fsmblks",
            "uordblks",  # bytes in use
            "fordblks",  # bytes free, kept by the allocator
            "keepcost",
        )
    ]


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has `malloc_trim`), else None (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "malloc_trim"):
        return None
    if hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _MallInfo2
    return libc


@functools.cache
def _jemalloc() -> ctypes.CDLL | None:
    """jemalloc when the process runs on it (loaded with `LD_PRELOAD`: it then serves every
    `malloc`, Python's objects too under `PYTHONMALLOC=malloc`), else None."""
    process = ctypes.CDLL(None)
    if not hasattr(process, "mallctl"):
        return None
    process.mallctl.argtypes = [
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.c_void_p,
        ctypes.c_size_t,
    ]
    return process


def _jemalloc_stat(lib: ctypes.CDLL, name: str) -> int:
    value, size = ctypes.c_size_t(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
    lib.mallctl(name.encode(), ctypes.byref(value), ctypes.byref(size), None, 0)
    return value.value


def trim_heap() -> bool:
    """Give the C heap's free pages back to the system (glibc `malloc_trim(0)`; under
    jemalloc, every arena's dirty pages purged); whether it could."""
    jemalloc = _jemalloc()
    if jemalloc is not None:
        return int(jemalloc.mallctl(JEMALLOC_PURGE_ALL, None, None, None, 0)) == 0
    libc = _glibc()
    return libc is not None and bool(libc.malloc_trim(0))


@dataclass(frozen=True)
class HeapFigures:
    """The C heap now, in bytes: in use by the process, free but kept by the allocator,
    and mapped on its own for large blocks (in use)."""

    in_use: int
    free: int
    mapped: int


def heap_figures() -> HeapFigures | None:
    """The C heap's figures (glibc 2.33 or later; under jemalloc: allocated, resident but
    not allocated, and mapped beyond what is resident), else None."""
    jemalloc = _jemalloc()
    if jemalloc is not None:
        epoch = ctypes.c_uint64(1)  # the statistics are refreshed by writing the epoch
        jemalloc.mallctl(b"epoch", None, None, ctypes.byref(epoch), ctypes.sizeof(epoch))
        allocated, resident, mapped = (
            _jemalloc_stat(jemalloc, f"stats.{name}")
            for name in ("allocated", "resident", "mapped")
        )
        return HeapFigures(allocated, max(resident - allocated, 0), max(mapped - resident, 0))
    libc = _glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return None
    info = libc.mallinfo2()
    return HeapFigures(in_use=info.uordblks, free=info.fordblks, mapped=info.hblkhd)


async def trim_every(interval_s: float, stop: asyncio.Event) -> None:
    """`trim_heap` every `interval_s` wall seconds until `stop` (0: never). Wall time, not
    the daemon's clock: this is about the process's pages, not the casino's day, and an
    accelerated clock would trim hundreds of times a second."""
    if interval_s <= 0 or (_glibc() is None and _jemalloc() is None):
        return
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), interval_s)
        except TimeoutError:
            trim_heap()


def dump_traced(folder: Path) -> Path | None:
    """Write the allocations tracemalloc traced so far to a new file in `folder` (the
    event loop waits while it is taken: about a second at a daemon's size); None when the
    daemon does not trace."""
    if not tracemalloc.is_tracing():
        return None
    path = folder / f"heap-{os.getpid()}-{next(_DUMPS)}.trace"
    tracemalloc.take_snapshot().dump(str(path))
    return path


def watch_heap_dumps(loop: asyncio.AbstractEventLoop, folder: Path, frames: int = 0) -> None:
    """On SIGUSR2, `dump_traced` into `folder` (`BONUSD_HEAP_DUMP_DIR`) when tracing; with
    `frames` (`BONUSD_HEAP_TRACE_FRAMES`), tracing starts now, start-up being over (traced
    from the first line, the imports alone take ~50 times as long)."""
    if frames and not tracemalloc.is_tracing():
        tracemalloc.start(frames)
        logger.warning("tracing allocations (%d frames) for heap dumps on SIGUSR2", frames)

    def dump() -> None:
        path = dump_traced(folder)
        if path is None:
            logger.warning("SIGUSR2: no heap dump, set BONUSD_HEAP_TRACE_FRAMES to trace")
        else:
            logger.warning("SIGUSR2: traced allocations written to %s", path)

    loop.add_signal_handler(signal.SIGUSR2, dump)
