"""`BONUSD_ALLOCATOR`: `bonusd run` starts itself again on jemalloc, once, with the same
command line and the operator's own `MALLOC_CONF`; `system` (or no library) leaves the
process as it is, the latter with one warning. The daemon's heap figures and trims then
speak jemalloc (`infra/heap.py`)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import pytest

from bonusd.infra import allocator
from bonusd.infra.allocator import MALLOC_CONF, STARTED, jemalloc_environment, jemalloc_library

needs_jemalloc = pytest.mark.skipif(
    jemalloc_library() is None,
    reason="libjemalloc is not installed: `make test` installs libjemalloc2 "
    "(scripts/ensure-services.sh), or apt-get install -y libjemalloc2",
)


def test_the_environment_names_jemalloc_once_and_keeps_the_operators_settings() -> None:
    env = jemalloc_environment({"LD_PRELOAD": "libx.so", "MALLOC_CONF": "narenas:2"}, "libj.so.2")
    assert env["LD_PRELOAD"] == "libj.so.2 libx.so"
    assert env["MALLOC_CONF"] == "narenas:2"  # the operator's, not ours
    assert env["PYTHONMALLOC"] == "malloc" and env[STARTED] == "1"
    assert jemalloc_environment({}, "libj.so.2")["MALLOC_CONF"] == MALLOC_CONF


def test_system_or_no_library_leaves_the_process_as_it_is(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def never(*args: object) -> None:
        raise AssertionError("the process was started again")

    monkeypatch.setattr(os, "execve", never)
    monkeypatch.delenv(STARTED, raising=False)
    allocator.use_allocator("system")
    monkeypatch.setattr(allocator, "jemalloc_library", lambda: None)
    with caplog.at_level(logging.WARNING, logger="bonusd.infra.allocator"):
        allocator.use_allocator("jemalloc")
    assert "apt-get install libjemalloc2" in caplog.text


PROBE = textwrap.dedent(
    """
    import os, sys
    from bonusd.infra.allocator import use_allocator
    from bonusd.infra.heap import heap_figures, trim_heap
    use_allocator(sys.argv[1])
    maps = open("/proc/self/maps").read()
    held = [bytearray(1000) for _ in range(30_000)]
    print(os.getpid(), "libjemalloc" in maps, os.environ.get("PYTHONMALLOC"), sys.argv[1:])
    before = heap_figures()
    del held
    print(before.in_use > 30_000_000, trim_heap())
    """
)


@needs_jemalloc
def test_jemalloc_starts_the_same_process_again_on_it_once() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (STARTED, "PYTHONMALLOC")}
    for choice, on_it in (("jemalloc", True), ("system", False)):
        probe = subprocess.Popen(
            [sys.executable, "-c", PROBE, choice], env=env, stdout=subprocess.PIPE, text=True
        )
        out, _ = probe.communicate(timeout=60)
        assert probe.returncode == 0
        first, second = out.splitlines()
        pid, *rest = first.split(maxsplit=3)
        assert int(pid) == probe.pid  # the same process (systemd's main PID stays)
        assert rest == [str(on_it), "malloc" if on_it else "None", f"['{choice}']"]
        assert second == "True True"  # its figures and its purge, or glibc's
