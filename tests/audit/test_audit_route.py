"""`GET /audit` reads the trail as the daemon checked it (`AuditStore.reads`, the chain
walked a batch at a time): the newest matching records, the filters, the total and the
chain's check are what the whole trail says, also once a record it shows was tampered
with, and the route writes nothing."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest
import redis.asyncio as aioredis

from bonusd.audit import store
from bonusd.audit.chain import AuditRecord, Kind, verify_chain
from bonusd.clocks.clock import ManualClock
from tests.audit.helpers import put_trail
from tests.daemon_helpers import Daemon
from tests.redis_snapshot import differences, snapshot

QUERIES = [
    {"count": "5"},
    {"count": "3", "before": "9"},
    {"kind": "exclusion", "count": "50"},
    {"q": "card-7", "count": "50"},
    {"q": "DESK", "kind": "override", "before": "12", "count": "2"},
    {"count": "5000"},
    {"q": '"kind": "override"', "count": "4"},  # runs across ": ": every record parsed
    {"q": '"card-1', "count": "50"},
    {"q": '{"seq', "count": "3"},  # the first field: not where the stored JSON has it
]


def expected(records: list[AuditRecord], query: dict[str, str]) -> list[int]:
    """The seqs the route answers, newest first, from the whole trail."""
    before, kind = int(query.get("before", 10**9)), query.get("kind")
    needle = query.get("q", "").lower()
    seqs = []
    for rec in reversed(records):
        row = {"seq": rec.seq, "time": rec.time, "actor": rec.actor, "kind": rec.kind}
        row |= {"payload": rec.payload, "hash": rec.hash}
        text = json.dumps(row, ensure_ascii=False).lower()
        if rec.seq < before and (not kind or rec.kind == kind) and needle in text:
            seqs.append(rec.seq)
    return seqs[: int(query["count"])]


@pytest.mark.parametrize("batch", [3, 1000])
async def test_the_trail_read_a_batch_at_a_time_answers_as_the_whole_trail(
    daemon: Daemon,
    clock: ManualClock,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    batch: int,
) -> None:
    monkeypatch.setattr(store, "BATCH", batch)
    audit = daemon.service.audit
    kinds = [Kind.OVERRIDE, Kind.EXCLUSION, Kind.RULE_CHANGE]
    for n in range(20):
        at = clock.now() + dt.timedelta(seconds=n)
        payload = {"card": f"card-{n}", "text": f"entry {n}"}
        await audit.append(at=at, actor="desk", kind=kinds[n % 3], payload=payload)
    records = await audit.records()
    raw = aioredis.Redis.from_url(redis_url)
    before = await snapshot(raw, daemon.service.keys.base)
    for query in QUERIES:
        body = (await daemon.http.get("/audit", params=query)).json()
        assert [r["seq"] for r in body["records"]] == expected(records, query), query
        assert (body["total"], body["ok"]) == (len(records), True)
    tail = {"q": records[9].hash[-8:] + '"}', "count": "5"}  # the last field: `hash` here
    body = (await daemon.http.get("/audit", params=tail)).json()
    assert [r["seq"] for r in body["records"]] == expected(records, tail) == [10]
    time_end = {"q": '0z",', "count": "3"}  # `time` and a comma here, the stored JSON's end
    body = (await daemon.http.get("/audit", params=time_end)).json()
    assert [r["seq"] for r in body["records"]] == expected(records, time_end) == [20, 19, 18]
    assert differences(before, await snapshot(raw, daemon.service.keys.base)) == []
    # an insider edits record 5 without re-hashing: the first answer that shows it says
    # where it broke, and so does every answer after it (the chain is walked again)
    tampered = list(records)
    tampered[4] = dataclasses.replace(records[4], payload={"card": "card-99"})
    await put_trail(raw, daemon.service.keys.audit, tampered)
    body = (await daemon.http.get("/audit", params={"count": "3", "before": "7"})).json()
    assert [r["seq"] for r in body["records"]] == [6, 5, 4]
    assert body["ok"] is False and body["chain"] == str(verify_chain(tampered))
    for query in QUERIES:
        body = (await daemon.http.get("/audit", params=query)).json()
        assert body["ok"] is False and body["chain"] == str(verify_chain(tampered)), query
    assert "broken at record 5" in body["chain"]
    await raw.aclose()
