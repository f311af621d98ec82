"""The run's summary beside locust's own report: summary.json and summary.md in `--out`.

Locust writes, per phase, `{phase}.html` and `{phase}_stats.csv` (+ history, failures,
exceptions); `locust` is the full run, `baseline` the bare MQTT baseline. The summary adds
what locust cannot see: the offered rate of the stream, the daemon's applied rate and
arrival-to-committed latency (its /metrics histogram, before and after), the ingest lag
from /health, the CPU of each process, and the ratios against the bare baseline.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from floorload.prepare import Stream
from floorload.scenarios import Scenario
from floorload.services import Metrics

if TYPE_CHECKING:
    from floorload.config import Options

PUBLISH = "publish egm (QoS 1, PUBACK)"
E2E_FULL = "card_in publish -> committed (session in Redis)"
E2E_BARE = "card_in publish -> delivered to a bare subscriber"


def stats(prefix: Path) -> list[dict[str, Any]]:
    """Locust's per-request rows (and the aggregated one) as numbers."""
    path = prefix.parent / f"{prefix.name}_stats.csv"
    if not path.exists():
        return []
    rows = []
    with path.open() as fh:
        for raw in csv.DictReader(fh):
            rows.append(
                {
                    "type": raw["Type"],
                    "name": raw["Name"],
                    "requests": int(raw["Request Count"]),
                    "failures": int(raw["Failure Count"]),
                    "rps": round(float(raw["Requests/s"]), 1),
                    "avg_ms": round(float(raw["Average Response Time"]), 2),
                    "p50_ms": _num(raw["50%"]),
                    "p95_ms": _num(raw["95%"]),
                    "p99_ms": _num(raw["99%"]),
                    "max_ms": round(float(raw["Max Response Time"]), 1),
                }
            )
    return rows


def errors(prefix: Path) -> list[dict[str, Any]]:
    """Locust's failures: request, error and how often."""
    path = prefix.parent / f"{prefix.name}_failures.csv"
    if not path.exists():
        return []
    with path.open() as fh:
        return [
            {
                "type": r["Method"],
                "name": r["Name"],
                "error": r["Error"],
                "count": int(r["Occurrences"]),
            }
            for r in csv.DictReader(fh)
        ]


def _num(text: str) -> float | None:
    return None if text in ("", "N/A") else float(text)


def _row(rows: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["name"] == name), None)


def _daemon(m: Metrics, seconds: float) -> dict[str, Any]:
    def ms(q: float) -> float | str | None:
        v = m.quantile(q)
        if v == float("inf"):
            return "> 10000"  # beyond the histogram's last bucket
        return None if v is None else round(v * 1000, 2)

    return {
        "applied": int(m.applied),
        "applied_per_s": round(m.applied / seconds, 1),
        "duplicates": int(m.duplicates),
        "dead_letters": {k: int(v) for k, v in m.dead_letters.items() if v},
        "ingest_latency_ms": {"p50": ms(0.5), "p95": ms(0.95), "p99": ms(0.99)},
        "mean_batch": round(m.batched / m.batches, 1) if m.batches else None,
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def write(
    scn: Scenario, opts: Options, results: dict[str, Any], stream: Stream, users: dict[str, int]
) -> dict[str, Any]:
    run_s = opts.run_time_s
    offered = sum(stream.per_second[: int(run_s * opts.speed)]) / run_s
    summary: dict[str, Any] = {
        "scenario": scn.name,
        "title": scn.title,
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}",
        "speed": opts.speed,
        "processes": opts.processes,
        "users": users,
        "stream": {
            "warmup_card_events": len(stream.warmup),
            "offered_events_per_s": round(offered, 1),
            "measured_part_per_type_per_s": {
                k: round(v / stream.measured_s, 2) for k, v in stream.counts.most_common()
            },
        },
        "setup": {k: results.get(k) for k in ("site", "setup_s", "import", "warmup")},
    }
    full = results.get("full")
    if full:
        steady_s = full["steady_s"]
        summary["full"] = {
            "seconds": run_s,
            "steady_s": steady_s,
            "locust_exit": full["locust_exit"],
            "stats": stats(opts.out / "locust"),
            "errors": errors(opts.out / "locust"),
            "daemon": _daemon(full["metrics_steady"], steady_s),
            "daemon_after_drain": _daemon(full["metrics_drained"], run_s),
            "samples": full["samples_steady"],
        }
        if "startup" in full:
            up = full["startup"]
            summary["startup"] = {
                "seconds": up["seconds"],
                "stats": up["stats"],
                "errors": up.get("errors", []),
                "daemon": _daemon(up["metrics"], up["seconds"]),
                "samples": up["samples"],
            }
    base = results.get("baseline")
    if base:
        rows_b = stats(opts.out / "baseline")
        summary["baseline"] = {**base, "stats": rows_b, "errors": errors(opts.out / "baseline")}
        if full:
            ratios = {}
            for what, full_name, bare_name in (
                ("puback", PUBLISH, PUBLISH),
                ("end_to_end", E2E_FULL, E2E_BARE),
            ):
                f, b = _row(summary["full"]["stats"], full_name), _row(rows_b, bare_name)
                if f and b:
                    ratios[what] = {
                        q: _ratio(f[f"{q}_ms"], b[f"{q}_ms"]) for q in ("p50", "p95", "p99")
                    } | {"avg": _ratio(f["avg_ms"], b["avg_ms"])}
            summary["ratios_full_over_bare"] = ratios
    summary["teardown"] = {k: results.get(k) for k in ("daemon_exit", "keys_deleted")}
    (opts.out / "summary.json").write_text(json.dumps(summary, indent=1, default=_plain))
    (opts.out / "summary.md").write_text(markdown(summary))
    return summary


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def _errors(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["Failures: none.", ""]
    out = ["Failures:", ""]
    out += [f"- {r['count']} x {r['type']} {r['name']}: {r['error']}" for r in rows]
    return [*out, ""]


def _table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| type | name | requests | failures | req/s | p50 ms | p95 ms | p99 ms | max ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if not r["requests"]:
            continue  # a name seen only in the start-up (locust keeps it at zero)
        out.append(
            f"| {r['type']} | {r['name']} | {r['requests']:,} | {r['failures']:,} | "
            f"{r['rps']:,} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['max_ms']} |"
        )
    return out


def markdown(s: dict[str, Any]) -> str:
    per_type = ", ".join(
        f"{k} {v}/s" for k, v in s["stream"]["measured_part_per_type_per_s"].items()
    )
    lines = [
        f"# {s['title']} — run of {s['when']}",
        "",
        f"Machine: {s['machine']}; speed x{s['speed']}; locust worker processes: "
        f"{s['processes'] or 'none (one process)'}.",
        "",
        "Users: " + ", ".join(f"{k} {v}" for k, v in s["users"].items()) + ".",
        "",
        f"Stream: {s['stream']['warmup_card_events']:,} card events set the floor before the "
        f"run; offered during the run: **{s['stream']['offered_events_per_s']:,} events/s** "
        f"({per_type}).",
        "",
        f"Set-up: {json.dumps(s['setup'], default=str)}",
        "",
    ]
    if "full" in s:
        f = s["full"]
        part = (
            f"Steady part: the last {f['steady_s']} s of a {f['seconds']} s run"
            if "startup" in s
            else f"The run: {f['seconds']} s ({f['steady_s']} s with locust's start)"
        )
        lines += [f"## {part} (locust exit {f['locust_exit']})", ""]
        lines += [*_table(f["stats"]), "", *_errors(f["errors"])]
        lines += [
            f"Daemon (its /metrics over the steady part): `{json.dumps(f['daemon'])}`",
            "",
            f"Samples (CPU in % of one core, means; lag from /health each second): "
            f"`{json.dumps(f['samples'])}`",
            "",
            f"Whole run, once drained: `{json.dumps(f['daemon_after_drain'])}`",
            "",
        ]
    if "startup" in s:
        u = s["startup"]
        lines += [f"## Start-up: the first {u['seconds']} s (every user connecting)", ""]
        lines += [*_table(u["stats"]), "", *_errors(u["errors"])]
        lines += [
            f"Daemon: `{json.dumps(u['daemon'])}`",
            "",
            f"Samples: `{json.dumps(u['samples'])}`",
            "",
        ]
    if "baseline" in s:
        b = s["baseline"]
        lines += [
            f"## Bare baseline ({b['seconds']} s; the bare subscriber received "
            f"{b['bare_received']:,} messages; locust exit {b['locust_exit']})",
            "",
        ]
        lines += [*_table(b["stats"]), "", *_errors(b["errors"])]
        lines += [f"Samples: `{json.dumps(b['samples'])}`", ""]
    if "ratios_full_over_bare" in s:
        lines += [f"Latency, full / bare: `{json.dumps(s['ratios_full_over_bare'])}`", ""]
    lines += [f"Tear-down: `{json.dumps(s['teardown'])}`", ""]
    return "\n".join(lines)
