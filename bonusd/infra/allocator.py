"""The allocator the daemon runs on (`BONUSD_ALLOCATOR`). With `jemalloc` (the default),
`bonusd run` starts itself again on jemalloc before anything else: the same process (the
same PID for systemd) and command line, with `LD_PRELOAD` naming Debian's
`libjemalloc.so.2`, every allocation of Python's objects handed to it
(`PYTHONMALLOC=malloc`) and its free pages given back a few seconds after they were freed
(`MALLOC_CONF`, unless the operator set one). Measured over a simulated week
(docs/benchmarks.md, "A week on the floor"): glibc and Python's own arenas keep a busy
evening's peak resident for the rest of the week; jemalloc gives it back by the next
morning. Without the library (`apt-get install libjemalloc2`) the daemon says so once
and runs on the system's allocator.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
import sys
from collections.abc import Mapping

logger = logging.getLogger(__name__)

# dirty pages purged by a background thread 5 s after they were freed, none kept as muzzy
MALLOC_CONF = "background_thread:true,dirty_decay_ms:5000,muzzy_decay_ms:0"
STARTED = "BONUSD_ALLOCATOR_STARTED"  # set on the restart: never restarted twice


def jemalloc_library() -> str | None:
    """jemalloc's shared library as the dynamic loader finds it, or None."""
    return ctypes.util.find_library("jemalloc")


def jemalloc_environment(env: Mapping[str, str], library: str) -> dict[str, str]:
    """`env` with the process to be started on jemalloc (`library`)."""
    preload = " ".join(p for p in (library, env.get("LD_PRELOAD", "")) if p)
    return {
        **env,
        "LD_PRELOAD": preload,
        "PYTHONMALLOC": "malloc",
        "MALLOC_CONF": env.get("MALLOC_CONF", MALLOC_CONF),
        STARTED: "1",
    }


def use_allocator(choice: str) -> None:
    """Start this process again, with the same command line, on jemalloc when `choice` is
    "jemalloc" and it is not on it yet (returns only when it stays as it is)."""
    if choice != "jemalloc" or os.environ.get(STARTED):
        return
    library = jemalloc_library()
    if library is None:
        logger.warning(
            "BONUSD_ALLOCATOR=jemalloc but libjemalloc is not installed (apt-get install "
            "libjemalloc2): running on the system's allocator, which keeps a busy evening's "
            "memory resident"
        )
        return
    command = [sys.executable, *sys.orig_argv[1:]]  # python's own options and all
    os.execve(sys.executable, command, jemalloc_environment(os.environ, library))
