"""The outside anchor of the audit trail, on a real Redis: the digest a compliance officer
signs (`bonusd audit digest`) still matches an untouched chain and catches one an
insider re-hashed (`bonusd audit check-digest`, exit 1 naming the record and both
hashes) though `bonusd audit verify` passes it; the leader writes each finished day's
digest file once and never overwrites it; `GET /audit/digest` writes nothing."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import stat
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.audit import archive, store
from bonusd.audit.anchor import DIGEST_SUBJECT, DayAnchor, DigestFolder, Written
from bonusd.audit.chain import Kind, from_jsonl, to_jsonl
from bonusd.audit.digest import day_digest, digest_text, read_digest
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys
from tests.audit.helpers import CALENDAR, local, put_trail, rehashed, trail
from tests.cli_helpers import Ran, run_main
from tests.daemon_helpers import Daemon
from tests.redis_snapshot import differences, snapshot

DAY = dt.date(2026, 10, 3)


async def bonusd(
    site: str, redis_url: str, *args: str, clock: str = "2026-10-05T12:00:00+02:00"
) -> Ran:
    """The `bonusd` command on `site`, its own simulated clock starting at `clock` (as
    tests.audit.helpers.bonusd runs it, without a process start-up per command)."""
    env = {
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_CLOCK_START": clock,
        "BONUSD_LOG_LEVEL": "WARNING",
    }
    return await asyncio.to_thread(run_main, env, *args)


async def write_day(r: aioredis.Redis, site: str, count: int) -> None:
    """`count` records through gaming day 3 Oct 2026, and one of 4 Oct (before the time
    its digest is due)."""
    step = dt.timedelta(hours=23) / count
    instants = [local(3, 8, 30) + step * n for n in range(count)] + [local(4, 8, 1)]
    await put_trail(r, Keys("bonusd", site).audit, trail(instants))


async def signed_day(aredis: aioredis.Redis, site: str, redis_url: str, folder: Path) -> Path:
    """Six records through 3 Oct 2026 and that day's digest, printed and kept as the
    compliance officer signs it (its file in `folder`)."""
    await write_day(aredis, site, 6)
    printed = await bonusd(site, redis_url, "audit", "digest", "--day", "2026-10-03")
    assert printed.returncode == 0, printed.stderr
    signed = folder / "digest-2026-10-03.txt"
    signed.write_text(printed.stdout, encoding="utf-8")
    return signed


@pytest.mark.usefixtures("trail_batch")
async def test_a_rehashed_chain_passes_verify_but_fails_check_digest(
    aredis: aioredis.Redis, site: str, redis_url: str, tmp_path: Path
) -> None:
    signed = await signed_day(aredis, site, redis_url, tmp_path)
    digest = read_digest(signed.read_text(encoding="utf-8"))
    assert (digest.site, digest.day, digest.last_seq, digest.records) == (site, DAY, 6, 6)
    before = tmp_path / "before.jsonl"
    assert (await bonusd(site, redis_url, "audit", "export", str(before))).returncode == 0

    untouched = await bonusd(site, redis_url, "audit", "check-digest", str(signed))
    assert untouched.returncode == 0, untouched.stdout + untouched.stderr
    assert f"record 6 still has the digest's hash {digest.head_hash}" in untouched.stdout

    # the insider: record 3 gets another payload, it and every later record re-hashed
    key = Keys("bonusd", site).audit
    records = from_jsonl("\n".join(await aredis.lrange(key, 0, -1)))
    forged = rehashed(records, 3, {"n": 99, "note": "another winner"})
    await put_trail(aredis, key, forged)
    verified = await bonusd(site, redis_url, "audit", "verify")
    assert verified.returncode == 0 and "chain intact: 7 records" in verified.stdout

    caught = await bonusd(site, redis_url, "audit", "check-digest", str(signed))
    assert caught.returncode == 1, caught.stdout + caught.stderr
    assert (
        f"record 6 was rewritten: the digest says {digest.head_hash}, "
        f"the chain now holds {forged[5].hash}"
    ) in caught.stdout
    assert "1 of 1 digest(s) do not match the chain" in caught.stdout
    # an export taken before still matches; one taken now does not
    after = tmp_path / "after.jsonl"
    assert (await bonusd(site, redis_url, "audit", "export", str(after))).returncode == 0
    offline = await bonusd(
        site, redis_url, "audit", "check-digest", str(signed), "--from", str(after)
    )
    assert offline.returncode == 1 and "record 6 was rewritten" in offline.stdout
    kept = await bonusd(
        site, redis_url, "audit", "check-digest", str(signed), "--from", str(before)
    )
    assert kept.returncode == 0, kept.stdout


@pytest.mark.usefixtures("trail_batch")
async def test_check_digest_against_an_archive_read_a_batch_at_a_time(
    aredis: aioredis.Redis, site: str, redis_url: str, tmp_path: Path
) -> None:
    signed = await signed_day(aredis, site, redis_url, tmp_path)
    records = from_jsonl("\n".join(await aredis.lrange(Keys("bonusd", site).audit, 0, -1)))
    kept, forged, late = (tmp_path / name for name in ("kept", "forged", "late"))
    archive.AuditArchive(kept).append(records)
    archive.AuditArchive(forged).append(rehashed(records, 3, {"n": 99}))
    late.mkdir()  # an archive whose records 1 and 2 were deleted past retention
    (late / "audit-2026-10.jsonl").write_text(to_jsonl(records[2:]), encoding="utf-8")
    for folder, code, said in (
        (kept, 0, "record 6 still has the digest's hash"),
        (late, 0, "record 6 still has the digest's hash"),
        (forged, 1, "record 6 was rewritten"),
    ):
        got = await bonusd(
            site, redis_url, "audit", "check-digest", str(signed), "--archive", str(folder)
        )
        assert (got.returncode, said in got.stdout) == (code, True), got.stdout + got.stderr
    (kept / "audit-2026-10.jsonl").write_bytes(b"\xff\xfe not UTF-8\n")
    broken = await bonusd(
        site, redis_url, "audit", "check-digest", str(signed), "--archive", str(kept)
    )
    assert broken.returncode != 0 and "line 1 is not UTF-8" in broken.stdout + broken.stderr


async def test_check_digest_refuses_another_sites_digest_and_an_unfinished_day(
    aredis: aioredis.Redis, site: str, redis_url: str, tmp_path: Path
) -> None:
    await write_day(aredis, site, 2)
    other = day_digest(trail([local(3, 9)]), site="elsewhere", day=DAY, calendar=CALENDAR)
    file = tmp_path / "other.txt"
    file.write_text(digest_text(other), encoding="utf-8")
    refused = await bonusd(site, redis_url, "audit", "check-digest", str(file))
    assert refused.returncode == 2 and "a digest of site elsewhere" in refused.stderr
    early = await bonusd(
        site, redis_url, "audit", "digest", "--day", "2026-10-04", clock="2026-10-05T08:01:00+02:00"
    )
    assert early.returncode == 2 and "gaming day 2026-10-04 is not over" in early.stderr
    default = await bonusd(site, redis_url, "audit", "digest", clock="2026-10-05T08:01:00+02:00")
    assert default.returncode == 0 and "gaming day:         2026-10-03" in default.stdout


@pytest.mark.usefixtures("trail_batch")
async def test_the_digest_commands_print_bounded_output(
    aredis: aioredis.Redis, site: str, redis_url: str, tmp_path: Path
) -> None:
    await write_day(aredis, site, 3000)
    printed = await bonusd(site, redis_url, "audit", "digest", "--day", "2026-10-03")
    assert printed.returncode == 0, printed.stderr
    assert len(printed.stdout.splitlines()) <= 16 and len(printed.stdout) < 1024
    assert read_digest(printed.stdout).records == 3000
    as_json = await bonusd(site, redis_url, "audit", "digest", "--day", "2026-10-03", "--json")
    assert len(as_json.stdout.splitlines()) == 1 and len(as_json.stdout) < 1024
    files = []
    for day in ("2026-10-02", "2026-10-03", "2026-10-04"):
        files.append(tmp_path / f"{day}.txt")
        text = (await bonusd(site, redis_url, "audit", "digest", "--day", day)).stdout
        files[-1].write_text(text, encoding="utf-8")
    checked = await bonusd(site, redis_url, "audit", "check-digest", *map(str, files))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert len(checked.stdout.splitlines()) == 3 and len(checked.stdout) < 3 * 400


def test_a_digest_file_is_written_once_and_never_overwritten(tmp_path: Path) -> None:
    folder = DigestFolder(tmp_path / "digests")
    assert folder.write(DAY, "the digest\n") is Written.WRITTEN
    path = folder.path(DAY)
    assert path.name == "digest-2026-10-03.txt"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert folder.write(DAY, "the digest\n") is Written.PRESENT
    assert folder.write(DAY, "a rewritten digest\n") is Written.REFUSED
    assert path.read_text() == "the digest\n"
    # a file cut short by a crash is completed by appending, not rewritten
    cut = folder.path(DAY + dt.timedelta(days=1))
    cut.write_text("the dig")
    assert folder.write(DAY + dt.timedelta(days=1), "the digest\n") is Written.COMPLETED
    assert cut.read_text() == "the digest\n"


@pytest.fixture(params=[None, 2], ids=["whole", "two-at-a-time"])
def trail_batch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trail, an export or an archive read whole, or two records at a time
    (`AuditStore.batches`, `jsonl_batches`)."""
    if request.param:
        monkeypatch.setattr(store, "BATCH", request.param)
        monkeypatch.setattr(archive, "BATCH", request.param)


@pytest.mark.usefixtures("trail_batch")
async def test_the_leader_anchors_each_finished_day_once(
    aredis: aioredis.Redis, site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = Keys("bonusd", site)
    await write_day(aredis, site, 4)
    audit = AuditStore(aredis, keys)
    clock = ManualClock(local(4, 8, 4))
    folder = DigestFolder(tmp_path / "digests")

    def anchor() -> DayAnchor:
        return DayAnchor(audit=audit, clock=clock, calendar=CALENDAR, site=site, folder=folder)

    assert await anchor().catch_up() == []  # 3 Oct is not settled yet
    clock.set(local(4, 8, 5))
    [done] = await anchor().catch_up()
    records = await audit.records()
    expected = day_digest(records, site=site, day=DAY, calendar=CALENDAR)
    assert done.digest == expected and done.file is Written.WRITTEN
    assert folder.path(DAY).read_text() == digest_text(expected)
    assert (records[-1].seq, records[-1].kind) == (done.seq, Kind.DIGEST)
    assert records[-1].payload == expected.payload()
    assert await anchor().catch_up() == []  # once
    # a day later, two daemons at once (a leader handing over): one record, one file
    clock.set(local(5, 9))
    results = await asyncio.gather(anchor().catch_up(), anchor().catch_up())
    assert sorted(len(r) for r in results) == [0, 1]
    assert [digest_day(rec.payload) for rec in await audit.ledger(DIGEST_SUBJECT)] == [
        "2026-10-03",
        "2026-10-04",
    ]
    assert (await audit.verify()).ok
    # the next day's digest chains over the day's digest record
    assert read_digest(folder.path(DAY + dt.timedelta(days=1)).read_text()).last_seq == done.seq
    # a different digest of 5 Oct already there (another trail's): kept, said loudly
    folder.path(dt.date(2026, 10, 5)).write_text("someone else's digest\n")
    clock.set(local(6, 9))
    with caplog.at_level(logging.ERROR):
        [refused] = await anchor().catch_up()
    assert refused.file is Written.REFUSED
    assert folder.path(dt.date(2026, 10, 5)).read_text() == "someone else's digest\n"
    assert "holds a different digest, not overwritten" in caplog.text


def digest_day(payload: dict[str, object]) -> object:
    return payload["day"]


async def test_the_daemon_writes_the_digest_and_its_get_writes_nothing(
    daemon: Daemon, clock: ManualClock, redis_url: str
) -> None:
    service = daemon.service
    for minutes in (0, 90, 600):
        at = clock.now() + dt.timedelta(minutes=minutes)
        await service.audit.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={})
    clock.set(local(4, 8, 6))  # 3 Oct closed and settled: the leader's sweeper wakes
    path = service.settings.digest_dir / f"bonusd-{service.settings.site}" / "digest-2026-10-03.txt"
    async with asyncio.timeout(15):
        while not path.exists() or not (await service.audit.ledger(DIGEST_SUBJECT)):
            await asyncio.sleep(0.05)
    written = path.read_text(encoding="utf-8")
    desk, crew = await daemon.client(Role.DESK), await daemon.client(Role.CREW)
    base = service.keys.base
    raw = aioredis.Redis.from_url(redis_url)  # DUMP answers bytes
    async with asyncio.timeout(15):  # the SMS notices have read the digest record too
        while await service.notices.outbox.position() < 4:
            await asyncio.sleep(0.05)
    before = await snapshot(raw, base)
    try:
        for http in (daemon.http, desk):
            answer = await http.get("/audit/digest")
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["text"] == written  # the printout, the file: one digest
            assert (body["day"], body["last_seq"], body["records"]) == ("2026-10-03", 3, 3)
            assert body["recorded_seq"] == 4 and body["intact"] is True
            again = await http.get("/audit/digest", params={"day": "2026-10-03"})
            assert again.json() == body
        assert (await crew.get("/audit/digest")).status_code == 403
        for day in ("2026-10-04", "9999-12-31"):
            refused = await desk.get("/audit/digest", params={"day": day})
            assert refused.status_code == 409 and "not over" in refused.json()["detail"]
    finally:
        await desk.aclose()
        await crew.aclose()
        after = await snapshot(raw, base)
        await raw.aclose()
    assert differences(before, after) == []
