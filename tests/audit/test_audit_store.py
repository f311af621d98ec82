"""The audit trail in Redis: concurrent appends land on one intact chain, and a modified
record is found by `bonusd audit verify`, which names the broken link."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import redis.asyncio as aioredis

from bonusd.audit.chain import Kind, from_jsonl, verify_chain
from bonusd.audit.store import AuditStore
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
