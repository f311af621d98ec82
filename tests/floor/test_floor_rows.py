"""The `floor-row` index RAPS reads, against a real Redis: kept by the ingest script as
the per-key reference reader sees the floor, rebuilt by `reindex_floor` for data from
before it existed, refreshed by member imports (written in bounded batches), and a
member excluded after a jackpot's freeze passed over when the winner is reselected."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import redis.asyncio as aioredis

from bonusd.draws.fairness import pick_sequence
from bonusd.draws.poolfile import parse_pool
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import FloorEvent
from bonusd.infra.keys import Keys
from bonusd.raps.snapshot import FloorSnapshot
from bonusd.registry.records import Member, Tier
from tests.raps.test_jackpotdesk import CREW, J1, PID, SID, Site, kinds, s, start, store

__all__ = ["s"]  # the fixture, shared with test_jackpotdesk

DAY, NEXT = "2025-10-04", "2025-10-05"
AT = dt.datetime(2025, 10, 5, 10, 0, tzinfo=dt.UTC)  # 12:00 in Johannesburg: gaming day NEXT
AT_MS = int(AT.timestamp() * 1000)

# The floor as the indexes before `floor-row` gave it: each card's session, its place,
# the day's spend and its member row, read key by key (the reference for the index).
REFERENCE = """
local base, day = ARGV[1], ARGV[2]
local out = {}
for _, card in ipairs(redis.call('ZRANGE', base .. 'lastseen', 0, -1)) do
  local v = redis.call('HMGET', base .. 'session:' .. card, 'kind', 'area', 'device', 'seat',
    'last_play')
  local bank = redis.call('HGET', base .. 'device:' .. v[3], 'bank') or ''
  local spend = redis.call('HGET', base .. 'day:' .. day .. ':' .. card, 'spend_cents') or '0'
  local tier, excluded = '', '0'
  local m = redis.call('HGET', base .. 'member-index', card)
  if m then tier, excluded = string.match(m, '^([^|]*)|[^|]*|([^|]*)') end
  out[#out + 1] = table.concat({card, v[1], v[2], v[3], v[4], bank, v[5], spend, tier,
    excluded}, '\\t')
end
return out
"""


def event(
    n: int, kind: str, card: str, device: str, ms: int, *, day: str, wager: int = 0, seat: int = 3
) -> FloorEvent:
    is_table = device.startswith("RL")
    return FloorEvent(
        id=f"e{n}",
        type=kind,
        kind="table" if is_table else "egm",
        device=device,
        card=card,
        ts_ms=ms,
        gaming_day=day,
        area="main",
        seat=seat if is_table else 0,
        wager_cents=wager,
        win_cents=0,
        points=wager // 100,
    )


def floor_store(r: aioredis.Redis, keys: Keys) -> FloorStore:
    return FloorStore(
        r, keys, dedup_ttl_s=86_400, deadletter_maxlen=100, deadletter_payload_bytes=100
    )


async def reference(r: aioredis.Redis, keys: Keys, day: str) -> set[str]:
    script = r.register_script(REFERENCE)
    return set(cast(list[str], await script(keys=[keys.lastseen], args=[keys.base, day])))


def lines(snap: FloorSnapshot) -> set[str]:
    return set(snap.body.splitlines())


async def test_the_ingest_keeps_each_players_row_as_the_reference_reads_the_floor(
    aredis: aioredis.Redis, site: str
) -> None:
    redis = aredis
    keys = Keys("bonusd", site)
    st = floor_store(redis, keys)
    await redis.hset(keys.device("EGM-2"), mapping={"area": "main", "bank": "B2"})
    await st.import_members([Member(card="C1", name="One", tier=Tier("Q"))])
    h = AT_MS - 3_600_000 * 3  # 09:00 local on the 5th: yesterday's gaming day until 08:00
    y = h - 3_600_000 * 2  # 07:00 local: still gaming day DAY
    await st.apply_batch(
        [
            event(1, "game", "C1", "EGM-1", y, day=DAY, wager=5_000),  # yesterday, then moved
            event(2, "card_in", "C1", "EGM-2", h, day=NEXT),
            event(3, "game", "C1", "EGM-2", h + 1_000, day=NEXT, wager=700),
            event(4, "game", "C2", "RL-1", y, day=DAY, wager=90_000, seat=2),  # no play today
            event(5, "card_in", "C3", "EGM-3", h, day=NEXT),  # carded in, never played
            event(6, "game", "C4", "EGM-4", h, day=NEXT, wager=100),
            event(7, "card_out", "C4", "EGM-4", h + 5_000, day=NEXT),  # gone again
        ],
        [],
    )
    rows = cast(list[str], await redis.hvals(keys.floor_row))
    snap = FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))
    assert lines(snap) == await reference(redis, keys, NEXT)
    assert snap.place("C1")["bank"] == "B2"  # moved: the new place
    by_card = {snap.row(i)["card"]: snap.row(i) for i in range(snap.size)}
    assert by_card["C1"]["spend_cents"] == "700" and by_card["C1"]["tier"] == "Q"
    assert by_card["C2"]["spend_cents"] == "0"  # yesterday's 90,000 is not today's spend
    assert sorted(by_card) == ["C1", "C2", "C3"]
    # an import refreshes the tier and exclusion of a member on the floor, atomically
    await st.import_members([Member(card="C1", name="One", tier=Tier("K"), excluded=True)])
    rows = cast(list[str], await redis.hvals(keys.floor_row))
    snap = FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))
    assert lines(snap) == await reference(redis, keys, NEXT)
    assert {snap.row(i)["card"]: snap.row(i)["excluded"] for i in range(snap.size)}["C1"] == "1"
    # the idle sweep takes the row with the session
    assert sorted(await st.sweep_idle(AT, idle_timeout_s=60)) == ["C1", "C2", "C3"]
    assert await redis.hlen(keys.floor_row) == 0


async def test_reindex_builds_the_rows_of_data_from_before_the_index_idempotently(
    aredis: aioredis.Redis, site: str
) -> None:
    redis = aredis
    keys = Keys("bonusd", site)
    st = floor_store(redis, keys)
    await st.import_members([Member(card="C1", name="One", tier=Tier("A"))])
    h = AT_MS - 60_000
    await st.apply_batch(
        [
            event(1, "game", "C1", "EGM-1", h, day=NEXT, wager=12_000),
            event(2, "game", "C2", "RL-1", h, day=NEXT, wager=300, seat=4),
        ],
        [],
    )
    want = await reference(redis, keys, NEXT)
    # as an older release left it: no floor-row, no floor-place, no day on the sessions,
    # no dayspend; a retired floor-lastplay and a row of a card long gone
    async with redis.pipeline(transaction=True) as pipe:
        pipe.delete(keys.floor_row, keys.floor_place, keys.dayspend(NEXT))
        pipe.hdel(keys.session("C1"), "day")
        pipe.hdel(keys.session("C2"), "day")
        pipe.zadd(keys.base + "floor-lastplay", {"C1": h})
        pipe.hset(keys.floor_row, "GONE", "GONE\tegm\tmain\tE\t\t\t1\t1\tQ\t0\t" + NEXT)
        await pipe.execute()
    for _ in range(2):  # the second run changes nothing
        assert await st.reindex_floor(dt.date.fromisoformat(NEXT), batch_size=1) == 2
        rows = cast(list[str], await redis.hvals(keys.floor_row))
        assert lines(FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))) == want
        assert await redis.hget(keys.dayspend(NEXT), "C1") == "12000"
        assert sorted(cast(list[str], await redis.hkeys(keys.floor_place))) == ["C1", "C2"]
        assert not await redis.exists(keys.base + "floor-lastplay")
    # the ingest carries on from the rebuilt rows
    await st.apply_batch([event(3, "game", "C1", "EGM-1", h + 1, day=NEXT, wager=1)], [])
    rows = cast(list[str], await redis.hvals(keys.floor_row))
    assert lines(FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows))) == await reference(
        redis, keys, NEXT
    )


async def test_members_are_imported_in_atomic_batches_and_none_is_lost(
    aredis: aioredis.Redis, site: str
) -> None:
    redis = aredis
    keys = Keys("bonusd", site)
    st = floor_store(redis, keys)
    members = [Member(card=f"M{n:03d}", name=f"Member {n}", tier=Tier("J")) for n in range(53)]
    done: list[int] = []
    multi = 0
    original = redis.pipeline

    def counting(*args: object, **kwargs: object) -> aioredis.client.Pipeline:
        nonlocal multi
        multi += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    redis.pipeline = counting  # type: ignore[method-assign]
    try:
        assert await st.import_members(members, batch_size=10, progress=done.append) == 53
    finally:
        redis.pipeline = original  # type: ignore[method-assign]
    assert done == [10, 10, 10, 10, 10, 3] and multi == 6
    assert await redis.scard(keys.members) == 53 and await redis.hlen(keys.member_index) == 53
    assert (await st.member("M052")) == members[52]


async def test_a_member_excluded_after_the_freeze_is_passed_over_on_reselection(s: Site) -> None:
    await start(s)
    first = await s.desk.run_jackpot(PID, SID, 1)
    pool = parse_pool(
        (await s.redis.get(s.keys.poolfile(first[0].payload["pool_commitment"]))).encode()
    )
    seed = bytes.fromhex(await s.redis.get(s.keys.seed(f"{PID}.{SID}", "raps", "1")))
    stream = [p.card for p in pick_sequence(pool, seed, 3)]
    assert first[1].payload["card"] == stream[0]
    # the next in the stream is excluded at the desk after the pool froze
    await store(s).import_members([Member(card=stream[1], name="N", tier=Tier("Q"), excluded=True)])
    s.clock.advance(60)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    records = await s.desk.act(PID, SID, 1, "not_owner", CREW)
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
