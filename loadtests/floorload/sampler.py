"""Once a second during a phase: CPU of each process that shares the machine, and the
daemon's /health (ingest lag: the age of the oldest uncommitted message; pending).

The processes are named groups (`daemon`, `broker`, `redis`, `locust`, ...); a group's
CPU includes its children (locust's workers), in percent of one core.
"""

from __future__ import annotations

import statistics
import threading
from collections import defaultdict
from dataclasses import dataclass, field

import httpx
import psutil


@dataclass
class Samples:
    cpu: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    machine: list[float] = field(default_factory=list)
    lag_s: list[float] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)

    def summary(self, start: int = 0, end: int | None = None) -> dict[str, object]:
        """Means and maxima over the samples [start, end) (one a second)."""

        def mean(xs: list[float]) -> float:
            part = xs[start:end]
            return round(statistics.fmean(part), 1) if part else 0.0

        ours = {k: mean(v) for k, v in self.cpu.items()}
        machine = mean(self.machine)
        cores = psutil.cpu_count() or 1
        out: dict[str, object] = {
            "cpu_percent_of_one_core": ours,
            "machine_cpu_percent": machine,
            # what else ran on the machine meanwhile (other work shares this box)
            "others_percent_of_one_core": round(max(0.0, machine * cores - sum(ours.values())), 1),
        }
        lags = sorted(x for x in self.lag_s[start:end] if x >= 0)
        if lags:
            out["ingest_lag_s"] = {
                "median": round(statistics.median(lags), 3),
                "p95": round(lags[min(len(lags) - 1, int(0.95 * len(lags)))], 3),
                "max": round(lags[-1], 3),
            }
            out["pending_max"] = max(self.pending[start:end])
            out["health_unanswered_2s"] = sum(1 for x in self.lag_s[start:end] if x < 0)
        return out


class Sampler:
    """A thread sampling every second until `stop()`."""

    def __init__(self, pids: dict[str, int | None], health_url: str | None) -> None:
        self._procs: dict[str, psutil.Process] = {}
        for name, pid in pids.items():
            if pid:
                try:
                    self._procs[name] = psutil.Process(pid)
                except psutil.NoSuchProcess:
                    continue
        self._health = health_url
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.samples = Samples()
        self._seen: dict[tuple[str, int], psutil.Process] = {}

    def mark(self) -> int:
        """The index of the next sample: where a part of the phase starts."""
        return len(self.samples.machine)

    def __enter__(self) -> Sampler:
        psutil.cpu_percent()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _group_cpu(self, name: str, root: psutil.Process) -> float:
        total = 0.0
        try:
            members = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0.0
        for p in members:
            proc = self._seen.setdefault((name, p.pid), p)
            try:
                total += proc.cpu_percent()
            except psutil.NoSuchProcess:
                continue
        return total

    def _run(self) -> None:
        for name, p in self._procs.items():
            self._group_cpu(name, p)  # the first reading of cpu_percent is meaningless
        with httpx.Client(timeout=2) as http:
            while not self._stop.wait(1.0):
                self.samples.machine.append(psutil.cpu_percent())
                for name, p in self._procs.items():
                    self.samples.cpu[name].append(self._group_cpu(name, p))
                if self._health:
                    try:
                        h = http.get(self._health).json()
                    except (httpx.HTTPError, ValueError):
                        h = {"ingest_lag_seconds": -1.0, "pending_messages": -1}
                    self.samples.lag_s.append(float(h.get("ingest_lag_seconds", 0.0)))
                    self.samples.pending.append(int(h.get("pending_messages", 0)))
