"""The start-up and the steady part of a locust run.

Every user connects within a few seconds of the start: 230 screens and handhelds
fetching their snapshot at once is a start-up storm no floor sees at 20h00 (screens
connect long before). So `settle_s` after spawning completes, the locust process that
keeps the statistics (the master, or the only process) writes what it has so far to
`{settled}` (the start-up, per request name) and resets them: locust's final report, HTML
and CSV, is the steady part. The runner watches for that file to read the daemon's
metrics at the same moment.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner
from locust.stats import StatsEntry

from floorload.config import from_environment

CFG = from_environment()


def entry_report(entry: StatsEntry) -> dict[str, Any]:
    def pct(q: float) -> float | None:
        return entry.get_response_time_percentile(q) if entry.num_requests else None

    return {
        "type": entry.method or "",
        "name": entry.name,
        "requests": entry.num_requests,
        "failures": entry.num_failures,
        "rps": round(entry.total_rps, 1),
        "avg_ms": round(entry.avg_response_time, 2),
        "p50_ms": pct(0.5),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "max_ms": round(entry.max_response_time or 0.0, 1),
    }


def _settle(environment: Environment) -> None:
    runner = environment.runner
    if runner is None:
        return
    stats = runner.stats
    rows = [entry_report(e) for _, e in sorted(stats.entries.items())]
    rows.append(entry_report(stats.total))
    errors = [
        {"type": e.method, "name": e.name, "error": str(e.error), "count": e.occurrences}
        for e in stats.errors.values()
    ]
    path = Path(CFG.extra["settled"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"at": time.time(), "stats": rows, "errors": errors}, indent=1))
    stats.reset_all()
    tmp.rename(path)


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner) or not CFG.extra.get("settled"):
        return
    settle_s = float(CFG.extra.get("settle_s", 0))
    once: list[bool] = []

    def spawned(**_: Any) -> None:
        if not once:
            once.append(True)
            gevent.spawn_later(settle_s, _settle, environment)

    environment.events.spawning_complete.add_listener(spawned)
