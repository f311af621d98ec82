"""The daemon's in-memory copy of `floor-row` (`floormirror`), which a RAPS pick judges:
its snapshot is the one the whole index gives, its judgement is the file's, it follows
every writer of the index through the change log, and it is read whole again whenever it
may have drifted from Redis."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import replace
from typing import cast

import numpy as np
import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from bonusd.draws.fairness import Pool
from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.raps.mirror import FloorMirror
from bonusd.raps.rules import FloorPlayer, PlayKind, RapsRules
from bonusd.raps.snapshot import FloorSnapshot, SnapshotError, judge, player_line
from bonusd.registry.records import Member, Tier
from tests.floor.helpers import AT, AT_MS, DAY, NEXT, event, floor_store
from tests.raps.helpers import players

CARDS = st.text("0123456789ABé😀", min_size=1, max_size=5)  # code-point order, not ASCII


def row(p: FloorPlayer, day: str) -> str:
    """A `floor-row` line: the snapshot line, then its gaming day."""
    return player_line(p)[:-1] + "\t" + day


def lines(snap: FloorSnapshot) -> set[str]:
    return set(snap.body.splitlines())


def same_judgement(snap: FloorSnapshot, rules: RapsRules, won: frozenset[str]) -> None:
    """The mirror's judgement of `snap` is the one its archived file gives."""
    assert snap.checked is not None
    fast = judge(snap, rules, won)
    slow = judge(FloorSnapshot.parse(snap.serialise()), rules, won)
    assert fast.eligible == slow.eligible
    assert fast.reasons() == slow.reasons()
    assert fast.others == slow.others
    assert fast.ineligible == slow.ineligible
    assert fast.ordered and not slow.ordered
    whole = Pool("p.j1", "raps", 1, fast.eligible, np.ones(len(fast.eligible), dtype=np.int64))
    assert whole.serialise() == fast.pool("p.j1", 1).serialise()  # what `ordered` vouches for


BASE = [
    FloorPlayer(
        card="",
        kind=PlayKind.EGM,
        area=("main", "smoking", "salon")[i % 3],
        device=f"EGM-{i}",
        bank="B1",
        seat=None,
        last_play=AT - dt.timedelta(seconds=7 * i),
        spend_cents=(i * 997) % 30_000,
        tier="KQAJ"[i % 4],
        excluded=i % 11 == 0,
    )
    for i in range(120)
]
CARDS = st.one_of(CARDS, st.integers(0, 119).map(lambda i: f"{i:03d}"))  # or a base card

changes = st.dictionaries(  # one sync's delta: card -> its new row's player and day, or gone
    CARDS,
    st.one_of(st.none(), st.tuples(players, st.sampled_from([NEXT, DAY, ""]))),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(
    deltas=st.lists(changes, min_size=1, max_size=6),
    tiers=st.one_of(st.none(), st.frozensets(st.sampled_from("KQAJ"), min_size=1)),
    won=st.frozensets(CARDS, max_size=4),
)
def test_the_mirrors_snapshot_and_judgement_are_the_whole_indexs(
    deltas: list[dict[str, tuple[FloorPlayer, str] | None]],
    tiers: frozenset[str] | None,
    won: frozenset[str],
) -> None:
    """After any sequence of deltas (rows written, rewritten, removed; rows of other gaming
    days), the mirror's snapshot has the lines `FloorSnapshot.of_rows` makes of the rows
    as they now are, and judging its checked columns gives what judging its file gives."""
    mirror = FloorMirror(aioredis.Redis(), Keys("bonusd", "prop"))  # never connects
    # a floor far larger than each delta, so cards join and leave the kept order one by one
    base = [replace(p, card=f"{i:03d}") for i, p in enumerate(BASE)]
    index = {p.card: row(p, NEXT) for p in base}
    mirror._apply(list(index), list(index.values()))
    for delta in deltas:
        cards, rows = [], []
        for card, new in delta.items():
            text = None if new is None else row(replace(new[0], card=card), new[1])
            cards.append(card)
            rows.append(text)
            if text is None:
                index.pop(card, None)
            else:
                index[card] = text
        mirror._apply(cards, rows)
    assert mirror._sorted.tolist() == sorted(index)  # the kept order, which later deltas build on
    snap = mirror.view(AT, NEXT)
    assert lines(snap) == lines(FloorSnapshot.of_rows(AT, NEXT, "\n".join(index.values())))
    same_judgement(snap, RapsRules(tiers=tiers), won)


# -- against a real Redis -------------------------------------------------------------------


async def whole(r: aioredis.Redis, keys: Keys) -> set[str]:
    """The snapshot lines of `floor-row` read whole (what a pick read before the mirror)."""
    rows = cast(list[str], await r.hvals(keys.floor_row))
    return lines(FloorSnapshot.of_rows(AT, NEXT, "\n".join(rows)))


def parts(r: aioredis.Redis, site: str) -> tuple[Keys, FloorStore, FloorMirror]:
    keys = Keys("bonusd", site)
    return keys, floor_store(r, keys), FloorMirror(r, keys)


async def current(mirror: FloorMirror, r: aioredis.Redis, keys: Keys) -> None:
    """Sync, then the mirror's snapshot is `floor-row` read whole."""
    await mirror.sync()
    assert lines(mirror.view(AT, NEXT)) == await whole(r, keys)


async def test_the_mirror_follows_every_writer_of_the_index_by_its_changes_alone(
    aredis: aioredis.Redis, site: str
) -> None:
    """Card-ins, play, moves, card-outs, the idle sweep, a member import that excludes a
    player and `floor reindex`: after each, one delta sync leaves the mirror equal to the
    index read whole, and it was read whole only once, at the start."""
    r, (keys, st_, mirror) = aredis, parts(aredis, site)
    h = AT_MS - 3_600_000
    await st_.import_members([Member(card=c, name=c, tier=Tier("Q")) for c in ("C1", "C2", "C3")])
    await current(mirror, r, keys)  # empty floor
    await st_.apply_batch(
        [
            event(1, "card_in", "C1", "EGM-1", h, day=NEXT),
            event(2, "game", "C1", "EGM-1", h + 1_000, day=NEXT, wager=20_000),
            event(3, "game", "C2", "RL-1", h + 2_000, day=NEXT, wager=5_000, seat=2),
            event(4, "game", "C3", "EGM-3", h - 20 * 3_600_000, day=DAY, wager=9_000),
        ],
        [],
    )
    await current(mirror, r, keys)
    assert mirror.size == 3
    await st_.apply_batch(
        [
            event(5, "game", "C1", "EGM-2", h + 3_000, day=NEXT, wager=100),  # moved
            event(6, "card_out", "C2", "RL-1", h + 4_000, day=NEXT, seat=2),
        ],
        [],
    )
    await current(mirror, r, keys)
    assert mirror.size == 2
    await st_.import_members([Member(card="C1", name="C1", tier=Tier("K"), excluded=True)])
    await current(mirror, r, keys)
    snap = mirror.view(AT, NEXT)
    assert "C1\tegm\tmain\tEGM-2\t\t\t" in snap.body
    assert judge(snap, RapsRules()).reasons()["excluded"] == 1
    assert await st_.sweep_idle(AT, idle_timeout_s=7_200) == ["C3"]  # idle since yesterday
    await current(mirror, r, keys)
    assert mirror.size == 1
    await r.hdel(keys.floor_place, "C1")  # repaired by the reindex
    assert await st_.reindex_floor(dt.date.fromisoformat(NEXT)) == 1
    await current(mirror, r, keys)
    assert mirror.full_reads == 1


async def test_a_snapshot_keeps_its_floor_while_the_mirror_moves_on(
    aredis: aioredis.Redis, site: str
) -> None:
    """A pick's snapshot shares the mirror's rows until the next sync changes them (copy on
    write): joins, plays, moves and card-outs after it leave it exactly as it was taken,
    its judgement included; the next snapshot shows them."""
    r, (keys, st_, mirror) = aredis, parts(aredis, site)
    h = AT_MS - 60_000
    await st_.apply_batch(
        [event(i, "game", f"C{i}", f"EGM-{i}", h, day=NEXT, wager=100 * i) for i in range(8)], []
    )
    await current(mirror, r, keys)
    taken = mirror.view(AT, NEXT)
    body, sha = taken.body, taken.sha256
    before = judge(taken, RapsRules(min_spend_cents=300))
    assert taken.checked is not None
    spends = taken.checked.spend_cents.copy()
    await st_.apply_batch(
        [
            event(20, "game", "C0", "EGM-0", h + 1_000, day=NEXT, wager=90_000),  # plays
            event(21, "game", "C9", "EGM-9", h + 2_000, day=NEXT, wager=50_000),  # joins
            event(22, "card_out", "C3", "EGM-3", h + 3_000, day=NEXT),  # leaves: C7 moves
            event(23, "game", "C5", "EGM-12", h + 4_000, day=NEXT, wager=100),  # moves
        ],
        [],
    )
    await current(mirror, r, keys)
    assert FloorSnapshot(taken.at_ms, taken.source).body == body  # its own lines, untouched
    assert (taken.checked.spend_cents == spends).all()
    after = judge(taken, RapsRules(min_spend_cents=300))
    assert (after.eligible, after.reasons()) == (before.eligible, before.reasons())
    assert "C3" in before.eligible
    same_judgement(taken, RapsRules(min_spend_cents=300), frozenset())
    assert FloorSnapshot.parse(taken.serialise()).sha256 == sha
    now = mirror.view(AT, NEXT)
    assert "C3\t" not in now.body and "C9\t" in now.body and "EGM-12" in now.body


async def test_a_mirror_that_may_have_drifted_is_read_whole(
    aredis: aioredis.Redis, site: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Older than the log keeps, Redis's sequence gone backwards, a write that bypassed
    the log: each time the next sync reads the index whole and the mirror is right."""
    r, (keys, st_, mirror) = aredis, parts(aredis, site)
    h = AT_MS - 60_000
    await st_.apply_batch(
        [event(i, "game", f"C{i}", f"EGM-{i}", h, day=NEXT) for i in range(5)], []
    )
    await current(mirror, r, keys)
    assert mirror.full_reads == 1
    seq = int(await r.get(keys.base + "floor-row-seq"))
    await r.set(keys.base + "floor-row-low", seq + 1)  # the log was trimmed past the mirror
    await st_.apply_batch([event(9, "game", "C9", "EGM-9", h, day=NEXT)], [])
    await current(mirror, r, keys)
    assert mirror.full_reads == 2
    await r.delete(keys.base + "floor-row-seq", keys.base + "floor-row-low")  # Redis emptied
    await current(mirror, r, keys)
    assert mirror.full_reads == 3
    await r.hdel(keys.floor_row, "C1")  # not through a script: no log
    with caplog.at_level(logging.WARNING, logger="bonusd.raps.mirror"):
        await current(mirror, r, keys)
    assert mirror.full_reads == 4
    assert "changed without its change log" in caplog.text


async def test_a_damaged_line_fails_the_sync_until_the_index_is_rebuilt(
    aredis: aioredis.Redis, site: str
) -> None:
    r, (keys, st_, mirror) = aredis, parts(aredis, site)
    await st_.apply_batch([event(1, "game", "C1", "EGM-1", AT_MS - 60_000, day=NEXT)], [])
    await current(mirror, r, keys)
    seq = await r.incr(keys.base + "floor-row-seq")
    await r.hset(keys.floor_row, "C1", "C1\tegm\tmain")  # too few fields, logged
    await r.zadd(keys.base + "floor-row-log", {"C1": seq})
    with pytest.raises(SnapshotError, match="floor reindex"):
        await mirror.sync()
    assert mirror.seq is None  # nothing kept of a floor that may be wrong
    assert await st_.reindex_floor(dt.date.fromisoformat(NEXT)) == 1
    await current(mirror, r, keys)


@pytest.mark.parametrize("card", ["C:1", "C=1", "C 1", "C ", " C", "C\r", "C\u00a0", "C\x1c"])
async def test_a_card_no_pool_file_can_hold_fails_the_sync(
    aredis: aioredis.Redis, site: str, card: str
) -> None:
    """A pick's pool takes the mirror's cards without checking them again (`Pool(...,
    ordered=True)`), so the mirror refuses a card a pool file cannot hold as it arrives."""
    r, (keys, st_, mirror) = aredis, parts(aredis, site)
    await st_.apply_batch([event(1, "game", "C1", "EGM-1", AT_MS - 60_000, day=NEXT)], [])
    await current(mirror, r, keys)
    good = cast(str, await r.hget(keys.floor_row, "C1"))
    seq = await r.incr(keys.base + "floor-row-seq")
    await r.hset(keys.floor_row, card, card + good.removeprefix("C1"))
    await r.zadd(keys.base + "floor-row-log", {card: seq})
    with pytest.raises(SnapshotError, match=r"holds a space, ':' or '='.*floor reindex"):
        await mirror.sync()
    assert mirror.seq is None


async def test_the_log_keeps_each_card_once_and_drops_what_is_too_old(
    aredis: aioredis.Redis, site: str
) -> None:
    r, (keys, st_, _) = aredis, parts(aredis, site)
    log = keys.base + "floor-row-log"
    for n in range(3):  # three batches of the same two players: two entries
        await st_.apply_batch(
            [
                event(10 * n + i, "game", f"C{i}", f"EGM-{i}", AT_MS - 9_000 + n, day=NEXT)
                for i in (1, 2)
            ],
            [],
        )
    assert await r.zrange(log, 0, -1, withscores=True) == [("C1", 3.0), ("C2", 3.0)]
    await r.zadd(log, {"OLD": 500})
    await r.set(keys.base + "floor-row-seq", 40_999)  # the next write is the 41,000th
    await st_.apply_batch([event(99, "game", "C1", "EGM-1", AT_MS - 1_000, day=NEXT)], [])
    assert await r.get(keys.base + "floor-row-low") == "1000"
    assert await r.zrange(log, 0, -1) == ["C1"]  # entries 40,000 writes old or more are gone


async def test_the_log_keeps_at_most_twice_the_floor_in_cards(
    aredis: aioredis.Redis, site: str
) -> None:
    """A quiet day's few large calls would keep every card seen that day: past twice the
    floor (at least 10,000 cards) the oldest changes go, and a mirror older than them
    reads the floor whole."""
    r, (keys, st_, mirror) = aredis, parts(aredis, site)
    log = keys.base + "floor-row-log"
    await st_.apply_batch([event(1, "game", "C1", "EGM-1", AT_MS - 9_000, day=NEXT)], [])
    await mirror.sync()
    gone = {f"G{n:05d}": n for n in range(2, 11_002)}  # 11,000 cards that came and went
    await r.zadd(log, gone)
    await r.set(keys.base + "floor-row-seq", 11_007)  # the next call is the 11,008th: 64 x 172
    await st_.apply_batch([event(2, "game", "C1", "EGM-1", AT_MS - 8_000, day=NEXT)], [])
    assert await r.get(keys.base + "floor-row-low") == "1002"  # 11,001 logged: 1,001 went
    assert await r.zcard(log) == 10_000
    assert await r.zscore(log, "G01002") is None and await r.zscore(log, "G01003") == 1_003
    reads = mirror.full_reads
    await mirror.sync()  # it held seq 1, older than the log now reaches: read whole
    assert mirror.full_reads == reads + 1 and mirror.size == 1


async def test_follow_keeps_the_mirror_current_until_stopped(
    aredis: aioredis.Redis, site: str
) -> None:
    r, (keys, st_, mirror) = aredis, parts(aredis, site)
    stop = asyncio.Event()
    task = asyncio.create_task(mirror.follow(stop, 0.01))
    await st_.apply_batch([event(1, "game", "C1", "EGM-1", AT_MS - 60_000, day=NEXT)], [])
    want = int(await r.get(keys.base + "floor-row-seq"))
    async with asyncio.timeout(10):
        while mirror.seq != want:
            await asyncio.sleep(0.01)
    assert mirror.size == 1
    stop.set()
    await asyncio.wait_for(task, 5)


async def test_follow_leaves_the_floor_alone_where_no_raps_session_wants_it(
    aredis: aioredis.Redis, site: str
) -> None:
    _, st_, mirror = parts(aredis, site)
    await st_.apply_batch([event(1, "game", "C1", "EGM-1", AT_MS - 60_000, day=NEXT)], [])
    asked = asyncio.Event()
    count = 0

    def wanted() -> bool:
        nonlocal count
        count += 1
        if count == 5:
            asked.set()
        return False

    stop = asyncio.Event()
    task = asyncio.create_task(mirror.follow(stop, 0.01, wanted))
    await asyncio.wait_for(asked.wait(), 10)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert mirror.seq is None
    assert mirror.full_reads == 0
