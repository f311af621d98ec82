"""Backups that restore (docs/deploy.md, "Backups and restores"): a site is backed up with
`bonusd backup` while its daemon runs mid-campaign — play on the floor, kiosk receipts, a
drawn round, a claim presented, tokens issued and revoked, the audit archive written —
then its Redis is lost, `bonusd restore` puts it into an empty redis-server, and a daemon
on that Redis finds standings, the draw, the claim, the tokens and the receipts as they
were at the backup, and the audit chain and its archive intact (`bonusd audit verify`,
`--archive`). What happened after the backup (a second round) is not there: that is the
recovery point. The times are printed (`-s`)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import secrets
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.audit.archive import AuditArchive, site_archive
from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.seedkey import load_seal
from bonusd.infra.keys import Keys
from bonusd.kiosk.receiptkey import load_receipt_key
from bonusd.service.backup import BackupError, take_backup
from bonusd.service.restore import restore_backup
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, LocalRedis, free_port
from tests.browser.helpers import promotions_folder
from tests.daemon_helpers import SAST, Daemon, running
from tests.promotions.helpers import GH, at
from tests.telemetry_helpers import Publisher, event, game

HALFWAY = f"/promotions/{GH}/draws/halfway"
DRAW_TIME = dt.datetime(2026, 11, 7, 19, 0, 1, tzinfo=SAST)
MEMBERS = (
    "card,name,tier,excluded,exclusion_reason\n"
    "1001,Thandi Mokoena,Q,false,\n1002,Johan Botha,J,false,\n1003,Sipho Ndlovu,A,true,self\n"
)


def _env(conf: Settings) -> dict[str, str]:
    """The environment of a `bonusd` command for the site of `conf`."""
    return {
        **os.environ,
        "BONUSD_SITE": conf.site,
        "BONUSD_REDIS_URL": conf.redis_url,
        "BONUSD_SEED_KEY_FILE": str(conf.seed_key_file),
        "BONUSD_RECEIPT_KEY_FILE": str(conf.receipt_key_file),
        "BONUSD_RETENTION_AUDIT_ARCHIVE": str(conf.retention_audit_archive),
        "BONUSD_DIGEST_DIR": str(conf.digest_dir),
    }


async def _bonusd(conf: Settings, *args: str) -> tuple[int, str, float]:
    """`bonusd ARGS` as the operator runs it: exit status, output, wall seconds."""
    began = time.monotonic()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bonusd",
        *args,
        env=_env(conf),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await child.communicate()
    assert child.returncode is not None
    return child.returncode, out.decode(), time.monotonic() - began


async def _receipt(d: Daemon, card: str) -> dict[str, Any]:
    kiosk = await d.client(Role.KIOSK)
    opened = (await kiosk.post("/kiosk/visits", json={"card": card})).json()
    headers = {"X-Kiosk-Visit": opened["visit"]}
    body = {"promotion": GH, "draw": "halfway"}
    printed = await kiosk.post("/kiosk/visit/receipts", json=body, headers=headers)
    assert printed.status_code == 201, printed.text
    await kiosk.aclose()
    return dict(printed.json())


async def _mid_campaign(d: Daemon, clock: ManualClock, pub: Publisher) -> dict[str, Any]:
    """Play, receipts, round 1 drawn and a claim presented; what the desk sees then."""
    imported = await d.http.post(
        "/members/import", content=MEMBERS, headers={"content-type": "text/csv"}
    )
    assert imported.status_code == 200, imported.text
    sent = pub.egm("EGM-1", event("card_in", "1001", at(3, 17, 59)))
    sent += pub.egm("EGM-1", *(game("1001", at(3, 18, i), 25000, 1000) for i in range(5)))
    sent += pub.egm("EGM-1", *(game("1001", at(4, 12, i), 30000, 1500) for i in range(4)))
    sent += pub.egm("EGM-2", *(game("1002", at(6, 20, i), 300000, 10000) for i in range(3)))
    await d.wait_committed(sent)
    clock.set(dt.datetime(2026, 11, 7, 12, 0, tzinfo=SAST))
    receipts = {card: await _receipt(d, card) for card in ("1002", "1001")}
    clock.set(DRAW_TIME)
    desk, crew = await d.client(Role.DESK), await d.client(Role.CREW)
    await d.service.draws.close_bin(GH, "halfway")
    ran = await desk.post(f"{HALFWAY}/run", json={"round": 1})
    assert ran.status_code == 200, ran.text
    claim = ran.json()["claims"][0]
    presented = await crew.post(f"{HALFWAY}/claims/{claim['claim']}/present")
    assert presented.status_code == 200, presented.text
    await d.service.retention.sweep()  # the audit archive gets the trail so far
    revoked = await d.service.tokens.issue(
        role=Role.DESK, name="leaver", now=clock.now(), valid_for=dt.timedelta(days=30)
    )
    await d.service.tokens.revoke(revoked.principal.token_id, clock.now())
    async with asyncio.timeout(10):  # what is due on A's clock has run (or B would run it)
        scheduler = d.service.scheduler
        while not scheduler.caught_up.is_set() or (scheduler.next_at or DRAW_TIME) < clock.now():
            await asyncio.sleep(0.01)
    seen = await _desk_view(desk, d)
    seen.update(
        desk_token=str(desk.headers["Authorization"]),
        revoked_token=f"Bearer {revoked.token}",
        receipts=receipts,
        winner=claim,
    )
    for client in (desk, crew):
        await client.aclose()
    return seen


async def _desk_view(desk: httpx.AsyncClient, d: Daemon) -> dict[str, Any]:
    """Standings, the draw's book, the receipts and the audit trail as the desk reads them."""
    standings = {c: (await desk.get(f"{HALFWAY}/standings/{c}")).json() for c in ("1001", "1002")}
    book = await desk.get(f"{HALFWAY}/book")
    assert book.status_code == 200, book.text
    printed = {n: (await desk.get(f"/receipts/{n}")).json() for n in (1, 2)}
    trail = [r.to_json() for r in await d.service.audit.records()]
    return {"standings": standings, "book": book.json(), "printed": printed, "trail": trail}


async def test_a_site_backed_up_mid_campaign_restores_into_an_empty_redis(
    settings: Settings, broker: LocalMosquitto, site: str, tmp_path: Path
) -> None:
    live = LocalRedis(tmp_path / "redis-a", appendfsync="always")  # server A's
    spare = LocalRedis(tmp_path / "redis-b")  # an empty one, after A's is lost
    with live, spare:
        on_a = settings.model_copy(
            update={"redis_url": live.url, "promotions": promotions_folder(tmp_path, site, GH)}
        )
        clock = ManualClock(at(10, 9))
        pub = Publisher(broker, site)
        async with running(on_a, clock) as d:
            before = await _mid_campaign(d, clock, pub)
            status, out, backup_s = await _bonusd(on_a, "backup", str(tmp_path / "backups"))
            assert status == 0, out
            print(f"\n{out}")
            (folder,) = (tmp_path / "backups").iterdir()
            manifest = json.loads((folder / "manifest.json").read_text())
            # after the backup, and lost with server A: round 2 and more play
            desk = await d.client(Role.DESK)
            assert (await desk.post(f"{HALFWAY}/run", json={"round": 2})).status_code == 200
            await desk.aclose()
            await d.wait_committed(pub.egm("EGM-2", game("1002", at(7, 9), 300000, 10000)) + 6)
        pub.close()
        live.stop()  # server A's Redis is gone

        # server B: the same key files (copied at set-up), no audit archive of its own
        on_b = on_a.model_copy(
            update={
                "redis_url": spare.url,
                "http_port": free_port(),
                "retention_audit_archive": tmp_path / "b" / "audit-archive",
                "digest_dir": tmp_path / "b" / "audit-digests",
            }
        )
        status, out, restore_s = await _bonusd(on_b, "restore", str(folder))
        assert status == 0, out
        print(out)
        archive = Keys(on_b.key_prefix, site)
        archive_folder = on_b.retention_audit_archive / f"{archive.prefix}-{site}"
        verified = await asyncio.gather(  # two operators' commands: both only read
            _bonusd(on_b, "audit", "verify"),
            _bonusd(on_b, "audit", "verify", "--archive", str(archive_folder)),
        )
        for status, out, _ in verified:
            assert status == 0 and ("chain intact" in out or "archive ok" in out), out
            print(out.strip())

        started = time.monotonic()
        async with running(on_b, ManualClock(DRAW_TIME)) as restored:
            start_s = time.monotonic() - started
            await _same_as_at_the_backup(restored, before, manifest)
    print(
        f"backup: {manifest['snapshot']['bytes']:,} bytes in {backup_s:.1f} s ({manifest['seconds']:.2f} s "
        f"of it the work, the rest Python's start); restore: {restore_s:.1f} s; a daemon on the "
        f"restored site serving {start_s:.1f} s later"
    )


async def _same_as_at_the_backup(
    d: Daemon, before: dict[str, Any], manifest: dict[str, Any]
) -> None:
    desk = httpx.AsyncClient(
        base_url=str(d.http.base_url), headers={"Authorization": before["desk_token"]}
    )
    try:
        after = await _desk_view(desk, d)  # the desk's token of before the backup works
        assert after["standings"] == before["standings"]
        assert after["book"] == before["book"]  # round 1 drawn, the claim presented; no round 2
        winner = next(c for c in after["book"]["claims"] if c["claim"] == before["winner"]["claim"])
        assert winner["state"] == "presented"
        assert {c["round"] for c in after["book"]["claims"]} == {1}
        assert after["printed"] == before["printed"]
        assert after["trail"] == before["trail"]  # the audit trail, record for record
        assert len(after["trail"]) == manifest["audit"]["records"]
        revoked = await desk.get("/promotions", headers={"Authorization": before["revoked_token"]})
        assert revoked.status_code == 401  # revoked stays revoked
        # the receipt printed before the backup checks at the claim: same data, same key
        crew = await d.client(Role.CREW)
        card = before["winner"]["card"]
        code = before["receipts"][card]["code"]
        check = f"{HALFWAY}/claims/{before['winner']['claim']}/receipt-check"
        verdict = (await crew.post(check, json={"code": code})).json()
        assert verdict["verdict"] == "valid", verdict
        await crew.aclose()
    finally:
        await desk.aclose()
    assert manifest["archive"]["ok"] and manifest["archive"]["last_seq"] > 0


# -- what a restore refuses, before it writes anything ---------------------------------------


async def _small_site(conf: Settings, records: int) -> None:
    """A site with an audit trail of `records`, a sealed seed and an archive of it all."""
    keys = Keys(conf.key_prefix, conf.site)
    seal = load_seal(conf.seed_key_file)
    load_receipt_key(conf.receipt_key_file)
    client = aioredis.Redis.from_url(conf.redis_url, decode_responses=True)
    store = AuditStore(client, keys)
    try:
        for n in range(records):
            at_n = dt.datetime(2026, 11, 7, 19, n, tzinfo=SAST)
            await store.append(at=at_n, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": n})
        name = keys.seed("p.d", "pooled", "1")
        await client.set(name, seal.seal(name, bytes(32)))
        await client.hset(keys.member("1001"), mapping={"name": "Thandi", "tier": "Q"})
        await client.sadd(keys.pattern("seen").replace("*", "2026110719"), "ev-1", "ev-2")
        archive = AuditArchive(
            site_archive(conf.retention_audit_archive, conf.key_prefix, conf.site)
        )
        archive.append(await store.records())
    finally:
        await client.aclose()


async def test_a_restore_checks_everything_before_it_writes(
    settings: Settings, tmp_path: Path
) -> None:
    with LocalRedis(tmp_path / "a") as source, LocalRedis(tmp_path / "b") as target:
        on_a = settings.model_copy(update={"redis_url": source.url})
        await _small_site(on_a, 3)
        parent = tmp_path / "backups"
        older = parent / f"{on_a.site}-20261101T030000Z"
        older.mkdir(parents=True)
        (older / "manifest.json").write_text("{}")
        second, manifest = await asyncio.to_thread(take_backup, on_a, parent, keep=1)
        assert [p.name for p in parent.iterdir()] == [second.name]  # --keep 1
        assert manifest["audit"]["records"] == 3 and manifest["archive"]["last_seq"] == 3
        on_b = settings.model_copy(
            update={
                "redis_url": target.url,
                "retention_audit_archive": tmp_path / "b-archive",
                "digest_dir": tmp_path / "b-digests",
            }
        )

        async def refused(conf: Settings, *words: str, **options: Any) -> None:
            with pytest.raises(BackupError) as caught:
                await asyncio.to_thread(restore_backup, conf, second, **options)
            for word in words:
                assert word in str(caught.value), caught.value
            check = aioredis.Redis.from_url(target.url)
            assert await check.dbsize() == 1  # only the key put there below: nothing written
            await check.aclose()

        occupied = aioredis.Redis.from_url(target.url)
        await occupied.set(Keys(on_b.key_prefix, on_b.site).stats, "x")
        await refused(on_b, "holds keys of site", "restore only into an empty site")
        await occupied.delete(Keys(on_b.key_prefix, on_b.site).stats)
        await occupied.set("another-site", "x")
        await occupied.aclose()

        other_key = tmp_path / "other-seed-key"
        other_key.write_text(secrets.token_hex(32) + "\n")
        other_key.chmod(0o600)
        await refused(on_b.model_copy(update={"seed_key_file": other_key}), "not the key file")
        missing = tmp_path / "no-such-key"
        await refused(on_b.model_copy(update={"receipt_key_file": missing}), "no key file there")
        # the backup's seeds do not open with another key, even when its fingerprint is unknown
        (second / "manifest.json").write_text(
            json.dumps({**manifest, "key_files": {"seed_key": None, "receipt_key": None}})
        )
        await refused(on_b.model_copy(update={"seed_key_file": other_key}), "do not open")
        (second / "manifest.json").write_text(json.dumps(manifest))

        # this host's archive holds more than the backup (written after it): kept, not mixed
        longer = AuditArchive(site_archive(tmp_path / "b-archive", on_b.key_prefix, on_b.site))
        await _longer_archive(on_a, longer)
        await refused(on_b, "goes to record 4", "before-restore")
        shutil.rmtree(longer.folder)

        snapshot = second / "redis.rdb"
        intact = snapshot.read_bytes()
        snapshot.write_bytes(intact[:-1] + bytes([intact[-1] ^ 1]))
        await refused(on_b, "SHA-256")
        snapshot.write_bytes(intact)

        done = await asyncio.to_thread(restore_backup, on_b, second)
        assert (done.keys, done.audit_records, done.layout) == (
            4,
            3,
            None,
        )  # audit, seed, member, seen
        assert longer.verify().last_seq == 3  # the backup's archive, put back

        # a restore cut short (its marker still there, some keys written) is run again whole
        keys = Keys(on_b.key_prefix, on_b.site)
        cut = aioredis.Redis.from_url(target.url, decode_responses=True)
        await cut.set(keys.layout(), f"restoring {second.name}")
        await cut.delete(keys.member("1001"))
        done = await asyncio.to_thread(restore_backup, on_b, second)
        assert done.keys == 4 and await cut.hget(keys.member("1001"), "name") == "Thandi"
        assert await cut.get(keys.layout()) is None  # the backup's site had none recorded
        await cut.aclose()


async def _longer_archive(conf: Settings, archive: AuditArchive) -> None:
    client = aioredis.Redis.from_url(conf.redis_url, decode_responses=True)
    store = AuditStore(client, Keys(conf.key_prefix, conf.site))
    try:
        at_4 = dt.datetime(2026, 11, 7, 20, 0, tzinfo=SAST)
        await store.append(at=at_4, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": 4})
        archive.append(await store.records())
    finally:
        await client.aclose()


# -- a backup taken while the floor plays is of one instant ----------------------------------


def _stream(broker: LocalMosquitto, site: str, stop: threading.Event) -> list[int]:
    """Publish games (each 100 points) to 20 EGMs until `stop`; [how many]."""
    pub, sent = Publisher(broker, site), [0]
    start = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)
    while not stop.is_set():
        n = sent[0]
        pub.egm(f"EGM-{n % 20}", game(str(1000 + n % 20), start + dt.timedelta(seconds=n), 100, 1))
        sent[0] += 1
    pub.close()
    return sent


async def test_a_backup_taken_while_the_floor_plays_is_of_one_instant(
    settings: Settings, broker: LocalMosquitto, site: str, tmp_path: Path
) -> None:
    """Each batch of events is one script call: its event ids, the counters and the day
    totals change together. A copy made key by key while they change would catch some of
    them without the others; a snapshot never does."""
    with LocalRedis(tmp_path / "a") as live, LocalRedis(tmp_path / "b") as spare:
        on_a = settings.model_copy(update={"redis_url": live.url})
        on_b = on_a.model_copy(update={"redis_url": spare.url})
        clock = ManualClock(dt.datetime(2026, 10, 3, 23, 0, tzinfo=SAST))
        async with running(on_a, clock) as d:
            stop = threading.Event()
            streaming = asyncio.create_task(asyncio.to_thread(_stream, broker, site, stop))
            await d.wait_committed(200)
            _, manifest = await asyncio.to_thread(take_backup, on_a, tmp_path / "backups")
            await d.wait_committed(d.service.ingest.committed + 100)  # still flowing after it
            stop.set()
            (sent,) = await streaming
            await d.wait_committed(sent)
        (folder,) = (tmp_path / "backups").iterdir()
        await asyncio.to_thread(restore_backup, on_b, folder)
        keys = Keys(on_b.key_prefix, site)
        restored = aioredis.Redis.from_url(spare.url, decode_responses=True)
        try:
            applied = int(await restored.hget(keys.stats, "applied") or 0)
            ids = [await restored.scard(k) async for k in restored.scan_iter(keys.pattern("seen"))]
            days = [k async for k in restored.scan_iter(keys.pattern("day"))]
            games = [int(await restored.hget(k, "games") or 0) for k in days]
        finally:
            await restored.aclose()
    print(f"\nsnapshot of {applied} of {sent} events, taken in {manifest['seconds']:.2f} s")
    assert 200 <= applied < sent
    assert sum(ids) == applied == sum(games)
