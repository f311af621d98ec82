"""The RAPS RAPS runner against a real Redis: a Festa Fortuna bonus-jackpot session from
seed commitment to verified winner, reselection, the decline register and empty pools."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

from bonusd.audit.chain import AuditRecord
from bonusd.audit.store import AuditStore
from bonusd.draws.claims import ClaimError
from bonusd.draws.fairness import pick_sequence
from bonusd.draws.poolfile import parse_pool
from bonusd.errors import NotFoundError
from bonusd.raps.floorarchive import archived_floor
from bonusd.raps.rules import RapsClaimState
from tests.raps.helpers import (
    CREW,
    DESK,
    ELIGIBLE,
    J1,
    PID,
    REASONS,
    SID,
    Site,
    crew_verifies_at_the_device_and_the_jackpot_verifies,
    fifty,
    kinds,
    local,
    make_site,
    seat,
    start,
)
from tests.seal_helpers import opened_seed

R = RapsClaimState


async def test_only_eligible_players_win_and_the_pool_says_why(s: Site) -> None:
    commits = await s.desk.commit_seeds(PID, SID)
    assert kinds(commits) == ["commitment"] * 14 and not any(r.payload.get("late") for r in commits)
    assert await s.desk.commit_seeds(PID, SID) == []
    s.clock.set(local(14, 30))
    await fifty(s, s.clock.now())
    floor = await s.desk.snapshot()
    assert floor.size == 50
    records = await s.desk.run_jackpot(PID, SID, 1)
    assert kinds(records) == ["pool", "pick", "claim"]
    pool = records[0].payload
    assert pool["eligible"] == pool["members"] == 30 and pool["ineligible"] == 20
    assert pool["reasons"] == {str(k): v for k, v in REASONS.items()}
    winner = records[1].payload["card"]
    assert winner in ELIGIBLE
    detail = records[2].payload["detail"]
    assert detail["device"].endswith(winner) and detail["bank"] in ("B-main", "B-smoking")
    assert await s.desk.run_jackpot(PID, SID, 1) == []  # idempotent
    archived = await archived_floor(s.redis, s.keys, J1, 1)
    assert archived is not None and archived[1] is None  # no base: archived whole
    assert hashlib.sha256(archived[0]).hexdigest() == pool["floor_sha256"]
    # a snapshot archived by a daemon of the earlier layout (the file under the attempt
    # itself) reads the same
    await s.redis.hset(s.keys.raps_floor(J1), "1", archived[0])
    assert await archived_floor(s.redis, s.keys, J1, 1) == archived
    facts = json.loads(await s.desk.eligibility_report(J1))
    assert sorted(e["card"] for e in facts["eligible"]) == ELIGIBLE
    assert {i["card"]: i["reasons"] for i in facts["ineligible"]}["X0"] == ["excluded"]
    # every jackpot of the session: one winner each, always an eligible player
    for n in range(2, 15):
        s.clock.set(local(14, 30) + dt.timedelta(minutes=30 * (n - 1)))
        await fifty(s, s.clock.now())  # the floor keeps playing
        recs = await s.desk.run_jackpot(PID, SID, n)
        assert kinds(recs) == ["pool", "pick", "claim"]
        assert recs[1].payload["card"] in ELIGIBLE
    book = await s.desk.book(PID, SID)
    assert len(book.claims) == 14 and all(len(j.claims) == 1 for j in book.jackpots.values())


async def test_absent_winner_is_reselected_from_the_same_stream(s: Site) -> None:
    await start(s)
    first = await s.desk.run_jackpot(PID, SID, 1)
    s.clock.advance(60)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 1, "not_at_device", CREW)
    await s.desk.act(PID, SID, 1, "announce", CREW)
    s.clock.advance(90)
    assert await s.desk.run_due(PID, SID) == 0  # the 90 s are not over yet
    zset = await s.redis.zrange(s.keys.deadlines, 0, -1, withscores=True)
    assert zset == [(f"raps:{PID}.{SID}", (local(14, 31) + dt.timedelta(seconds=90)).timestamp())]
    s.clock.advance(1)
    assert await s.desk.run_due(PID, SID) == 1
    book = await s.desk.book(PID, SID)
    assert book.claims[1].state is R.RESELECTED
    second = book.claims[2]
    # the reselection is the next pick of the stream fixed by the seed and the pool
    pool = parse_pool(
        (await s.redis.get(s.keys.poolfile(first[0].payload["pool_commitment"]))).encode()
    )
    seed = await opened_seed(s.redis, s.keys.seed(f"{PID}.{SID}", "raps", "1"))
    picks = pick_sequence(pool, seed, 2)
    assert [picks[0].card, picks[1].card] == [book.claims[1].card, second.card]
    ledger = await s.desk.audit.ledger(f"{PID}.{SID}")
    assert [r.kind for r in ledger][-3:] == ["claim", "redraw", "claim"]
    # the next winner hands over a card that is not theirs: reselect again at once (a
    # minute after the selection was announced to the crew: the series' spacing)
    s.clock.advance(60)
    await s.desk.act(PID, SID, 2, "crew_arrived", CREW)
    records = await s.desk.act(PID, SID, 2, "not_owner", CREW, reason="her husband's card")
    assert kinds(records) == ["claim", "claim", "redraw", "claim"]
    book = await s.desk.book(PID, SID)
    assert book.claims[3].card == pick_sequence(pool, seed, 3)[2].card
    # a restarted daemon (no cache) rebuilds the same book from the ledger
    s.desk._books.clear()
    s.desk._floors.clear()
    s.desk._draws.pools.clear()
    again = await s.desk.book(PID, SID)
    assert [(c.card, c.state) for c in again.claims.values()] == [
        (c.card, c.state) for c in book.claims.values()
    ]
    await s.desk.act(PID, SID, 3, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 3, "verify_at_device", CREW)
    _, result = await s.desk.verify(J1)
    assert [v.picks_checked for v in result.values()] == [3] and all(v.ok for v in result.values())


async def test_decline_register(s: Site) -> None:
    await s.desk.commit_seeds(PID, SID)
    await fifty(s, s.clock.now())  # members known (imported) before the session
    for card in ELIGIBLE:  # every eligible player signs the register before the session
        await s.desk.sign_decline(PID, SID, card, DESK)
    with pytest.raises(ClaimError, match="only the desk"):
        await s.desk.sign_decline(PID, SID, "X0", CREW)
    with pytest.raises(NotFoundError):
        await s.desk.sign_decline(PID, SID, "NOBODY", DESK)
    s.clock.set(local(14, 0))
    with pytest.raises(ClaimError, match="until the session starts"):
        await s.desk.sign_decline(PID, SID, "E00", DESK)
    s.clock.set(local(14, 30))
    await fifty(s, s.clock.now())
    await s.desk.run_jackpot(PID, SID, 1)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 1, "not_at_device", CREW)
    await s.desk.act(PID, SID, 1, "announce", CREW)
    s.clock.advance(91)
    with pytest.raises(ClaimError, match="signed the decline register"):
        await s.desk.act(PID, SID, 1, "reselect", CREW)
    assert await s.desk.run_due(PID, SID) == 1
    book = await s.desk.book(PID, SID)
    assert book.claims[1].state is R.DECLINED_REGISTER and book.won(1) is book.claims[1]
    assert book.jackpots[1].revealed and len(book.claims) == 1
    assert await s.redis.zscore(s.keys.deadlines, f"raps:{PID}.{SID}") is None


async def test_empty_pool_retries_then_carries_the_prize_over(s: Site) -> None:
    await s.desk.commit_seeds(PID, SID)
    s.clock.set(local(14, 30))
    await seat(s, "LONELY", at=s.clock.now(), area="prive")
    records = await s.desk.run_jackpot(PID, SID, 1)
    assert kinds(records) == ["pool", "exception"]
    assert records[1].payload["retry_at"] and "nobody eligible" in records[1].payload["note"]
    assert await s.desk.run_jackpot(PID, SID, 1) == []  # the retry is not due yet
    s.clock.advance(60)
    assert await s.desk.run_due(PID, SID) == 1  # attempt 2: still nobody
    s.clock.advance(60)
    assert await s.desk.run_due(PID, SID) == 1  # attempt 3 of 3: carried over
    ledger = await s.desk.audit.ledger(f"{PID}.{SID}")
    last = ledger[-2].payload
    assert last["then"] == "carry_over" and last["carried_to"] == f"{PID}.{SID}.j2"
    assert [r.payload["round"] for r in ledger if r.kind == "pool"] == [1, 2, 3]
    assert ledger[-1].kind == "seed_reveal"
    s.clock.set(local(15, 0))
    await fifty(s, s.clock.now())
    records = await s.desk.run_jackpot(PID, SID, 2)
    assert records[2].payload["detail"]["prizes"] == "2"


async def test_empty_pool_then_skip(site: str, redis_url: str, tmp_path: Path) -> None:
    s = await make_site(site, redis_url, tmp_path, "skip")
    try:
        await s.desk.commit_seeds(PID, SID)
        s.clock.set(local(14, 30))
        await s.desk.run_jackpot(PID, SID, 1)  # nobody on the floor at all
        for _ in range(2):
            s.clock.advance(60)
            await s.desk.run_due(PID, SID)
        book = await s.desk.book(PID, SID)
        assert book.jackpots[1].outcome == "skipped" and book.jackpots[2].prizes == 1
        assert book.next_deadline() is None
    finally:
        await s.redis.aclose()


async def test_crew_verifies_at_the_device_and_the_jackpot_verifies(
    s: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Its verify reads the trail a batch at a time, never whole.)"""

    async def whole(self: AuditStore, start: int = 0, end: int = -1) -> list[AuditRecord]:
        raise AssertionError("the whole trail was read at once")

    monkeypatch.setattr(AuditStore, "records", whole)
    await crew_verifies_at_the_device_and_the_jackpot_verifies(s)
