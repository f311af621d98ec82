"""The soak's week mode (loadtests/soak.py --week): its campaign is the real Festa Fortuna
file moved to the week, its bytes-per-event figure leaves out what the retention policy
keeps, and a few simulated hours of the small `ci` floor run end to end so the mode
cannot silently rot."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import uuid
from pathlib import Path
from zoneinfo import ZoneInfo

import redis

from bonusd.promotions import load_promotion
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT

sys.path.insert(0, str(PROJECT / "loadtests"))

from soakcensus import key_bytes
from soakweek import WeekPlan, draw_of, week_promotion
from soakweekreport import retained

ZONE = ZoneInfo("Africa/Johannesburg")
MONDAY = dt.datetime(2025, 10, 20, 8, 0, tzinfo=ZONE)


def test_the_week_runs_festa_fortuna_with_a_draw_and_a_raps_session_every_day(
    tmp_path: Path,
) -> None:
    plan = WeekPlan(start=MONDAY, days=7, speed=300, play_minutes=15)
    path = tmp_path / "week.toml"
    path.write_text(week_promotion("soak-x", plan))
    promotion = load_promotion(path)
    assert promotion.site == "soak-x"
    draws = sorted(draw.id for draw in promotion.draw_list)
    assert draws == sorted(
        [f"saturday-2025-10-{day}" for day in range(20, 27)] + ["wednesday-2025-10-22"]
    )
    assert len(promotion.jackpot_sessions) == 7
    assert draw_of(MONDAY + dt.timedelta(hours=15), plan) == "saturday-2025-10-20"
    assert draw_of(MONDAY + dt.timedelta(hours=22), plan) == "saturday-2025-10-20"  # 06:00


def test_bytes_per_event_leave_out_the_families_the_policy_keeps() -> None:
    # MEMORY STATS' main dict: 40 bytes a key (in each key's bytes already) + the buckets
    stats = {"hashtable_main": 40 * 100 + 800, "hashtable_expires": 0, "keys": 100}
    warm = {
        "redis_used_bytes": 1_000_000, "applied": 1_000,
        "memory_stats": stats | {"clients_normal": 5_000, "lua_caches": 1_000},
        "family_bytes": {"day": 100_000, "session": 50_000, "audit": 10_000},
    }  # fmt: skip
    grown = {
        **stats, "hashtable_main": 40 * 200 + 1_600, "keys": 200, "clients_normal": 6_000,
        "lua_caches": 1_500, "hashtable_expires": 24 * 10 + 8 * 16, "expires": 10,
    }  # fmt: skip
    end = {
        "redis_used_bytes": 1_300_000, "applied": 101_000, "memory_stats": grown,
        "family_bytes": {"day": 250_000, "session": 60_000, "audit": 40_000, "pwf": 80_000},
    }  # fmt: skip
    out = retained(warm, end)
    assert out["kept_by_policy"] == {
        "days": 150_000, "dedup": 0, "campaign": 80_000, "audit": 30_000, "letters": 0,
    }  # fmt: skip
    # the main dict's buckets grew 800 bytes; the expiry dict holds 10 entries of 32 bytes
    assert out["keyspace_buckets"] == 800 + 32 * 10 + 8 * 16
    left = 300_000 - 260_000 - out["keyspace_buckets"]
    assert out["not_kept"] == left
    assert out["not_kept_per_event"] == round(left / 100_000, 3)
    assert out["bounded_families_growth"] == {"session": 10_000}
    assert (out["clients_buffers"], out["scripts"]) == (1_000, 500)
    assert out["unattributed"] == left - 10_000 - 1_000 - 500


def test_a_key_s_bytes_add_the_allocator_s_slack_to_memory_usage(redis_url: str) -> None:
    """jemalloc holds a 24-byte dict entry in 32 bytes: 8 more per key, and for a hash,
    set or sorted set in a hash-table encoding 8 more per element and for its dict."""
    r = redis.Redis.from_url(redis_url)
    base = f"test-soakcensus-{uuid.uuid4().hex[:8]}:"
    small, big, zset = f"{base}small", f"{base}big", f"{base}zset"
    try:
        r.hset(small, mapping={"a": 1, "b": 2})  # listpack
        r.sadd(big, *[f"card-{n}" for n in range(600)])  # hashtable
        r.zadd(zset, {f"card-{n}": n for n in range(300)})  # skiplist
        sizes = key_bytes(r, [small, big, zset, f"{base}gone"])
        usage = [int(r.memory_usage(key, samples=0) or 0) for key in (small, big, zset)]
        assert sizes == [
            (usage[0] + 8, 8),
            (usage[1] + 8 + 8 + 8 * 600, 8 + 8 + 8 * 600),
            (usage[2] + 8 + 8 + 8 * 300, 8 + 8 + 8 * 300),
            (0, 0),
        ]
    finally:
        r.delete(small, big, zset)


def test_a_few_hours_of_the_ci_floor_run_through_the_week_mode(
    tmp_path: Path, redis_url: str, broker: LocalMosquitto
) -> None:
    out = tmp_path / "report"
    command = [
        sys.executable, "loadtests/soak.py", "--week", "--scenario", "smoke",
        "--week-start", "2025-10-25T18:00:00", "--days", "0.25", "--speed", "3000", "--no-governor",
        "--sample-s", "0.5", "--census-hours", "1", "--out", str(out),
        "--redis-url", redis_url, "--mqtt-url", broker.url,
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=PROJECT, capture_output=True, text=True, check=False, timeout=170
    )
    res = json.loads((out / "soak.json").read_text())
    checks = {c["check"]: c for c in res["checks"]}
    assert checks["the week ran to its end"]["ok"], done.stdout[-3000:] + done.stderr[-3000:]
    assert checks["ERROR lines in the daemon log"]["ok"], done.stdout[-3000:]
    fig = res["figures"]
    assert fig["events_applied"] > 0
    assert fig["rounds_drawn"] >= 1  # the 23:00 draw of the Saturday
    assert fig["days"][0]["groups_mb"]["bounded"] > 0
    assert "Redis used_memory by simulated day" in (out / "soak.md").read_text()
    # a few hours of a small floor say nothing of bytes per event: only the checks' form
    assert done.returncode in (0, 1)
