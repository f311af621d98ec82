"""The week soak's report as text (soak.md): the plan, Redis memory by simulated day and
policy group, the bytes retained per event itemised, the daemon's RSS, the busiest hour,
how far behind the floor the daemon ran, every family's growth, and the checks."""

from __future__ import annotations

from typing import Any

MB = 2**20
GROUPS = ("days", "dedup", "campaign", "audit", "letters", "bounded")


def week_markdown(res: dict[str, Any]) -> str:
    plan = res.get("week", {})
    lines = [
        f"# Soak: a week on the floor, site {res['site']}",
        "",
        f"Floor `{plan.get('floor')}` from {plan.get('start')} for {plan.get('days')} "
        f"simulated days on the shared clock, at most x{plan.get('speed')} ("
        f"{plan.get('wall_minutes_at_top_speed')} wall minutes at that speed); aggregated "
        f"play, one event per carded-in player per at most {plan.get('play_minutes')} "
        f"simulated minutes; the retention sweeper in the {res.get('sweeper')}, every "
        f"{plan.get('retention_interval_s')} simulated seconds; warm-up "
        f"{plan.get('warmup_days')} simulated day(s).",
        "",
    ]
    fig = res.get("figures")
    if fig:
        lines += _days(fig) + _retained(fig) + _rss_and_rate(res, fig) + _growth(fig)
        lines += _families(res)
    lines += ["| check | value | limit | ok | detail |", "| --- | ---: | ---: | --- | --- |"]
    for check in res["checks"]:
        lines.append(
            f"| {check['check']} | {check.get('value', '')} | {check.get('limit', '')} | "
            f"{'yes' if check['ok'] else '**NO**'} | {check.get('detail', '')} |"
        )
    log = res["log"]
    lines += ["", f"Daemon log: {log['errors']} error(s), {log['warnings']} warning(s)."]
    lines += [f"    {line}" for line in log["warning_lines"][:5]]
    return "\n".join(lines) + "\n"


def _days(fig: dict[str, Any]) -> list[str]:
    lines = [
        "## Redis used_memory by simulated day (MB; families by retention group)",
        "",
        "| day | simulated time | events applied | used_memory | "
        + " | ".join(GROUPS)
        + " | daemon RSS |",
        "| ---: | --- | ---: | ---: | " + " | ".join("---:" for _ in GROUPS) + " | ---: |",
    ]
    for row in fig["days"]:
        groups = " | ".join(f"{row['groups_mb'][g]:.1f}" for g in GROUPS)
        lines.append(
            f"| {row['day']} | {row['clock'][:16]} | {row['applied']:,} | "
            f"{row['redis_used_mb']:.1f} | {groups} | {row['rss_mb']:.1f} |"
        )
    return [*lines, ""]


def _retained(fig: dict[str, Any]) -> list[str]:
    ret = fig["retained"]
    events = max(1, ret["events"])
    lines = [
        f"## Bytes retained per event (from the warm-up's end, {fig['warm']['clock'][:16]}, "
        "to the week's end)",
        "",
        "| bucket | MB | bytes per event |",
        "| --- | ---: | ---: |",
        f"| used_memory growth | {ret['used_memory_growth'] / MB:.2f} | "
        f"{ret['used_memory_growth'] / events:.2f} |",
    ]
    for name, grew in ret["kept_by_policy"].items():
        lines.append(f"| − kept by policy: {name} | {grew / MB:.2f} | {grew / events:.2f} |")
    parts = [
        ("of which bounded families", sum(ret["bounded_families_growth"].values())),
        ("of which clients' buffers", ret["clients_buffers"]),
        ("of which scripts (Lua, functions)", ret.get("scripts", 0)),
        ("of which replication, AOF buffers", ret.get("replication_aof", 0)),
        ("of which unattributed", ret["unattributed"]),
    ]
    lines += [
        f"| − the keyspace's tables (buckets, expiry entries) | "
        f"{ret['keyspace_buckets'] / MB:.2f} | {ret['keyspace_buckets'] / events:.2f} |",
        f"| **= retained, not kept by policy** | **{ret['not_kept'] / MB:.2f}** | "
        f"**{ret['not_kept_per_event']:.3f}** |",
        *(f"| {name} | {size / MB:.2f} | {size / events:.3f} |" for name, size in parts),
        "",
        f"Events applied in between: {ret['events']:,}. {_how_measured(ret)}",
        "",
    ]
    return lines


def _how_measured(ret: dict[str, Any]) -> str:
    """How the figures above are measured, with the run's own uncertainty."""
    drift = ret.get("census_drift") or {}
    moved = ", ".join(f"{k} {v:+,} B" for k, v in drift.items() if v is not None) or "not read"
    return (
        "Both censuses are taken with the clock paused and the daemon drained; used_memory, "
        "MEMORY STATS and every key are read on that one state (used_memory moved while "
        f"each census ran: {moved}). A family's bytes are its keys' `MEMORY USAGE ... "
        "SAMPLES 0` plus jemalloc's size-class slack MEMORY USAGE leaves out: 8 bytes per "
        "dict entry (a 24-byte entry in a 32-byte class), one per key and one per element "
        "of a hash-table encoded hash, set or sorted set "
        f"({ret.get('slack_growth', 0) / MB:+.2f} MB of the growth). The keyspace's tables "
        "are MEMORY STATS' main dict less its 40 bytes a key (entry and object header, "
        "already in the keys' bytes) and its expiry dict, 32 bytes an entry as allocated."
    )


def _growth(fig: dict[str, Any]) -> list[str]:
    """Where the traced memory grew, warm-up to end (`--trace-memory`)."""
    rows = fig.get("heap_growth") or []
    if not rows:
        return []
    lines = [
        "Where the daemon's traced memory grew from the warm-up to the end (`--trace-memory`):",
        "",
        "| grew (MB) | held at the end (MB) | blocks | allocated at | called from (bonusd) |",
        "| ---: | ---: | ---: | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['grew_mb']} | {row['mb']} | {row['blocks']:+,} | `{row['where']}` | "
            f"{' ← '.join(f'`{f}`' for f in row['from']) or '—'} |"
        )
    return [*lines, ""]


def _heap(figures: dict[str, float] | None) -> str:
    if not figures:
        return "(not read)"
    heap = " / ".join(str(figures.get(part, "?")) for part in ("in_use", "free", "mapped"))
    desks = " / ".join(
        str(figures.get(f"desk_{cache}", "?")) for cache in ("books", "pools", "floors")
    )
    mirror = figures.get("mirror_rows", "?")
    return f"{heap} (desks' caches, books / pools / floors: {desks}; floor mirror: {mirror} cards)"


def _rss_and_rate(res: dict[str, Any], fig: dict[str, Any]) -> list[str]:
    rss, hour, lag, speed = fig["rss_mb"], fig["busiest_hour"], fig["lag"], fig["speed"]
    return [
        f"Daemon RSS: {rss['start']} MB at the start, **{rss['baseline']} MB after the "
        f"warm-up**; then min {rss['min']} ({rss['min_pct']:+} %), max {rss['max']} "
        f"({rss['max_pct']:+} %), last {rss['last']} MB ({rss['last_pct']:+} %). "
        f"The C heap (MB in use / free kept by the allocator / mapped large blocks): "
        f"{_heap(rss.get('heap_baseline'))} after the warm-up, {_heap(rss.get('heap_max_rss'))} "
        f"at the highest RSS, {_heap(rss.get('heap_last'))} at the end.",
        "",
        *_same_hour(fig.get("same_hour")),
        f"Busiest simulated hour (from {str(hour.get('from'))[:16]} UTC): "
        f"{hour.get('per_sim_hour', 0):,} events, {hour.get('per_sim_s')}/s simulated, "
        f"{hour.get('per_wall_s', 0):,}/s wall ({hour.get('wall_s')} wall s for the hour). "
        f"Clock speed: min x{speed.get('min')}, median x{speed.get('median')}, "
        f"max x{speed.get('max')}.",
        "",
        f"The daemon behind the floor (the shared clock minus the newest event applied): "
        f"median {lag.get('behind_sim_s_median')} s, p95 {lag.get('behind_sim_s_p95')} s, "
        f"max {lag.get('behind_sim_s_max')} simulated s ({lag.get('behind_wall_s_max')} wall "
        f"s); received-not-committed at most {lag.get('ingest_lag_s_max')} s.",
        "",
        f"{fig['events_applied']:,} events applied in {fig['wall_minutes']} wall minutes; "
        f"{fig['rounds_drawn']} draw rounds; kiosk activations {fig['activations']}; "
        f"{fig['retention_sweeps']} retention sweeps logged; census at most "
        f"{fig['census_s_max']} s; load average at the end {fig['load_avg_end']} on "
        f"{fig['machine_cpus']} CPUs.",
        "",
    ]


def _same_hour(same: dict[str, Any] | None) -> list[str]:
    """RSS and the heap in use at the same local hour each day: growth without the day's
    swings (an evening's draw, a RAPS session, the floor's size)."""
    if not same or not same.get("days"):
        return []
    days = ", ".join(f"{d['day'][5:]} {d['rss_mb']} / {d['heap_in_use_mb']}" for d in same["days"])
    change = f" ({same['rss_pct']:+} % RSS, first day to last)" if "rss_pct" in same else ""
    return [f"At {same['hour']} local each day, RSS / heap in use (MB): {days}{change}.", ""]


def _families(res: dict[str, Any]) -> list[str]:
    samples = [s for s in res["samples"] if "family_bytes" in s]
    warm = next(s for s in samples if s.get("warmup_end"))
    end = samples[-1]
    lines = [
        "## Every family: after the warm-up and at the end",
        "",
        "| family | keys (warm-up) | keys (end) | MB (warm-up) | MB (end) | growth MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    fams = sorted({*warm["family_bytes"], *end["family_bytes"]})
    for fam in fams:
        before, after = warm["family_bytes"].get(fam, 0), end["family_bytes"].get(fam, 0)
        lines.append(
            f"| {fam} | {warm['families'].get(fam, 0):,} | {end['families'].get(fam, 0):,} | "
            f"{before / MB:.2f} | {after / MB:.2f} | {(after - before) / MB:+.2f} |"
        )
    return [*lines, ""]
