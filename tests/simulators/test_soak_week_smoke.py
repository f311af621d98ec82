"""The soak's week mode (loadtests/soak.py --week): its campaign is the real Festa Fortuna
file moved to the week, its bytes-per-event figure leaves out what the retention policy
keeps, and a few simulated hours of the small `ci` floor run end to end so the mode
cannot silently rot."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

from bonusd.promotions import load_promotion
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT

sys.path.insert(0, str(PROJECT / "loadtests"))

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
    stats = {"hashtable_main": 24 * 100 + 800, "hashtable_expires": 0, "keys": 100}
    warm = {
        "redis_used_bytes": 1_000_000, "applied": 1_000, "memory_stats": stats,
        "family_bytes": {"day": 100_000, "session": 50_000, "audit": 10_000},
    }  # fmt: skip
    grown = {**stats, "hashtable_main": 24 * 200 + 1_600, "keys": 200}
    end = {
        "redis_used_bytes": 1_300_000, "applied": 101_000, "memory_stats": grown,
        "family_bytes": {"day": 250_000, "session": 60_000, "audit": 40_000, "pwf": 80_000},
    }  # fmt: skip
    out = retained(warm, end)
    assert out["kept_by_policy"] == {
        "days": 150_000, "dedup": 0, "campaign": 80_000, "audit": 30_000, "letters": 0,
    }  # fmt: skip
    assert out["keyspace_buckets"] == 800
    assert out["not_kept"] == 300_000 - 260_000 - 800
    assert out["not_kept_per_event"] == round(39_200 / 100_000, 3)
    assert out["bounded_families_growth"] == {"session": 10_000}


def test_a_few_hours_of_the_ci_floor_run_through_the_week_mode(
    tmp_path: Path, redis_url: str, broker: LocalMosquitto
) -> None:
    out = tmp_path / "report"
    command = [
        sys.executable, "loadtests/soak.py", "--week", "--scenario", "smoke",
        "--week-start", "2025-10-25T18:00:00", "--days", "0.25", "--speed", "3000", "--no-governor",
        "--sample-s", "1", "--census-hours", "1", "--out", str(out),
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
