"""The audit trail in Redis: concurrent appends land on one intact chain, and a modified
record is found by `bonusd audit verify`, which names the broken link."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.audit import store as store_module
from bonusd.audit.chain import Kind, from_jsonl, verify_chain
from bonusd.audit.store import AuditStore
from bonusd.draws.fairness import Pool
from bonusd.infra.keys import Keys
from tests.cli_helpers import Ran, run_main

T0 = dt.datetime(2026, 11, 7, 17, 0, tzinfo=dt.UTC)


async def test_concurrent_appends_make_one_chain(site: str, redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    store = AuditStore(r, Keys("bonusd", site))
    # 40 writers at once on separate connections of the pool: WATCH makes them take turns
    await asyncio.gather(
        *(
            store.append(at=T0, actor=f"desk {n}", kind=Kind.RULE_CHANGE, payload={"n": n})
            for n in range(40)
        )
    )
    records = await store.records()
    assert [x.seq for x in records] == list(range(1, 41))
    assert sorted(int(x.payload["n"]) for x in records) == list(range(40))
    assert (await store.verify()).ok
    await r.aclose()


async def test_verify_and_export_commands(site: str, redis_url: str, tmp_path: Path) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    store = AuditStore(r, Keys("bonusd", site))
    for n in range(5):
        await store.append(
            at=T0 + dt.timedelta(minutes=n), actor="desk", kind=Kind.RULE_CHANGE, payload={"n": n}
        )
    env = {"BONUSD_SITE": site, "BONUSD_REDIS_URL": redis_url}

    async def bonusd(*args: str) -> Ran:  # the command's entry point, in this process
        return await asyncio.to_thread(run_main, env, *args)

    ok = await bonusd("audit", "verify")
    assert ok.returncode == 0, ok.stderr
    assert "chain intact: 5 records" in ok.stdout
    out = tmp_path / "audit.jsonl"
    assert (await bonusd("audit", "export", str(out))).returncode == 0
    exported = from_jsonl(out.read_text())
    assert verify_chain(exported).ok
    assert len(exported) == 5

    # someone edits record 3 in Redis: the payload no longer matches its hash
    key = f"bonusd:{{{site}}}:audit"
    third = json.loads(await r.lindex(key, 2))
    third["payload"]["n"] = 99
    await r.lset(key, 2, json.dumps(third))
    bad = await bonusd("audit", "verify")
    assert bad.returncode == 1
    assert "chain broken at record 3" in bad.stdout
    assert "modified" in bad.stdout
    await r.aclose()


async def test_export_writes_a_batch_at_a_time_and_never_a_half_file(
    site: str, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records and pool files written as the trail is read (two records a batch here); a
    pool file that cannot be read is named and left out; an export that fails leaves no
    file under the name asked for."""
    monkeypatch.setattr(store_module, "BATCH", 2)
    monkeypatch.setattr(store_module, "FIRST_BATCH", 2)
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    store = AuditStore(r, keys)
    pools = [Pool.freeze(f"d.r{n}", "main", {"C1": 1 + n, "C2": 2}) for n in range(3)]
    for n, pool in enumerate(pools):
        await r.set(keys.poolfile(pool.commitment), pool.serialise().decode())
        payload = {"draw_id": pool.draw_id, "pool_commitment": pool.commitment, "round": 1}
        at = T0 + dt.timedelta(minutes=n)
        await store.append(at=at, actor="desk", kind=Kind.POOL, payload=payload)
        await store.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": n})
    await r.set(keys.poolfile(pools[2].commitment), "not a pool file")
    env = {"BONUSD_SITE": site, "BONUSD_REDIS_URL": redis_url}

    async def never_whole(self: AuditStore, start: int = 0, end: int = -1) -> None:
        raise AssertionError("the export read the trail whole")

    monkeypatch.setattr(AuditStore, "records", never_whole)
    out, folder = tmp_path / "audit.jsonl", tmp_path / "pools"
    ran = await asyncio.to_thread(
        run_main, env, "audit", "export", str(out), "--pools", str(folder)
    )
    assert ran.returncode == 0, ran.stderr
    assert [rec.seq for rec in from_jsonl(out.read_text())] == list(range(1, 7))
    assert sorted(os.listdir(folder)) == sorted(f"{p.commitment}.pool" for p in pools[:2])
    assert "wrote 2 pool file(s)" in ran.stdout
    assert f"not exported, unreadable: pool file {keys.poolfile(pools[2].commitment)}" in ran.stderr
    piped = await asyncio.to_thread(run_main, env, "audit", "export", "-")
    assert piped.stdout == out.read_text()
    await r.lset(keys.audit, 4, "{not json")  # a record that cannot be read: the export fails
    again = tmp_path / "again.jsonl"
    failed = await asyncio.to_thread(run_main, env, "audit", "export", str(again))
    assert failed.returncode != 0
    assert sorted(os.listdir(tmp_path)) == ["audit.jsonl", "pools"]  # no half file left
    await r.aclose()
