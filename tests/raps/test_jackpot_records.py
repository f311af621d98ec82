"""The RAPS RAPS runner's records against a real Redis: tampering found by the verifier,
the floor snapshot the ingest keeps, a missed jackpot, random jackpot times."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bonusd.draws.book import LedgerError
from bonusd.errors import BonusdError
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import FloorEvent
from bonusd.promotions import Action, load_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.timetable import promotion_timetable
from bonusd.raps.snapshot import FloorSnapshot
from tests.raps.helpers import (
    CREW,
    FESTA,
    J1,
    PID,
    SID,
    Site,
    fifty,
    kinds,
    local,
    make_site,
    start,
)


async def test_tampering_is_found(s: Site) -> None:
    await start(s)
    records = await s.desk.run_jackpot(PID, SID, 1)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 1, "verify_at_device", CREW)
    _, result = await s.desk.verify(J1)
    assert all(v.ok for v in result.values())
    # a pool file changed in Redis
    key = s.keys.poolfile(records[0].payload["pool_commitment"])
    original = await s.redis.get(key)
    await s.redis.set(key, original.replace("E00:1", "E00:2"))
    _, result = await s.desk.verify(J1)
    assert not all(v.ok for v in result.values())
    await s.redis.set(key, original)
    # the archived floor snapshot changed: an ineligible card made eligible, or any edit
    floor_key = s.keys.raps_floor(J1)
    ref = await s.redis.hget(floor_key, "1")  # the attempt names its file: file:{sha256}
    assert ref == "file:" + records[0].payload["floor_sha256"]
    snap = await s.redis.hget(floor_key, ref)
    body = snap.partition("\n")[2]
    row = next(r for r in body.split("\n") if r.startswith("X0\t"))
    await s.redis.hset(floor_key, ref, snap.replace(row, row[:-1] + "0"))
    _, result = await s.desk.verify(J1)
    assert "floor: expected " + records[0].payload["floor_sha256"] in str(result[("raps", 1)])
    await s.redis.hset(floor_key, ref, snap)
    _, result = await s.desk.verify(J1)
    assert all(v.ok for v in result.values())
    # the revealed seed changed in the audit trail
    audit = s.keys.base + "audit"
    rows = await s.redis.lrange(audit, 0, -1)
    n = next(i for i, row in enumerate(rows) if json.loads(row)["kind"] == "seed_reveal")
    row = json.loads(rows[n])
    row["payload"]["seed"] = "00" * 32
    await s.redis.lset(audit, n, json.dumps(row))
    chain, result = await s.desk.verify(J1)
    assert chain.startswith("chain broken") and not all(v.ok for v in result.values())
    # a ledger record changed: the rebuilt book refuses it
    ledger = s.desk.audit.ledger_key(f"{PID}.{SID}")
    rows = await s.redis.lrange(ledger, 0, -1)
    n = next(i for i, row in enumerate(rows) if json.loads(row)["kind"] == "pick")
    row = json.loads(rows[n])
    row["payload"]["card"] = "E99"
    await s.redis.lset(ledger, n, json.dumps(row))
    s.desk._books.clear()
    with pytest.raises(LedgerError):
        await s.desk.book(PID, SID)


async def test_the_ingest_keeps_the_floor_snapshot(s: Site) -> None:
    """The snapshot reads what the ingest script writes: sessions through the real store,
    a move, a card-out and an idle sweep each reflected, 2,000 players read whole."""
    at = local(14, 30)
    day = "2025-10-04"
    base_ms = int(at.timestamp() * 1000)
    store = FloorStore(
        s.redis, s.keys, dedup_ttl_s=3600, deadletter_maxlen=100, deadletter_payload_bytes=100
    )
    await s.redis.hset(s.keys.device("EGM-00007"), mapping={"area": "main", "bank": "B7"})

    def game(n: int, card: str, device: str, ms: int, wager: int) -> FloorEvent:
        return FloorEvent(
            id=f"g{n}",
            type="game",
            kind="egm",
            device=device,
            card=card,
            ts_ms=ms,
            gaming_day=day,
            area="main",
            seat=0,
            wager_cents=wager,
            win_cents=0,
            points=1,
        )

    events = [game(n, f"F{n:05d}", f"EGM-{n:05d}", base_ms - 60_000, 20_000) for n in range(2_000)]
    await store.apply_batch(events, [])
    await store.apply_batch([game(9_000, "F00001", "EGM-00001", base_ms - 30_000, 500)], [])
    out = FloorEvent(
        id="o1",
        type="card_out",
        kind="egm",
        device="EGM-00002",
        card="F00002",
        ts_ms=base_ms - 20_000,
        gaming_day=day,
        area="main",
        seat=0,
        wager_cents=0,
        win_cents=0,
        points=0,
    )
    await store.apply_batch([out], [])
    floor = await s.desk.snapshot(at)
    assert floor.size == 1_999 and "F00002" not in floor.columns[0]
    rows = {r["card"]: r for r in (floor.row(i) for i in range(floor.size))}
    assert rows["F00007"]["bank"] == "B7" and rows["F00008"]["bank"] == ""
    assert rows["F00001"]["spend_cents"] == "20500"
    assert rows["F00001"]["last_play_ms"] == str(base_ms - 30_000)
    assert rows["F00000"]["tier"] == "" and rows["F00000"]["excluded"] == "0"
    assert FloorSnapshot.parse(floor.serialise()) == floor
    swept = await store.sweep_idle(at, idle_timeout_s=45, limit=5_000)
    assert len(swept) == 1_998
    assert (await s.desk.snapshot(at)).columns[0] == ["F00001"]


async def test_a_missed_jackpot_is_recorded_once_and_the_desk_can_still_run_it(s: Site) -> None:
    await start(s)
    s.clock.set(local(15, 0))
    records = await s.desk.missed(PID, SID, 1, dt.timedelta(minutes=30))
    assert kinds(records) == ["exception"] and records[0].payload["event"] == "missed"
    assert "daemon was down for 0:30:00" in records[0].payload["note"]
    assert await s.desk.missed(PID, SID, 1, dt.timedelta(minutes=31)) == []
    s.desk._books.clear()  # a restart replays the record
    assert (await s.desk.book(PID, SID)).jackpot(1).exceptions == [{"event": "missed"}]
    await fifty(s, s.clock.now())  # the floor as the desk finds it
    assert kinds(await s.desk.run_jackpot(PID, SID, 1)) == ["pool", "pick", "claim"]
    assert await s.desk.missed(PID, SID, 1, dt.timedelta(minutes=32)) == []


async def test_random_jackpot_times_are_the_schedulers(
    site: str, redis_url: str, tmp_path: Path
) -> None:
    one = await make_site(site, redis_url, tmp_path, "skip")
    try:
        path = tmp_path / FESTA.name
        text = path.read_text(encoding="utf-8").replace(
            'times = { every_minutes = 30, first = "14:30", last = "21:00" }',
            "times = { random = 5 }",
        )
        path.write_text(text, encoding="utf-8")
        promotion = load_promotion(path)
        one.desk.promotions = PromotionStore(one.redis, one.keys, [promotion])
        with pytest.raises(BonusdError, match="random times that are not loaded"):
            one.desk.plan(PID, SID)
        plan = await one.desk.load_plan(PID, SID)
        actions = await promotion_timetable(one.redis, one.keys, promotion)
        mine = [a.at for a in actions if a.action is Action.JACKPOT and a.ids[1] == SID]
        assert plan.times == tuple(mine) and len(plan.times) == 5
        assert local(14) < plan.times[0] < plan.times[-1] <= local(21)
        commits = await one.desk.commit_seeds(PID, SID)
        assert kinds(commits) == ["commitment"] * 5
    finally:
        await one.redis.aclose()


async def test_a_run_jackpot_keeps_its_floor_without_the_mirrors_columns(s: Site) -> None:
    """The checked columns a pick judged (~2 MB at 20,000 players) are not kept with the
    book for the rest of the session: the snapshot's lines are."""
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)
    floor = (await s.desk.book(PID, SID)).jackpot(1).floor
    assert floor is not None
    assert floor.body
    assert floor.checked is None
    assert all(f.checked is None for f in s.desk._floors.values())
