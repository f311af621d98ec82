"""Sealed seeds against the real Redis (docs/fairness.md, "Where the seed lives"): nothing an
insider reads in the site's keyspace computes the winners before the draw (and the same
attack does on a plain seed), and a committed round whose seed key is deleted, replaced or
moved refuses with one exception record, in a running runner and after a restart."""

from __future__ import annotations

import os

import pytest

from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.draws.fairness import Pool, pick_sequence
from bonusd.draws.poolfile import parse_pool
from bonusd.draws.runner import DrawRunner
from bonusd.draws.seal import SeedSeal
from bonusd.draws.seeds import seal_plain_seeds
from bonusd.errors import SeedRefused
from tests.draws.helpers import HALFWAY, HW, PID, Site, of_kind, seeds
from tests.seal_helpers import (
    SEAL,
    candidate_seeds,
    everything_readable,
    opened_seed,
    seeds_giving,
)


@pytest.fixture
def s(small: Site) -> Site:
    """The Golden Horse halfway draw over 20 members, clock at 12:00 on draw day."""
    return small


def seed_key(s: Site, round_no: int = 1) -> str:
    return s.keys.seed(HALFWAY, "pooled", str(round_no))


async def frozen_pool(s: Site) -> Pool:
    """Round 1's frozen pool file, as Redis archives it."""
    record = next(r for r in of_kind(await s.ledger(), Kind.POOL) if r.payload["round"] == 1)
    raw = await s.redis.get(s.keys.poolfile(record.payload["pool_commitment"]))
    return parse_pool(raw.encode())


# -- an insider reading Redis -------------------------------------------------------------------


async def test_nothing_in_the_keyspace_computes_the_winners_before_the_draw(s: Site) -> None:
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    await s.desk.close_bin(PID, HW)
    pool = await frozen_pool(s)
    texts = await everything_readable(s.redis, s.keys.base)
    candidates = candidate_seeds(texts)
    assert len(candidates) > 10  # commitments, chain hashes, pool commitments ...
    # the draw, after the insider looked: its winners are the stream of the real seed
    records = await s.desk.run_round(PID, HW, 1)
    picked = [r.payload["card"] for r in of_kind(records, Kind.PICK)]
    seed = await opened_seed(s.redis, seed_key(s))
    truth = pick_sequence(pool, seed, len(picked))
    assert [p.card for p in truth] == picked
    assert seeds_giving(pool, truth, candidates) == []
    # the same attack on a seed kept as plain hex (as before sealing) finds it
    await s.redis.set(seed_key(s), seed.hex())
    plain = candidate_seeds(await everything_readable(s.redis, s.keys.base))
    assert seeds_giving(pool, truth, plain) == [seed]


# -- a seed key deleted or replaced: refused, recorded once, before and after a restart ----------


async def break_seed(s: Site, how: str) -> None:
    name = seed_key(s)
    if how == "deleted":
        await s.redis.delete(name)
    elif how == "another-seed":
        await s.redis.set(name, SEAL.seal(name, os.urandom(32)))
    else:  # round 2's sealed value, moved to round 1's key
        await s.redis.set(name, await s.redis.get(seed_key(s, 2)))


PROBLEMS = {
    "deleted": "the committed seed's key is missing from Redis",
    "another-seed": "holds a seed that is not the one committed",
    "moved": "does not open with the key in the tests' fixed seed key",
}


async def assert_refused(s: Site, runner: DrawRunner, problem: str) -> None:
    with pytest.raises(SeedRefused, match=problem) as refused:
        await runner.run_round(PID, HW, 1)
    assert "nothing was drawn" in str(refused.value) and seed_key(s) in str(refused.value)
    ledger = await s.ledger()
    assert not of_kind(ledger, Kind.PICK)
    exceptions = [r for r in of_kind(ledger, Kind.EXCEPTION) if r.payload["round"] == 1]
    assert len(exceptions) == 1, exceptions
    assert exceptions[0].payload["event"] == "seed_refused"
    assert problem in exceptions[0].payload["note"]


@pytest.mark.parametrize("how", list(PROBLEMS))
async def test_a_broken_seed_key_refuses_the_round_with_one_exception(s: Site, how: str) -> None:
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    await s.desk.close_bin(PID, HW)  # the running runner's book holds the original seed
    await break_seed(s, how)
    await assert_refused(s, s.desk, PROBLEMS[how])
    await assert_refused(s, s.desk, PROBLEMS[how])  # again: still one record
    with pytest.raises(SeedRefused):  # the seed is never made again
        await s.desk.commit_seeds(PID, HW)
    if how == "deleted":
        assert await s.redis.get(seed_key(s)) is None
    # after a restart: a fresh runner replaying the ledger refuses alike; a read never writes
    fresh = s.new_desk(seeds(8))
    length = await s.ledger_len()
    with pytest.raises(SeedRefused, match=PROBLEMS[how]):
        await fresh.book(PID, HW)
    assert await s.ledger_len() == length
    await assert_refused(s, fresh, PROBLEMS[how])
    assert await s.ledger_len() == length


async def test_a_seed_restored_from_the_backup_draws_again(s: Site) -> None:
    await s.desk.commit_seeds(PID, HW)
    sealed = await s.redis.get(seed_key(s))
    s.clock.set(s.at(HW, 19))
    await s.redis.delete(seed_key(s))
    await assert_refused(s, s.desk, PROBLEMS["deleted"])
    await s.redis.set(seed_key(s), sealed)  # the operator restores the sealed value
    records = await s.desk.run_round(PID, HW, 1)
    assert len(of_kind(records, Kind.PICK)) == 5
    assert len(of_kind(await s.new_desk().run_round(PID, HW, 1), Kind.PICK)) == 0  # replays


async def test_a_daemon_with_another_key_file_refuses_and_says_so(s: Site) -> None:
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    other = DrawRunner(
        redis=s.redis,
        keys=s.keys,
        audit=AuditStore(s.redis, s.keys),
        promotions=s.store,
        clock=s.clock,
        seal=SeedSeal(os.urandom(32), source="/etc/bonusd/wrong-seed-key"),
    )
    with pytest.raises(SeedRefused) as refused:
        await other.run_round(PID, HW, 1)
    message = str(refused.value)
    assert "does not open with the key in /etc/bonusd/wrong-seed-key" in message
    assert "BONUSD_SEED_KEY_FILE" in message
    assert not of_kind(await s.ledger(), Kind.PICK)


async def test_commit_seeds_makes_a_seed_only_for_rounds_not_committed(s: Site) -> None:
    first = await s.desk.commit_seeds(PID, HW)
    assert of_kind(first, Kind.COMMITMENT)
    kept = {k: await s.redis.get(k) for k in await s.redis.keys(f"{s.keys.base}seed:*")}
    assert kept and all(v.startswith("sealed1:") for v in kept.values())
    assert await s.new_desk(seeds(9)).commit_seeds(PID, HW) == []
    assert {k: await s.redis.get(k) for k in kept} == kept


# -- an upgrade from a version that kept seeds in plain hex -------------------------------------


async def test_seeds_left_in_plain_hex_are_sealed_in_place_and_draw_as_committed(
    s: Site,
) -> None:
    await s.desk.commit_seeds(PID, HW)
    name = seed_key(s)
    seed = await opened_seed(s.redis, name)
    await s.redis.set(name, seed.hex())  # as a version from before sealing kept it
    other = s.keys.seed("someone-else.draw", "pooled", "1")
    await s.redis.set(other, "not a seed")  # not plain hex: left alone
    assert await seal_plain_seeds(s.redis, SEAL, s.keys) >= 1
    assert (await s.redis.get(name)).startswith("sealed1:")
    assert await opened_seed(s.redis, name) == seed  # the same seed: its commitment holds
    assert await s.redis.get(other) == "not a seed"
    assert await seal_plain_seeds(s.redis, SEAL, s.keys) == 0  # once
    s.clock.set(s.at(HW, 19))
    await s.desk.close_bin(PID, HW)
    s.clock.set(s.at(HW, 20))
    records = await s.desk.run_round(PID, HW, 1)
    assert of_kind(records, Kind.PICK)
    assert not [r for r in await s.ledger() if r.payload.get("event") == "seed_refused"]
