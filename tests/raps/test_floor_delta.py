"""A RAPS floor archived as the difference from a base (docs/fairness.md section 10, form
2): the floor a difference rebuilds is the one the mirror judged, whatever changed since
the base; a pick after `prepare_floor` archives a difference that verifies live and from
an export; a missing, altered or foreign base, and differences off the form, are refused."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from bonusd.cli.draws import BASE, check_floors, live_floors, offline_floors, write_pools
from bonusd.draws.fairness import Pool
from bonusd.draws.rounds import RoundKey
from bonusd.draws.verify import Mismatch, Verification
from bonusd.infra.keys import Keys
from bonusd.raps.floorarchive import FILE_REF, archived_floor
from bonusd.raps.floordelta import DeltaError, FloorDelta, apply_delta
from bonusd.raps.mirror import FloorMirror
from bonusd.raps.rules import FloorPlayer, RapsRules
from bonusd.raps.snapshot import FloorSnapshot, SnapshotError, judge, player_line
from bonusd.settings import Settings
from tests.floor.helpers import AT, DAY, NEXT
from tests.raps.helpers import (
    J1,
    PID,
    SID,
    Site,
    kinds,
    local,
    players,
    seat,
    start,
    store,
)

CARDS = st.integers(0, 59).map(lambda i: f"{i:03d}")


def row(p: FloorPlayer, day: str) -> str:
    return player_line(p)[:-1] + "\t" + day


def lines(snap: FloorSnapshot) -> set[str]:
    return set(snap.body.splitlines())


changes = st.dictionaries(  # one sync's rows: card -> its new row's player and day, or gone
    CARDS, st.one_of(st.none(), st.tuples(players, st.sampled_from([NEXT, DAY]))), max_size=15
)


@settings(max_examples=200, deadline=None)
@given(
    first=st.lists(st.tuples(CARDS, players), max_size=40),
    later=st.lists(changes, max_size=5),
    tiers=st.one_of(st.none(), st.frozensets(st.sampled_from("KQAJ"), min_size=1)),
)
def test_a_difference_rebuilds_the_floor_the_mirror_judged(
    first: list[tuple[str, FloorPlayer]],
    later: list[dict[str, tuple[FloorPlayer, str] | None]],
    tiers: frozenset[str] | None,
) -> None:
    """Whatever joins, changes or leaves after the base, the base with the difference
    applied is the mirror's floor line for line, and judges the same."""
    mirror = FloorMirror(aioredis.Redis(), Keys("bonusd", "delta"))  # never connects
    index = {card: row(replace(p, card=card), NEXT) for card, p in first}
    mirror._apply(list(index), list(index.values()))
    base = mirror.checkpoint("J", AT, NEXT)
    assert base.delta is None and mirror.view(AT, NEXT, "J").delta is None  # not confirmed
    assert mirror.confirm("J", base.sha256)
    for delta in later:
        cards = list(delta)
        rows = [
            None if new is None else row(replace(new[0], card=c), new[1])
            for c, new in delta.items()
        ]
        mirror._apply(cards, rows)
        for card, text in zip(cards, rows, strict=True):
            if text is None:
                index.pop(card, None)
            else:
                index[card] = text
    snap = mirror.view(AT, NEXT, "J")
    assert snap.delta is not None and snap.delta.base_sha256 == base.sha256
    assert mirror.view(AT, NEXT, "K").delta is None  # another jackpot's pick: whole
    assert mirror.view(AT, DAY, "J").delta is None  # another gaming day: whole
    rebuilt = FloorSnapshot.parse(snap.serialise(), base.serialise())
    assert rebuilt.sha256 == snap.sha256 == hashlib.sha256(snap.serialise()).hexdigest()
    want = lines(FloorSnapshot.of_rows(AT, NEXT, "\n".join(index.values())))
    assert lines(rebuilt) == lines(snap) == want
    rules = RapsRules(tiers=tiers)
    assert judge(rebuilt, rules).eligible == judge(snap, rules).eligible
    assert judge(rebuilt, rules).reasons() == judge(snap, rules).reasons()


def test_a_base_dropped_by_the_mirror_is_not_used() -> None:
    mirror = FloorMirror(aioredis.Redis(), Keys("bonusd", "delta"))
    base = mirror.checkpoint("J", AT, NEXT)
    mirror.release()  # the copy let go: the next sync reads whole
    assert not mirror.confirm("J", base.sha256)
    assert mirror.view(AT, NEXT, "J").delta is None


LINE = "C1\tegm\tmain\tE1\t\tB\t1\t2\tQ\t0"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("C1\tegm\n", "2 fields"),
        ("C9\n", "does not hold"),
        (f"{LINE}\nC1\n", "twice"),
        ("\n", "1 or 10"),
    ],
)
def test_a_difference_off_the_form_is_refused(text: str, says: str) -> None:
    with pytest.raises(DeltaError, match=says):
        apply_delta(LINE + "\n", FloorDelta("0" * 64, text))


def test_a_difference_needs_the_base_it_names() -> None:
    base = FloorSnapshot(1, LINE + "\n")
    delta = FloorSnapshot(2, LINE + "\n", delta=FloorDelta(base.sha256, "C2" + LINE[2:] + "\nC1\n"))
    rebuilt = FloorSnapshot.parse(delta.serialise(), base.serialise())
    assert rebuilt.body == "C2" + LINE[2:] + "\n"
    with pytest.raises(SnapshotError, match="missing"):
        FloorSnapshot.parse(delta.serialise())
    other = FloorSnapshot(1, LINE.replace("Q", "K") + "\n").serialise()
    with pytest.raises(SnapshotError, match="not the one named"):
        FloorSnapshot.parse(delta.serialise(), other)
    with pytest.raises(SnapshotError, match="not the one named"):  # a base is never a difference
        FloorSnapshot.parse(delta.serialise(), delta.serialise())


async def test_a_pick_after_its_base_archives_a_difference_that_verifies(
    s: Site, site: str, redis_url: str, tmp_path: Path
) -> None:
    await start(s)
    s.clock.set(local(14, 29, 58))
    assert await s.desk.prepare_floor(PID, SID, 1)
    # in the two seconds before the jackpot: a player plays on, one arrives, two go idle
    s.clock.set(local(14, 30))
    now = s.clock.now()
    await seat(s, "E01", at=now, spend=31_000)
    await seat(s, "N01", at=now, tier="K")
    assert sorted(await store(s).sweep_idle(now, idle_timeout_s=400)) == ["I2", "I3"]
    records = await s.desk.run_jackpot(PID, SID, 1)
    assert kinds(records) == ["pool", "pick", "claim"]
    pool = records[0].payload
    archived = await archived_floor(s.redis, s.keys, J1, 1)
    assert archived is not None and archived[1] is not None
    file, base = archived
    assert file.startswith(b"bonusd-raps-floor 2 ")
    assert b"\nI2\n" in b"\n" + file and b"\nI3\n" in file  # removals
    assert hashlib.sha256(file).hexdigest() == pool["floor_sha256"]
    rebuilt = FloorSnapshot.parse(file, base)
    assert "N01" in {line.split("\t")[0] for line in rebuilt.body.splitlines()}
    assert pool["eligible"] + pool["ineligible"] == rebuilt.size == 49
    # the desk's checks read both files
    assert result_floor(await s.desk.verify(J1)) == []  # (its seed is not revealed yet)
    assert json_cards(await s.desk.eligibility_report(J1)) == set(
        judge(rebuilt, s.desk.plan(PID, SID).rules).eligible
    )
    # an export holds the base beside the file; the offline check rebuilds the floor
    records_all = await s.desk.audit.records()
    config = Settings(redis_url=redis_url, site=site, key_prefix="bonusd")
    floors = await live_floors(config, records_all)
    assert floors[f"{J1}.1{BASE}"] == base
    pools = {pool["pool_commitment"]: await s.desk._draws.pool_file(pool["pool_commitment"])}
    write_pools(pools, tmp_path, floors)
    again = offline_floors(tmp_path)
    promotion = s.desk.promotions.promotion(PID)
    assert check_floors(records_all, J1, pools, again, promotion)[0].endswith(
        "ok: the pool is its eligible players"
    )
    # a base altered in Redis, or lost, fails the check
    key = s.keys.raps_floor(J1)
    await s.redis.hset(
        key,
        FILE_REF + hashlib.sha256(base).hexdigest(),
        base.replace(b"\t1\n", b"\t0\n", 1).decode(),
    )
    assert "not the one named" in str(result_floor(await s.desk.verify(J1)))
    del again[f"{J1}.1{BASE}"]
    assert "FAILED" in check_floors(records_all, J1, pools, again, promotion)[0]


def result_floor(verified: tuple[str, dict[RoundKey, Verification]]) -> list[Mismatch]:
    """The floor's mismatches among a verification's."""
    return [m for v in verified[1].values() for m in v.mismatches if m.what == "floor"]


def json_cards(report: bytes) -> set[str]:
    return {e["card"] for e in json.loads(report)["eligible"]}


async def test_a_pick_without_a_base_archives_the_whole_floor(s: Site) -> None:
    await start(s)
    assert await s.desk.prepare_floor(PID, SID, 2)  # another jackpot's base: not this pick's
    records = await s.desk.run_jackpot(PID, SID, 1)
    archived = await archived_floor(s.redis, s.keys, J1, 1)
    assert archived is not None and archived[1] is None
    assert archived[0].startswith(b"bonusd-raps-floor 1 ")
    assert hashlib.sha256(archived[0]).hexdigest() == records[0].payload["floor_sha256"]
    assert isinstance(await s.desk._draws.pool_file(records[0].payload["pool_commitment"]), Pool)
    assert s.clock.now() == local(14, 30) and isinstance(s.clock.now(), dt.datetime)
