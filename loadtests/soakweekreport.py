"""The week soak's report (`python loadtests/soak.py --week`): Redis memory against simulated
time by key family, the daemon's RSS after the warm-up, the bytes Redis retained per event
beyond what the retention policy keeps, and the checks; written as soak.json and soak.md.

Bytes retained per event, from the exact census at the warm-up's end (`warm`) to the one
at the week's end (`end`), each taken with the clock paused and the daemon drained (so
used_memory, MEMORY STATS and every key are read on the same data):

    (used_memory[end] - used_memory[warm]
     - the growth of every family the policy keeps over a week, group by group (`POLICY`)
     - the growth of the keyspace's own tables, which grow with the kept keys)
    / events applied between the two

A family's bytes are its keys' as the allocator holds them (soakcensus.key_bytes: MEMORY
USAGE SAMPLES 0 plus the 8 bytes jemalloc adds to each 24-byte dict entry). The
keyspace's tables (`keyspace`) are what MEMORY STATS counts for the main dict beyond its
40 bytes a key (a dict entry and the value's object header, both in each key's bytes
already): its bucket array; and the expiry dict whole, 32 bytes an entry as allocated.

What is left is the growth of everything the policy bounds (the floor's sessions and
places, the registry, the stats, the sequence state) and of Redis's own buffers (clients,
scripts, replication, AOF); what none of these explains is `unattributed`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from typing import Any

import psutil
from soakcensus import DICT_ENTRY_SLACK, unknown_keys
from soakparts import LogWatch, heap_growth
from soakweekmd import week_markdown

MB = 2**20
KEY_IN_MAIN = 40  # MEMORY STATS' main dict: a dictEntry (24) and a robj (16) a key

POLICY: dict[str, tuple[str, frozenset[str]]] = {
    "days": (
        "gaming-day totals, spend and visits: 120 days after the day",
        frozenset({"day", "dayspend", "visits"}),
    ),
    "dedup": (
        "de-duplication window (7 days): event ids, ended sessions",
        frozenset({"seen", "floor-ended-card", "floor-ended-slot"}),
    ),
    "campaign": (
        "the campaign's standings, boards, activations, pools, pool files, seeds, "
        "markers, deadlines, letters, SMS, receipts: while the promotion is configured",
        frozenset(
            {"pwf", "pwd", "pm", "act", "lb", "lbpub", "lbhist", "seats", "pool", "poolfile"}
            | {"rapsfloor", "seed", "fired", "schedule-seed", "deadlines", "letters", "sms"}
            | {"other:receipts"}
        ),
    ),
    "audit": ("the audit trail and ledgers: not removed", frozenset({"audit", "ledger"})),
    "letters": (
        "dead letters (30 days), tokens (90 days after expiry)",
        frozenset({"deadletters", "token", "tokens"}),
    ),
}


def group_of(fam: str) -> str:
    """The policy group keeping a family, or `bounded`."""
    return next((name for name, (_, fams) in POLICY.items() if fam in fams), "bounded")


def keyspace(sample: dict[str, Any]) -> int:
    """The keyspace's tables beyond what each key's bytes hold (the module's docstring):
    the main dict's bucket array, and the expiry dict (entries as allocated, buckets)."""
    stats = sample.get("memory_stats") or {}
    main = stats.get("hashtable_main", 0) - KEY_IN_MAIN * stats.get("keys", 0)
    expires = stats.get("hashtable_expires", 0) + DICT_ENTRY_SLACK * stats.get("expires", 0)
    return int(max(0, main) + expires)


def redis_buffers(sample: dict[str, Any]) -> dict[str, int]:
    """Redis's own buffers in MEMORY STATS: clients', scripts', replication's and AOF's."""
    stats = sample.get("memory_stats") or {}

    def total(*names: str) -> int:
        return sum(int(stats.get(name, 0)) for name in names)

    return {
        "clients": total("clients_normal", "clients_slaves"),
        "scripts": total("lua_caches", "functions_caches"),
        "replication_aof": total("replication_backlog", "aof_buffer", "cluster_links"),
    }


def by_group(sample: dict[str, Any]) -> dict[str, float]:
    out = dict.fromkeys([*POLICY, "bounded"], 0.0)
    for fam, size in sample["family_bytes"].items():
        out[group_of(fam)] += size
    return out


def retained(warm: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    """Bytes retained per event, itemised (see the module's docstring)."""
    used = end["redis_used_bytes"] - warm["redis_used_bytes"]
    events = end["applied"] - warm["applied"]
    warm_fam, end_fam = warm["family_bytes"], end["family_bytes"]
    growth = {
        fam: end_fam.get(fam, 0) - warm_fam.get(fam, 0) for fam in {*warm_fam, *end_fam}
    }  # fmt: skip
    kept = dict.fromkeys(POLICY, 0)
    for fam, grew in growth.items():
        if group_of(fam) != "bounded":
            kept[group_of(fam)] += grew
    table = keyspace(end) - keyspace(warm)
    left = used - sum(kept.values()) - table
    bounded = {f: g for f, g in sorted(growth.items()) if group_of(f) == "bounded" and g}
    before, after = redis_buffers(warm), redis_buffers(end)
    buffers = {name: after[name] - before[name] for name in after}
    unattributed = left - sum(bounded.values()) - sum(buffers.values())
    slack = sum(end.get("family_slack", {}).values()) - sum(warm.get("family_slack", {}).values())
    return {
        "used_memory_growth": used,
        "events": events,
        "kept_by_policy": kept,
        "kept_by_policy_per_event": {k: round(v / max(1, events), 2) for k, v in kept.items()},
        "keyspace_buckets": table,
        "not_kept": left,
        "not_kept_per_event": round(left / max(1, events), 3),
        "bounded_families_growth": bounded,
        "clients_buffers": buffers["clients"],
        "scripts": buffers["scripts"],
        "replication_aof": buffers["replication_aof"],
        "unattributed": unattributed,
        "unattributed_per_event": round(unattributed / max(1, events), 3),
        "slack_growth": slack,
        "census_drift": {"warm": warm.get("census_drift"), "end": end.get("census_drift")},
    }


def day_rows(
    samples: list[dict[str, Any]], start: dt.datetime, days: float
) -> list[dict[str, Any]]:
    """One row per simulated day boundary: the first census at or after it."""
    census = [s for s in samples if "family_bytes" in s]
    rows = []
    for day in range(int(days) + 1):
        at = start + dt.timedelta(days=day)
        found = next((s for s in census if dt.datetime.fromisoformat(s["clock"]) >= at), None)
        if found is None and day == int(days) and census:
            found = census[-1]
        if found is None:
            continue
        groups = by_group(found)
        rows.append(
            {
                "day": day, "clock": found["clock"], "applied": found["applied"],
                "redis_used_mb": found["redis_used_mb"], "rss_mb": found["rss_mb"],
                "keys": found["dbsize"],
                "groups_mb": {g: round(b / MB, 1) for g, b in groups.items()},
            }
        )  # fmt: skip
    return rows


def rss_figures(samples: list[dict[str, Any]], warm: dict[str, Any]) -> dict[str, Any]:
    after = [s["rss_mb"] for s in samples[samples.index(warm) :]]
    base = warm["rss_mb"]
    return {
        "start": samples[0]["rss_mb"], "baseline": base, "min": min(after), "max": max(after),
        "last": after[-1], "min_pct": round(100 * (min(after) - base) / base, 1),
        "max_pct": round(100 * (max(after) - base) / base, 1),
        "last_pct": round(100 * (after[-1] - base) / base, 1),
        "heap_baseline": warm.get("heap_mb", {}), "heap_max_rss": _at_max(samples, warm),
        "heap_last": samples[-1].get("heap_mb", {}),
    }  # fmt: skip


SAME_HOUR = dt.time(13, 30)  # local: the floor at its daytime level, no RAPS mirror yet


def same_hour(
    samples: list[dict[str, Any]], warm: dict[str, Any], zone: dt.tzinfo | None
) -> dict[str, Any]:
    """Growth, not the day's swings: RSS and the C heap in use in the sample nearest
    `SAME_HOUR` local time on each simulated day after the warm-up, and the change from
    the first such day to the last."""
    nearest: dict[dt.date, tuple[float, dict[str, Any]]] = {}
    for sample in samples[samples.index(warm) :]:
        at = dt.datetime.fromisoformat(sample["clock"]).astimezone(zone)
        gap = abs((at - dt.datetime.combine(at.date(), SAME_HOUR, at.tzinfo)).total_seconds())
        if gap <= 3600 and (at.date() not in nearest or gap < nearest[at.date()][0]):
            nearest[at.date()] = (gap, sample)
    days = [
        {"day": day.isoformat(), "rss_mb": found["rss_mb"],
         "heap_in_use_mb": found.get("heap_mb", {}).get("in_use")}
        for day, (_, found) in sorted(nearest.items())
    ]  # fmt: skip
    out: dict[str, Any] = {"hour": SAME_HOUR.strftime("%H:%M"), "days": days}
    if len(days) >= 2:
        first, last = days[0]["rss_mb"], days[-1]["rss_mb"]
        out["rss_pct"] = round(100 * (last - first) / first, 1)
    return out


def _at_max(samples: list[dict[str, Any]], warm: dict[str, Any]) -> dict[str, float]:
    """The C heap's figures in the sample of the highest RSS after the warm-up."""
    top = max(samples[samples.index(warm) :], key=lambda s: s["rss_mb"])
    return dict(top.get("heap_mb", {}))


def busiest_hour(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The busiest simulated hour of the floor: events applied against the newest event's
    time (the daemon's frontier), so a backlog drained later is not counted as a peak;
    and the wall seconds that hour took."""
    points = [s for s in samples if s.get("frontier_ms")]
    best: dict[str, Any] = {}
    for i, first in enumerate(points):
        later = next(
            (s for s in points[i:] if s["frontier_ms"] >= first["frontier_ms"] + 3_600_000), None
        )
        if later is None:
            break
        events = later["applied"] - first["applied"]
        sim_h = (later["frontier_ms"] - first["frontier_ms"]) / 3_600_000
        wall = max(0.1, later["t_s"] - first["t_s"])
        if events / sim_h > best.get("per_sim_hour", -1):
            best = {
                "from": dt.datetime.fromtimestamp(first["frontier_ms"] / 1000, dt.UTC)
                .isoformat(), "per_sim_hour": round(events / sim_h),
                "per_sim_s": round(events / sim_h / 3600, 1), "per_wall_s": round(events / wall),
                "wall_s": round(wall / sim_h, 1), "speed": later.get("speed"),
            }  # fmt: skip
    return best


def speed_figures(samples: list[dict[str, Any]]) -> dict[str, Any]:
    speeds = sorted(s["speed"] for s in samples if s.get("speed"))
    if not speeds:
        return {}
    return {"min": speeds[0], "median": speeds[len(speeds) // 2], "max": speeds[-1]}


def lag_figures(samples: list[dict[str, Any]]) -> dict[str, Any]:
    behind = sorted(s["behind_sim_s"] for s in samples if s.get("behind_sim_s") is not None)
    wall = [s["behind_sim_s"] / s["speed"] for s in samples if s.get("behind_sim_s") is not None]
    ingest = [s["ingest_lag_s"] for s in samples if s.get("ingest_lag_s") is not None]
    if not behind:
        return {}
    p95 = behind[min(len(behind) - 1, int(0.95 * len(behind)))]
    return {
        "behind_sim_s_median": behind[len(behind) // 2], "behind_sim_s_p95": p95,
        "behind_sim_s_max": behind[-1], "behind_wall_s_max": round(max(wall), 1),
        "ingest_lag_s_max": max(ingest, default=None),
    }  # fmt: skip


def week_checks(
    res: dict[str, Any], warm: dict[str, Any], end: dict[str, Any], tol: float
) -> list[dict[str, Any]]:
    fig, checks = res["figures"], []

    def check(name: str, value: float, limit: float, ok: bool, detail: str) -> None:
        checks.append({"check": name, "value": value, "limit": limit, "ok": ok, "detail": detail})

    per_event = fig["retained"]["not_kept_per_event"]
    check("Redis bytes retained per event, not kept by policy", per_event, 1.0,
          per_event < 1.0, "goal: under 1 byte an event over the week")  # fmt: skip
    rss = fig["rss_mb"]
    worst = max(abs(rss["min_pct"]), abs(rss["max_pct"]), abs(rss["last_pct"]))
    check("daemon RSS after warm-up, largest change (%)", worst, 100 * tol,
          worst <= 100 * tol, f"baseline {rss['baseline']} MB: min {rss['min']}, "
          f"max {rss['max']}, last {rss['last']} MB")  # fmt: skip
    others = unknown_keys(end["families"]) - unknown_keys(warm["families"])
    named = sorted(f for f in end["families"] if f.startswith("other"))
    check("keys of no known family (growth)", others, 0, others <= 0, ", ".join(named))
    dead = end.get("dead_letters", 0) - warm.get("dead_letters", 0)
    check("events refused (dead letters) after warm-up", dead, 0, dead == 0,
          "every event within the daemon's limits (none ahead of its clock)")  # fmt: skip
    log = res["log"]
    check("ERROR lines in the daemon log", log["errors"], 0, log["errors"] == 0,
          "; ".join(log["error_lines"][:3]))  # fmt: skip
    reached = end.get("paused_at") or next(
        (s["paused_at"] for s in res["samples"] if "paused_at" in s), None
    )
    check("the week ran to its end", 1 if reached else 0, 1, bool(reached),
          f"clock paused at {reached}; simulator exit {end.get('simulator_exit')}")  # fmt: skip
    return checks


def week_report(args: argparse.Namespace, results: dict[str, Any], log: LogWatch) -> int:
    """Judge the week, write soak.json and soak.md to --out, print the latter; the exit
    status (1 if a check fails)."""
    samples = results.get("samples") or []
    census = [s for s in samples if "family_bytes" in s]
    warm = next((s for s in census if s.get("warmup_end")), None)
    end = census[-1] if census else None
    results["log"] = log.summary()
    results["retention_sweeps_logged"] = log.sweeps
    if warm is None or end is None or warm is end:
        results["checks"] = [{"check": "the run ended before its warm-up", "ok": False}]
    else:
        plan = results["week"]
        start = dt.datetime.fromisoformat(plan["start"])
        results["figures"] = {
            "retained": retained(warm, end),
            "rss_mb": rss_figures(samples, warm),
            "same_hour": same_hour(samples, warm, start.tzinfo),
            "heap_growth": heap_growth(args.out),  # with --trace-memory
            "days": day_rows(samples, start, plan["days"]),
            "busiest_hour": busiest_hour(samples),
            "lag": lag_figures(samples),
            "speed": speed_figures(samples),
            "wall_minutes": round(samples[-1]["t_s"] / 60, 1),
            "events_applied": end["applied"],
            "rounds_drawn": end["rounds_drawn"],
            "activations": end["activations"],
            "census_s_max": max(s["census_s"] for s in census),
            "warm": {"clock": warm["clock"], "applied": warm["applied"]},
            "machine_cpus": psutil.cpu_count(),
            "load_avg": [s["load_avg"] for s in samples],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
            "retention_sweeps": len(log.sweeps),
        }
        results["checks"] = week_checks(results, warm, end, args.rss_tolerance)
    ok = all(c["ok"] for c in results["checks"])
    results["ok"] = ok
    (args.out / "soak.json").write_text(json.dumps(results, indent=1, default=str))
    md = week_markdown(results)
    (args.out / "soak.md").write_text(md)
    print(md)
    print(f"report: {args.out}/soak.md, soak.json, daemon.log")
    return 0 if ok else 1
