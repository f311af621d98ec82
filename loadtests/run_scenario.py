"""Run a named load-test scenario headless, for a bounded time, and write locust's report.

    python loadtests/run_scenario.py saturday-20h                  # = make load
    python loadtests/run_scenario.py saturday-20h --run-time 3m --out docs/loadtests/saturday-20h
    python loadtests/run_scenario.py saturday-20h --speed 2        # the floor at twice its pace
    python loadtests/run_scenario.py smoke --run-time 12s          # a few seconds, ci floor
    python loadtests/run_scenario.py saturday-20h --daemon-url http://127.0.0.1:8000 \\
        --site staging --mqtt-url mqtt://127.0.0.1:1883 --redis-url redis://127.0.0.1:6379/0

Scenarios: loadtests/floorload/scenarios.py. What a run does: loadtests/floorload/runner.py.
Results and how to read them: docs/loadtests.md. Redis and the broker are throwaway ones
(redis-server without persistence; Mosquitto with bonusd's configuration) unless
--redis-url / --mqtt-url name existing ones.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floorload.config import Options
from floorload.runner import run
from floorload.scenarios import ROOT, SCENARIOS

from simulators.timefmt import parse_duration


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--run-time", help="the full run's length: 3m, 90s [the scenario's]")
    parser.add_argument("--out", type=Path, help="report folder [.run/loadtests/SCENARIO]")
    parser.add_argument(
        "--settle", help="start-up reported apart from the steady part [the scenario's]"
    )
    parser.add_argument("--speed", type=float, default=1.0, help="simulated s per wall s [1]")
    parser.add_argument("--processes", type=int, help="locust worker processes [scenario's]")
    parser.add_argument(
        "--baseline-time", help="bare MQTT baseline length; 0: none [the scenario's]"
    )
    parser.add_argument("--redis-url", help="an existing Redis [a throwaway redis-server]")
    parser.add_argument("--mqtt-url", help="an existing broker [a throwaway Mosquitto]")
    parser.add_argument("--daemon-url", help="a running daemon's base URL [start one]")
    parser.add_argument("--site", help="with --daemon-url: that daemon's BONUSD_SITE")
    parser.add_argument(
        "--no-desk-summary", action="store_true", help="the desk never opens a draw's summary"
    )
    parser.add_argument("--key-prefix", help="[lt; with --daemon-url: bonusd, its default]")
    parser.add_argument("--topic-prefix", help="[lt; with --daemon-url: bonusd, its default]")
    args = parser.parse_args(argv)
    # started in the background, a shell leaves SIGINT ignored: let Ctrl-C and kill
    # (SIGTERM) both unwind through the tear-down
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scn = SCENARIOS[args.scenario]
    if args.daemon_url and not (args.site and args.mqtt_url and args.redis_url):
        parser.error("--daemon-url needs --site, --mqtt-url and --redis-url (the daemon's own)")

    def seconds(text: str | None, default: str) -> int:
        text = text or default
        return int(text) if text.isdigit() else int(parse_duration(text).total_seconds())

    opts = Options(
        run_time_s=seconds(args.run_time, scn.run_time),
        out=(args.out or ROOT / ".run" / "loadtests" / scn.name).resolve(),
        speed=args.speed,
        processes=scn.processes if args.processes is None else args.processes,
        settle_s=seconds(args.settle, f"{scn.settle_s}s"),
        desk_summary=not args.no_desk_summary,
        baseline_s=seconds(args.baseline_time, f"{scn.baseline_s}s"),
        redis_url=args.redis_url,
        mqtt_url=args.mqtt_url,
        daemon_url=args.daemon_url,
        site=args.site,
        key_prefix=args.key_prefix or ("bonusd" if args.daemon_url else "lt"),
        topic_prefix=args.topic_prefix or ("bonusd" if args.daemon_url else "lt"),
    )
    summary = run(scn, opts)
    print((opts.out / "summary.md").read_text())
    print(f"report: {opts.out}/locust.html (and *_stats.csv, summary.md, summary.json)")
    full = summary.get("full", {})
    failures = sum(
        r["failures"]
        for part in (full, summary.get("startup", {}))
        for r in part.get("stats", [])
        if r["name"] == "Aggregated"
    )
    return 1 if failures or full.get("locust_exit", 1) != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
