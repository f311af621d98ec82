"""The locust load test (loadtests/run_scenario.py), run for a few seconds on the small `ci`
floor so that it cannot silently rot: every kind of user makes requests against a real
daemon, none fails, and what the MQTT users published is what the daemon applied.

Locust spawns every user of the smoke scenario at once, and each makes the requests
checked here in its first task (a screen's and a handheld's snapshot, the desk's
`/promotions/changes`, a kiosk's activation, a probe's card-in; the bank gateways play
games from the first second, about a dozen a second on this floor), so a run of a few seconds
proves what a longer one does; the set-up, the daemon's start and the tear-down are the
same whatever the run's length."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loadtests.floorload.services import Metrics
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT

RUN_TIME = "8s"  # the scenario's own is 12 s; its stream starts 2 s after the users


def test_smoke_scenario_every_user_works_without_failures(
    tmp_path: Path, redis_url: str, broker: LocalMosquitto
) -> None:
    out = tmp_path / "report"
    command = [
        sys.executable,
        "loadtests/run_scenario.py",
        "smoke",
        "--run-time",
        RUN_TIME,
        "--out",
        str(out),
        "--redis-url",
        redis_url,
        "--mqtt-url",
        broker.url,
    ]
    done = subprocess.run(
        command, cwd=PROJECT, capture_output=True, text=True, check=False, timeout=110
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    summary = json.loads((out / "summary.json").read_text())
    full = summary["full"]
    rows = {(r["type"], r["name"]): r for r in full["stats"]}

    def requests(kind: str, contains: str) -> int:
        return sum(r["requests"] for (t, n), r in rows.items() if t == kind and contains in n)

    assert requests("MQTT", "publish egm") > 0  # the bank gateways played the stream
    assert requests("E2E", "committed") > 0  # the probe saw its card-ins committed
    assert requests("WS", "signage[main] connect -> snapshot") > 0
    assert requests("WS", "signage[smoking] connect -> snapshot") > 0
    assert requests("WS", "crew connect -> snapshot") > 0
    assert requests("GET", "/promotions/changes") > 0  # every desk PC starts with it
    assert requests("POST", "activations (kiosk)") > 0
    assert rows["", "Aggregated"]["failures"] == 0
    assert full["locust_exit"] == 0

    # egm, table and probe events PUBACKed; one sent as locust stopped may lack its PUBACK
    published = requests("MQTT", "publish")
    daemon = full["daemon_after_drain"]
    assert published <= daemon["applied"] <= published + 5
    assert daemon["dead_letters"] == {}
    assert summary["setup"]["warmup"]["applied"] == summary["stream"]["warmup_card_events"]
    for report in ("locust.html", "locust_stats.csv", "summary.md"):
        assert (out / report).is_file()
    assert summary["teardown"]["daemon_exit"] == 0


def test_ingest_latency_quantiles_come_from_the_histogram_difference() -> None:
    """The daemon's arrival-to-committed quantiles that the load report prints: the
    difference of two /metrics reads, interpolated inside the Prometheus buckets."""
    before = Metrics(applied=10, latency=[(0.001, 10), (0.01, 10), (0.1, 10), (float("inf"), 10)])
    after = Metrics(
        applied=110, latency=[(0.001, 60), (0.01, 100), (0.1, 110), (float("inf"), 110)]
    )
    phase = after.minus(before)
    assert phase.applied == 100
    assert phase.latency == [(0.001, 50), (0.01, 90), (0.1, 100), (float("inf"), 100)]
    assert phase.quantile(0.25) == 0.0005  # half-way into the first bucket
    assert abs(phase.quantile(0.7) - 0.0055) < 1e-12  # half-way through (1 ms, 10 ms]
    assert abs(phase.quantile(0.95) - 0.055) < 1e-12
    assert Metrics().quantile(0.5) is None  # nothing committed: no figure
    beyond = Metrics(latency=[(10.0, 1), (float("inf"), 3)])  # two took over 10 s
    assert beyond.quantile(0.9) == float("inf")
