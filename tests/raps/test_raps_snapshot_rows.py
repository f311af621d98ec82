"""The floor rows as RAPS reads them, against a real Redis: a member excluded after a
jackpot's freeze is passed over when the winner is reselected, the floor snapshot travels
with the audit export and verifies offline, and `bonusd floor reindex` rebuilds the rows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bonusd.draws.fairness import pick_sequence
from bonusd.draws.poolfile import parse_pool
from bonusd.registry.records import Member, Tier
from tests.floor.helpers import (
    lines,
)
from tests.raps.helpers import CREW, J1, PID, SID, Site, kinds, start, store
from tests.seal_helpers import opened_seed


async def test_a_member_excluded_after_the_freeze_is_passed_over_on_reselection(s: Site) -> None:
    await start(s)
    first = await s.desk.run_jackpot(PID, SID, 1)
    pool = parse_pool(
        (await s.redis.get(s.keys.poolfile(first[0].payload["pool_commitment"]))).encode()
    )
    seed = await opened_seed(s.redis, s.keys.seed(f"{PID}.{SID}", "raps", "1"))
    stream = [p.card for p in pick_sequence(pool, seed, 3)]
    assert first[1].payload["card"] == stream[0]
    # the next in the stream is excluded at the desk after the pool froze
    await store(s).import_members([Member(card=stream[1], name="N", tier=Tier("Q"), excluded=True)])
    s.clock.advance(60)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    records = await s.desk.act(PID, SID, 1, "not_owner", CREW, reason="not the card's holder")
    assert kinds(records) == ["claim", "claim", "redraw", "claim"]
    redraw = records[2].payload
    assert redraw["card"] == stream[2]
    assert [(p["card"], p["reason"]) for p in redraw["passed_over"]][-1] == (stream[1], "excluded")
    ledger = await s.desk.audit.ledger(f"{PID}.{SID}")
    excl = [r.payload for r in ledger if r.kind == "exclusion"]
    assert [(e["draw_id"], e["card"]) for e in excl] == [(J1, stream[1])]
    # a restarted daemon replays the exclusion; the jackpot verifies with it
    s.desk._books.clear()
    s.desk._floors.clear()
    book = await s.desk.book(PID, SID)
    assert book.jackpot(1).excluded == {stream[1]} and book.claims[2].card == stream[2]
    await s.desk.act(PID, SID, 2, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 2, "verify_at_device", CREW)
    _, result = await s.desk.verify(J1)
    assert [v.picks_checked for v in result.values()] == [2] and all(v.ok for v in result.values())


def cli(site: str, redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BONUSD_SITE": site, "BONUSD_REDIS_URL": redis_url}
    command = [sys.executable, "-m", "bonusd", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


async def test_a_jackpot_verifies_offline_from_the_export_floor_snapshot_included(
    s: Site, site: str, redis_url: str, tmp_path: Path
) -> None:
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 1, "verify_at_device", CREW)
    out, pools = tmp_path / "audit.jsonl", tmp_path / "pools"
    exported = cli(site, redis_url, "audit", "export", str(out), "--pools", str(pools))
    assert exported.returncode == 0, exported.stderr
    floor = pools / f"{J1}.1.floor"
    assert floor.read_bytes().startswith(b"bonusd-raps-floor 1 ")
    terms = str(tmp_path / "montecasino-festa-fortuna.toml")  # the site's promotion file
    check = ("verify-draw", J1, "--from", str(out), "--pools", str(pools), "--promotion", terms)
    ok = cli(site, redis_url, *check)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"jackpot {J1} attempt 1 floor snapshot: ok" in ok.stdout
    # a snapshot that does not give the pool (one player fewer) is found out
    raw = floor.read_bytes()
    floor.write_bytes(raw[: raw.rindex(b"\n", 0, len(raw) - 1) + 1])
    bad = cli(site, redis_url, *check)
    assert bad.returncode == 1 and "floor snapshot: FAILED" in bad.stdout


async def test_floor_reindex_command(s: Site, site: str, redis_url: str) -> None:
    await start(s)  # fifty players, their rows built by reindex_floor already
    before = await s.desk.snapshot()
    await s.redis.delete(s.keys.floor_row)
    done = cli(site, redis_url, "floor", "reindex", "--day", "2025-10-04")
    assert done.returncode == 0, done.stderr
    assert "50 card(s) on the floor (2025-10-04)" in done.stdout
    assert lines(await s.desk.snapshot()) == lines(before)
