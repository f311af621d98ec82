"""The soak's report (loadtests/soak.py): the checks judged on the census after the
warm-up and at the end, the run's figures, written as soak.json and soak.md."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import psutil
from soakcensus import Tolerances, verdicts
from soakparts import LogWatch


def report(args: argparse.Namespace, results: dict[str, Any], log: LogWatch) -> int:
    """Judge the run, write soak.json and soak.md to --out and print the latter; returns
    the exit status (1 if a check fails)."""
    samples = results.get("samples") or []
    census = [s for s in samples if "families" in s]
    warm = next((s for s in census if s.get("warmup_end")), census[0] if census else None)
    end = census[-1] if census else None
    results["log"] = log.summary()
    results["retention_sweeps_logged"] = log.sweeps
    if warm is None or end is None or warm is end:
        results["checks"] = [{"check": "the run ended before its warm-up", "ok": False}]
    else:
        tol = Tolerances(rss_fraction=args.rss_tolerance)
        results["checks"] = verdicts(warm, end, results["log"], tol)
        first = samples[0]
        results["figures"] = {
            "rss_mb": {"start": first["rss_mb"], "warm": warm["rss_mb"], "end": end["rss_mb"]},
            "redis_used_mb": {
                "start": first["redis_used_mb"],
                "warm": warm["redis_used_mb"],
                "end": end["redis_used_mb"],
            },
            "keys": {"start": first["dbsize"], "end": end["dbsize"]},
            "events_applied": end["applied"],
            "events_per_s": round(
                (end["applied"] - warm["applied"]) / max(1.0, end["t_s"] - warm["t_s"]), 1
            ),
            "rounds_drawn": end["rounds_drawn"],
            "ingest_lag_max_s": max(
                (x["ingest_lag_s"] for x in samples if x.get("ingest_lag_s") is not None),
                default=None,
            ),
            "health_unanswered": end.get("health_unanswered", 0),
            "seen_ids": end["seen_ids"],
            "activations": end["activations"],
            "machine_cpus": psutil.cpu_count(),
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        }
    ok = all(c["ok"] for c in results["checks"])
    results["ok"] = ok
    (args.out / "soak.json").write_text(json.dumps(results, indent=1, default=str))
    md = markdown(results)
    (args.out / "soak.md").write_text(md)
    print(md)
    print(f"report: {args.out}/soak.md, soak.json, daemon.log")
    return 0 if ok else 1


def markdown(res: dict[str, Any]) -> str:
    """The report's text: the figures, every check, the daemon log's warnings."""
    lines = [f"# Soak: {res['minutes']} min, site {res['site']}", ""]
    fig = res.get("figures")
    if fig:
        rss, red = fig["rss_mb"], fig["redis_used_mb"]
        lines += [
            "| figure | start | after warm-up | end |",
            "| --- | ---: | ---: | ---: |",
            f"| daemon RSS (MB) | {rss['start']} | {rss['warm']} | {rss['end']} |",
            f"| Redis used_memory (MB) | {red['start']} | {red['warm']} | {red['end']} |",
            f"| Redis keys | {fig['keys']['start']:,} | | {fig['keys']['end']:,} |",
            "",
            f"Events applied: {fig['events_applied']:,.0f} ({fig['events_per_s']:,}/s after "
            f"warm-up); rounds drawn: {fig['rounds_drawn']}; event ids held for "
            f"de-duplication: {fig['seen_ids']:,}; kiosk activations: {fig['activations']}; "
            f"ingest lag at most {fig['ingest_lag_max_s']} s; /health unanswered in 10 s "
            f"{fig['health_unanswered']} time(s); "
            f"retention sweeper in the {res.get('sweeper')}; load average at the end "
            f"{fig['load_avg_end']} on {fig['machine_cpus']} CPUs.",
            "",
        ]
    lines += ["| check | value | limit | ok | detail |", "| --- | ---: | ---: | --- | --- |"]
    for c in res["checks"]:
        lines.append(
            f"| {c['check']} | {c.get('value', '')} | {c.get('limit', '')} | "
            f"{'yes' if c['ok'] else '**NO**'} | {c.get('detail', '')} |"
        )
    log = res["log"]
    lines += ["", f"Daemon log: {log['errors']} error(s), {log['warnings']} warning(s)."]
    lines += [f"    {w}" for w in log["warning_lines"][:5]]
    return "\n".join(lines) + "\n"
