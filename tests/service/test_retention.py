"""Data retention on a real Redis with a manual clock: what is past its policy is removed,
what is within it (or inside a running campaign) is kept, and the audit trail is never
removed from Redis, only copied to an archive whose chain verifies."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.access.auth import Role, TokenStore
from bonusd.audit.archive import AuditArchive
from bonusd.audit.chain import AuditLog, Kind
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import GamingCalendar, ManualClock
from bonusd.errors import ConfigError
from bonusd.floor.rules import HOUR_MS
from bonusd.infra.keys import Keys, family
from bonusd.promotions import load_promotion
from bonusd.service import retention
from bonusd.service.retention import RetentionPolicy, RetentionSweeper, campaign_span
from bonusd.settings import load_settings

SAST = dt.timezone(dt.timedelta(hours=2))
NOW = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)  # gaming day 2026-10-03
TODAY = dt.date(2026, 10, 3)
CALENDAR = GamingCalendar(SAST, dt.time(8, 0))  # type: ignore[arg-type]
PROJECT = Path(__file__).resolve().parents[2]


def policy(**changes: object) -> RetentionPolicy:
    base: dict[str, object] = {
        "gaming_days": 120,
        "campaign_grace_days": 30,
        "dedup_window_s": 7 * 24 * 3600,
        "deadletter_days": 30,
        "token_days": 90,
        "audit_days": 1096,
        "campaigns": (),
    }
    return RetentionPolicy(**{**base, **changes})  # type: ignore[arg-type]


def sweeper(
    r: aioredis.Redis,
    site: str,
    clock: ManualClock,
    folder: Path,
    *,
    batch: int = 10,
    **changes: object,
) -> RetentionSweeper:
    return RetentionSweeper(
        redis=r,
        keys=Keys("bonusd", site),
        clock=clock,
        calendar=CALENDAR,
        policy=policy(**changes),
        archive=AuditArchive(folder),
        batch=batch,
    )


async def write_day(r: aioredis.Redis, base: str, day: dt.date, cards: int) -> None:
    for n in range(cards):
        card = f"40{n:05d}"
        await r.hset(f"{base}day:{day}:{card}", mapping={"slots_points": 5, "visit": 1})
        await r.sadd(f"{base}visits:{day}", card)
        await r.hincrby(f"{base}dayspend:{day}", card, 100)


async def day_keys(r: aioredis.Redis, base: str, day: dt.date) -> int:
    return len([k async for k in r.scan_iter(match=f"{base}day:{day}:*", count=1000)])


# -- the policy alone -----------------------------------------------------------------------


def test_policy_days_seen_and_tokens() -> None:
    p = policy(campaigns=((dt.date(2026, 3, 1), dt.date(2026, 4, 30)),))
    assert p.keep_day(TODAY - dt.timedelta(days=120), TODAY)
    assert not p.keep_day(TODAY - dt.timedelta(days=121), TODAY)
    assert p.keep_day(dt.date(2026, 3, 1), TODAY)  # inside the campaign
    assert p.keep_day(dt.date(2026, 5, 30), TODAY)  # its grace
    assert not p.keep_day(dt.date(2026, 5, 31), TODAY)
    assert not p.keep_day(dt.date(2026, 2, 28), TODAY)
    now_ms = int(NOW.timestamp() * 1000)
    window_h = 7 * 24
    assert p.keep_seen(now_ms // HOUR_MS - window_h, now_ms)
    assert not p.keep_seen(now_ms // HOUR_MS - window_h - 3, now_ms)
    expired = NOW - dt.timedelta(days=91)
    assert not p.keep_token(expired, None, NOW)
    assert p.keep_token(NOW - dt.timedelta(days=89), None, NOW)
    assert not p.keep_token(NOW + dt.timedelta(days=9), NOW - dt.timedelta(days=95), NOW)


def test_audit_kept_three_years_at_least() -> None:
    with pytest.raises(ValueError, match="three years"):
        policy(audit_days=365)
    with pytest.raises(ConfigError, match=r"BONUSD_RETENTION_AUDIT_DAYS.*three years"):
        load_settings(retention_audit_days=1000)
    assert load_settings().retention_audit_days >= 1096
    with pytest.raises(ConfigError, match=r"BONUSD_RETENTION_GAMING_DAYS.*de-duplication"):
        load_settings(retention_gaming_days=7, dedup_window_s=7 * 86_400)


def test_campaign_span_reaches_back_to_earning_windows() -> None:
    p = load_promotion(PROJECT / "promotions" / "golden-horse-mega-points-chase.toml")
    first, last = campaign_span(p)
    assert first <= p.start
    assert last >= p.end
    assert last >= max(d.date for d in p.draw_list) + dt.timedelta(days=p.claims.prize_letter_days)


def test_families() -> None:
    assert family("day:2026-10-03:4000123") == "day"
    assert family("seen:493012") == "seen"
    assert family("pwf:gh:halfway:slots_points") == "pwf"
    assert family("something-new:1") == "other"


# -- the sweeper on Redis -------------------------------------------------------------------


async def test_gaming_days_past_policy_removed_campaign_days_kept(
    site: str, aredis: aioredis.Redis, tmp_path: Path
) -> None:
    base = Keys("bonusd", site).base
    old, recent = TODAY - dt.timedelta(days=200), TODAY - dt.timedelta(days=10)
    in_campaign = TODAY - dt.timedelta(days=250)
    for day in (old, recent, in_campaign):
        await write_day(aredis, base, day, 25)
    campaigns = ((in_campaign - dt.timedelta(days=3), in_campaign + dt.timedelta(days=3)),)
    s = sweeper(aredis, site, ManualClock(NOW), tmp_path, batch=10, campaigns=campaigns)
    report = await s.sweep()
    assert report.removed["day"] == 25
    assert report.removed["dayspend"] == 1
    assert await day_keys(aredis, base, old) == 0
    assert not await aredis.exists(f"{base}visits:{old}", f"{base}dayspend:{old}")
    for kept in (recent, in_campaign):
        assert await day_keys(aredis, base, kept) == 25
        assert await aredis.scard(f"{base}visits:{kept}") == 25
        assert await aredis.hlen(f"{base}dayspend:{kept}") == 25
    again = await s.sweep()  # idempotent: nothing left to do
    assert not again.removed


async def test_interrupted_sweep_resumes(
    site: str, aredis: aioredis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = Keys("bonusd", site).base
    old = TODAY - dt.timedelta(days=300)
    await write_day(aredis, base, old, 35)
    monkeypatch.setattr(retention, "MAX_BATCHES_PER_SWEEP", 3)  # archive call + 2 batches
    s = sweeper(aredis, site, ManualClock(NOW), tmp_path, batch=10)
    first = await s.sweep()
    assert first.pending
    assert first.removed["day"] == 20
    assert await day_keys(aredis, base, old) == 15
    assert await aredis.scard(f"{base}visits:{old}") == 15  # still names what is left
    monkeypatch.setattr(retention, "MAX_BATCHES_PER_SWEEP", 100)
    second = await s.sweep()
    assert second.removed["day"] == 15
    assert not second.pending
    assert await day_keys(aredis, base, old) == 0
    assert not await aredis.exists(f"{base}visits:{old}", f"{base}dayspend:{old}")


async def test_seen_deadletters_and_tokens(
    site: str, aredis: aioredis.Redis, tmp_path: Path
) -> None:
    keys = Keys("bonusd", site)
    now_ms = int(NOW.timestamp() * 1000)
    hour = now_ms // HOUR_MS
    old_hours = [hour - 7 * 24 - 5, hour - 7 * 24 - 3]
    new_hours = [hour - 7 * 24, hour - 1, hour]
    for h in old_hours + new_hours:
        await aredis.sadd(f"{keys.base}seen:{h}", "e1", "e2")
    seconds, _ = await aredis.time()
    server_ms = int(seconds) * 1000
    for age_days in (45, 31, 29, 1):
        await aredis.xadd(
            keys.deadletters, {"reason": "x"}, id=f"{server_ms - age_days * 86_400_000}-0"
        )
    tokens = TokenStore(aredis, keys)
    gone = await tokens.issue(
        role=Role.DESK,
        name="old desk",
        now=NOW - dt.timedelta(days=200),
        valid_for=dt.timedelta(days=30),
    )
    kept = await tokens.issue(
        role=Role.DESK,
        name="desk",
        now=NOW - dt.timedelta(days=10),
        valid_for=dt.timedelta(days=90),
    )
    for used in (gone, kept):  # a machine token's last use (`usage`)
        await aredis.hset(keys.token_usage, used.principal.token_id, NOW.isoformat())
    report = await sweeper(aredis, site, ManualClock(NOW), tmp_path).sweep()
    assert report.removed["seen"] == 2
    for h in old_hours:
        assert not await aredis.exists(f"{keys.base}seen:{h}")
    for h in new_hours:
        assert await aredis.scard(f"{keys.base}seen:{h}") == 2
    assert report.removed["deadletters"] == 2
    assert await aredis.xlen(keys.deadletters) == 2
    assert report.removed["token"] == 1
    left = await aredis.smembers(f"{keys.base}tokens")
    assert left == {kept.principal.token_id}
    assert not await aredis.exists(f"{keys.base}token:{gone.principal.token_id}")
    assert set(await aredis.hkeys(keys.token_usage)) == {kept.principal.token_id}


async def append_records(store: AuditStore, n: int, start: dt.datetime) -> None:
    for i in range(n):
        at = start + dt.timedelta(days=i)
        await store.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": i})


async def test_audit_archived_never_truncated(
    site: str, aredis: aioredis.Redis, tmp_path: Path
) -> None:
    store = AuditStore(aredis, Keys("bonusd", site))
    await append_records(store, 45, dt.datetime(2026, 9, 1, tzinfo=dt.UTC))  # Sep, Oct
    folder = tmp_path / "archive"
    s = sweeper(aredis, site, ManualClock(NOW), folder, batch=10)
    first = await s.sweep()
    assert first.archived == 45
    assert await aredis.llen(f"{Keys('bonusd', site).base}audit") == 45  # Redis untouched
    archive = AuditArchive(folder)
    assert [p.name for p in archive.segments()] == ["audit-2026-09.jsonl", "audit-2026-10.jsonl"]
    check = archive.verify()
    assert check.ok, str(check)
    assert (check.first_seq, check.last_seq) == (1, 45)
    archived = [r.to_json() for batch in archive.batches() for r in batch]
    assert archived == [r.to_json() for r in await store.records()]
    await append_records(store, 3, dt.datetime(2026, 10, 20, tzinfo=dt.UTC))
    second = await s.sweep()
    assert second.archived == 3  # only what is new
    assert archive.verify().last_seq == 48
    assert (await s.sweep()).archived == 0


async def test_archive_of_another_trail_refused(
    site: str, aredis: aioredis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = AuditStore(aredis, Keys("bonusd", site))
    await append_records(store, 5, dt.datetime(2026, 9, 1, tzinfo=dt.UTC))
    folder = tmp_path / "archive"
    await sweeper(aredis, site, ManualClock(NOW), folder).sweep()
    before = (folder / "audit-2026-09.jsonl").read_text()
    # the trail in Redis is replaced by another one (a different site pointed here)
    await aredis.delete(f"{Keys('bonusd', site).base}audit")
    await append_records(store, 8, dt.datetime(2026, 9, 2, tzinfo=dt.UTC))
    with caplog.at_level(logging.ERROR, logger="bonusd.service.retention"):
        report = await sweeper(aredis, site, ManualClock(NOW), folder).sweep()
    assert report.archived == 0
    assert "not this site's record" in caplog.text
    assert (folder / "audit-2026-09.jsonl").read_text() == before
    assert await aredis.llen(f"{Keys('bonusd', site).base}audit") == 8


def test_tampered_archive_fails_verification(tmp_path: Path) -> None:
    log = AuditLog()
    for i in range(4):
        at = dt.datetime(2026, 9, 1 + i, tzinfo=dt.UTC)
        log.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": i})
    archive = AuditArchive(tmp_path)
    archive.append(log.records)
    assert archive.verify().ok
    path = archive.segments()[0]
    path.write_text(path.read_text().replace('"n":2', '"n":7'))
    check = archive.verify()
    assert not check.ok
    assert check.check.broken_at == 3


def test_archive_files_kept_three_years_then_pruned(tmp_path: Path) -> None:
    log = AuditLog()
    for month in range(1, 13):  # one record a month through 2022, then one in 2026
        at = dt.datetime(2022, month, 15, tzinfo=dt.UTC)
        log.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"m": month})
    log.append(
        at=dt.datetime(2026, 1, 5, tzinfo=dt.UTC), actor="d", kind=Kind.RULE_CHANGE, payload={}
    )
    archive = AuditArchive(tmp_path)
    archive.append(log.records)
    assert archive.prune(dt.date(2025, 1, 31), 1096) == []  # Jan 2022 + 1096 days: kept
    gone = archive.prune(dt.date(2025, 2, 1), 1096)
    assert [p.name for p in gone] == ["audit-2022-01.jsonl"]
    gone = archive.prune(dt.date(2025, 7, 1), 1096)  # Feb..Jun 2022 now past
    assert [p.name for p in gone] == [f"audit-2022-0{m}.jsonl" for m in range(2, 7)]
    check = archive.verify()
    assert check.ok, str(check)
    assert check.first_seq == 7
    archive.prune(dt.date(2040, 1, 1), 1096)
    assert [p.name for p in archive.segments()] == ["audit-2026-01.jsonl"]  # never the newest


async def test_run_sweeps_on_the_clock(site: str, aredis: aioredis.Redis, tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    s = sweeper(aredis, site, clock, tmp_path)
    s.interval = dt.timedelta(hours=1)
    stop = asyncio.Event()
    task = asyncio.create_task(s.run(stop))

    async def until(n: int) -> None:
        async with asyncio.timeout(10):
            while s.sweeps < n:
                await asyncio.sleep(0.01)

    await until(1)  # at start
    base = Keys("bonusd", site).base
    old = TODAY - dt.timedelta(days=300)
    await write_day(aredis, base, old, 3)
    clock.advance(1800)
    await asyncio.sleep(0.05)
    assert s.sweeps == 1  # not before its hour
    assert await day_keys(aredis, base, old) == 3
    clock.advance(1800)
    await until(2)
    assert await day_keys(aredis, base, old) == 0
    stop.set()
    await asyncio.wait_for(task, 5)


def test_audit_verify_command_checks_the_archive(tmp_path: Path) -> None:
    log = AuditLog()
    for i in range(3):
        at = dt.datetime(2026, 9, 1 + i, tzinfo=dt.UTC)
        log.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": i})
    archive = AuditArchive(tmp_path / "archive")
    archive.append(log.records)
    cmd = [sys.executable, "-m", "bonusd", "audit", "verify", "--archive", str(archive.folder)]
    ok = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "archive ok: records 1..3" in ok.stdout
    path = archive.segments()[0]
    path.write_text(path.read_text().replace('"n":1', '"n":9'))
    bad = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert bad.returncode == 1
    assert "broken at seq 2" in bad.stdout
