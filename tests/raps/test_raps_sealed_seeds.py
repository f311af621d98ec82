"""Sealed RAPS jackpot seeds against the real Redis: a committed jackpot whose seed key is
deleted, replaced or moved refuses (nothing selected) with one exception record, in the
running runner and in a fresh one (a restart); the keyspace holds no usable seed."""

from __future__ import annotations

import os

import pytest

from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.draws.fairness import pick_sequence
from bonusd.draws.poolfile import parse_pool
from bonusd.errors import SeedRefused
from bonusd.raps.runner import RapsRunner
from tests.raps.helpers import J1, PID, SID, Site, kinds, start
from tests.seal_helpers import (
    SEAL,
    candidate_seeds,
    everything_readable,
    opened_seed,
    seeds_giving,
)

SUBJECT = f"{PID}.{SID}"
PROBLEMS = {
    "deleted": "the committed seed's key is missing from Redis",
    "another-seed": "holds a seed that is not the one committed",
    "moved": "does not open with the key in the tests' fixed seed key",
}


def fresh(s: Site) -> RapsRunner:
    """Another daemon after a restart: nothing cached."""
    d = s.desk
    return RapsRunner(
        redis=s.redis,
        keys=s.keys,
        audit=AuditStore(s.redis, s.keys),
        promotions=d.promotions,
        clock=s.clock,
        calendar=d.calendar,
        seal=SEAL,
    )


async def assert_refused(s: Site, runner: RapsRunner, problem: str) -> None:
    with pytest.raises(SeedRefused, match=problem):
        await runner.run_jackpot(PID, SID, 1)
    ledger = await s.desk.audit.ledger(SUBJECT)
    assert not [r for r in ledger if r.kind in (Kind.POOL, Kind.PICK)]
    refused = [r for r in ledger if r.kind == Kind.EXCEPTION]
    assert len(refused) == 1, refused
    assert refused[0].payload["draw_id"] == J1 and refused[0].payload["event"] == "seed_refused"
    assert problem in refused[0].payload["note"]


@pytest.mark.parametrize("how", list(PROBLEMS))
async def test_a_broken_jackpot_seed_refuses_with_one_exception(s: Site, how: str) -> None:
    await start(s)
    name = s.keys.seed(SUBJECT, "raps", "1")
    if how == "deleted":
        await s.redis.delete(name)
    elif how == "another-seed":
        await s.redis.set(name, SEAL.seal(name, os.urandom(32)))
    else:
        await s.redis.set(name, await s.redis.get(s.keys.seed(SUBJECT, "raps", "2")))
    await assert_refused(s, s.desk, PROBLEMS[how])
    await assert_refused(s, s.desk, PROBLEMS[how])
    with pytest.raises(SeedRefused):  # never made again
        await s.desk.commit_seeds(PID, SID)
    await assert_refused(s, fresh(s), PROBLEMS[how])
    with pytest.raises(SeedRefused):
        await fresh(s).book(PID, SID)


async def test_nothing_in_the_keyspace_computes_the_jackpot_winner(s: Site) -> None:
    await start(s)
    texts = await everything_readable(s.redis, s.keys.base)
    records = await s.desk.run_jackpot(PID, SID, 1)
    assert kinds(records) == ["pool", "pick", "claim"]
    raw = await s.redis.get(s.keys.poolfile(records[0].payload["pool_commitment"]))
    pool = parse_pool(raw.encode())
    seed = await opened_seed(s.redis, s.keys.seed(SUBJECT, "raps", "1"))
    truth = pick_sequence(pool, seed, 3)
    assert truth[0].card == records[1].payload["card"]
    assert seeds_giving(pool, truth, candidate_seeds(texts)) == []
    assert seeds_giving(pool, truth, candidate_seeds([*texts, seed.hex()])) == [seed]
