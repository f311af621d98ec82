"""Desk and scheduler acting on the same draw (or RAPS session) at once, against the real
Redis: within one daemon (one desk object shared by the scheduler, the run endpoint and
page reads) and across two daemons (two desk objects). The races are forced, not hoped
for: a hooked audit store lets the competitor run at a chosen point — between reading a
ledger's tail and replaying it, or between deciding a step and committing it.

Whatever the order: one pool freeze per round, one set of picks, the loser sees "already
done" (an empty step), nothing in the ledger that does not replay, and a `ConflictError`
(HTTP 409) only when the draw keeps changing through every retry.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from bonusd.audit.chain import AuditRecord, Entry, Kind
from bonusd.audit.store import AuditStore, Extra
from bonusd.clocks.clock import ManualClock
from bonusd.draws.approvals import ChangeKind
from bonusd.draws.claims import Actor, ClaimRole
from bonusd.draws.ledger import ATTEMPTS
from bonusd.draws.runner import DrawRunner
from bonusd.errors import ConflictError
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.store import PromotionStore
from bonusd.raps.runner import RapsRunner
from tests.draws.helpers import GH, HW, PID, Site, exclude_approved, of_kind, seeds
from tests.raps import helpers as raps
from tests.seal_helpers import SEAL

DESK = Actor("desk-1", ClaimRole.DESK)


class HookedAudit(AuditStore):
    """The audit store, with one-shot hooks: `on_ledger` runs after a ledger's tail was
    read and before the caller gets it; `on_commit` runs before a commit whose entries it
    accepts (it returns True), once, or before every such commit with `keep`."""

    def __init__(self, redis: aioredis.Redis, keys: Keys) -> None:
        super().__init__(redis, keys)
        self.on_ledger: Callable[[], Awaitable[None]] | None = None
        self.on_commit: Callable[[Sequence[Entry]], Awaitable[bool]] | None = None
        self.keep = False

    async def ledger(self, subject: str, start: int = 0) -> list[AuditRecord]:
        rows = await super().ledger(subject, start)
        hook, self.on_ledger = self.on_ledger, None
        if hook is not None:
            await hook()
        return rows

    async def commit(
        self, entries: Sequence[Entry], *, subject: str, expect: int, extra: Extra | None = None
    ) -> list[AuditRecord]:
        if self.on_commit is not None and await self.on_commit(entries) and not self.keep:
            self.on_commit = None
        return await super().commit(entries, subject=subject, expect=expect, extra=extra)


async def run_until_blocked(task: asyncio.Task[Any]) -> None:
    """Let `task` run until it is finished or waits on a lock (one its caller holds)."""
    while not task.done() and not waits_on_a_lock(task):
        await asyncio.sleep(0)  # a turn of the event loop, not a delay


def waits_on_a_lock(task: asyncio.Task[Any]) -> bool:
    """Whether the innermost coroutine `task` is suspended in is `asyncio.Lock.acquire`."""
    coro: Any = task.get_coro()
    while getattr(coro, "cr_await", None) is not None and hasattr(coro.cr_await, "cr_code"):
        coro = coro.cr_await
    return getattr(coro, "cr_code", None) is asyncio.Lock.acquire.__code__


def kinds_in(entries: Sequence[Entry]) -> set[Kind]:
    return {e.kind for e in entries}


@pytest.fixture
async def s(site: str, redis_url: str) -> AsyncIterator[Site]:
    """The Golden Horse halfway draw over 20 members; the desk's audit store is hooked."""
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    promotion = load_promotion(GH)
    store = PromotionStore(r, keys, [promotion])
    clock = ManualClock(dt.datetime.combine(promotion.draw(HW).date, dt.time(12), promotion.zone))
    audit = HookedAudit(r, keys)
    desk = DrawRunner(redis=r, keys=keys, audit=audit, promotions=store, clock=clock, seal=SEAL)
    one = Site(r, keys, promotion, store, clock, desk)
    await one.entry_pool(HW, {Tombola.POOLED: {f"C{n:02d}": 1 + n % 4 for n in range(20)}})
    yield one
    await r.aclose()


def hooked(s: Site) -> HookedAudit:
    assert isinstance(s.desk.audit, HookedAudit)
    return s.desk.audit


async def assert_one_draw(s: Site, *results: list[AuditRecord]) -> None:
    """One freeze per round, one set of five picks, a ledger that replays on a fresh desk."""
    ledger = await s.ledger()
    assert len(of_kind(ledger, Kind.COMMITMENT)) == 3
    assert len(of_kind(ledger, Kind.POOL)) == 3
    assert len(of_kind(ledger, Kind.PICK)) == 5
    assert sorted(len(of_kind(r, Kind.PICK)) for r in results) == [0] * (len(results) - 1) + [5]
    fresh = await s.new_desk().book(PID, HW)  # a restarted daemon replays every record
    assert fresh.version == len(ledger) == (await s.desk.book(PID, HW)).version
    assert [c.card for c in fresh.claims.values()] == [
        c.card for c in (await s.desk.book(PID, HW)).claims.values()
    ]
    assert (await s.desk.audit.verify()).ok


# -- one daemon: the scheduler, the run endpoint and page reads share the desk ------------------


async def test_bin_close_and_round_one_on_the_same_instant_replay_the_pools_once(s: Site) -> None:
    """The bin closed on another daemon; this one's scheduler runs round 1 while the desk's
    run request loads the same ledger tail (the frozen pools) into the shared book."""
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19, 0, 1))
    await s.new_desk().close_bin(PID, HW)
    by_desk: list[asyncio.Task[list[AuditRecord]]] = []

    async def desk_runs_it() -> None:
        by_desk.append(asyncio.create_task(s.desk.run_round(PID, HW, 1, DESK)))
        await run_until_blocked(by_desk[0])

    hooked(s).on_ledger = desk_runs_it
    scheduled = await s.desk.run_round(PID, HW, 1)
    await assert_one_draw(s, scheduled, await by_desk[0])


async def test_a_run_request_while_the_picks_land_sees_already_done(s: Site) -> None:
    """Round 1 was drawn on the leader; the desk's run request on this daemon and a page
    read of the book load the same picks: replayed once, and the request changes nothing."""
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19, 0, 1))
    await s.desk.close_bin(PID, HW)
    drawn = await s.new_desk().run_round(PID, HW, 1)
    reads: list[asyncio.Task[Any]] = []

    async def page_reads_it() -> None:
        reads.append(asyncio.create_task(s.desk.book(PID, HW)))
        await run_until_blocked(reads[0])

    hooked(s).on_ledger = page_reads_it
    assert await s.desk.run_round(PID, HW, 1, DESK) == []  # "running it again changes nothing"
    assert len((await reads[0]).claims) == 5
    await assert_one_draw(s, drawn, [])


async def test_a_page_read_never_builds_on_a_step_that_was_not_committed(s: Site) -> None:
    """The desk excludes a card (decided, not committed yet) while the leader draws round
    1; a page read meanwhile must not replay the leader's picks on top of the exclusion
    that never landed."""
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19, 0, 1))
    await s.desk.close_bin(PID, HW)
    reads: list[asyncio.Task[Any]] = []
    drawn: list[list[AuditRecord]] = []

    async def leader_draws_then_page_reads(entries: Sequence[Entry]) -> bool:
        if Kind.EXCLUSION not in kinds_in(entries):
            return False
        drawn.append(await s.new_desk().run_round(PID, HW, 1))
        reads.append(asyncio.create_task(s.desk.book(PID, HW)))
        await run_until_blocked(reads[0])
        return True

    hooked(s).on_commit = leader_draws_then_page_reads
    excluded = await exclude_approved(s.desk, HW, "C07", "self-excluded at the desk")
    assert [r.kind for r in excluded] == [Kind.APPROVAL, Kind.EXCLUSION]  # decided again
    read = await reads[0]
    assert len(read.claims) == 5 and "C07" in read.draw.excluded
    assert read.version == len(await s.ledger())
    await assert_one_draw(s, drawn[0], [])


# -- two daemons: two runners over the same Redis -------------------------------------------------


@pytest.mark.parametrize("cut_in", [Kind.POOL, Kind.PICK], ids=["at-bin-close", "at-the-picks"])
async def test_the_other_daemon_commits_between_a_decision_and_its_commit(
    s: Site, cut_in: Kind
) -> None:
    """The scheduler (this daemon) has decided its step; before it commits, the run
    endpoint on another daemon closes the bin and draws round 1. The scheduler's commit is
    refused, it re-decides on the new ledger and finds nothing left to do."""
    other = s.new_desk(seeds(99))
    s.clock.set(s.at(HW, 19, 0, 1))
    by_other: list[list[AuditRecord]] = []

    async def other_runs_it(entries: Sequence[Entry]) -> bool:
        if cut_in not in kinds_in(entries):
            return False
        by_other.append(await other.run_round(PID, HW, 1, DESK))
        return True

    hooked(s).on_commit = other_runs_it
    scheduled = await s.desk.run_round(PID, HW, 1)
    assert scheduled == [] and by_other
    await assert_one_draw(s, scheduled, by_other[0])
    picks = of_kind(await s.ledger(), Kind.PICK)
    assert {p.actor for p in picks} == {"desk-1 (desk)"}


async def test_a_draw_that_keeps_changing_is_refused_with_a_conflict(s: Site) -> None:
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19, 0, 1))
    await s.desk.close_bin(PID, HW)
    other = s.new_desk()
    cut_ins: list[int] = []

    async def other_changes_it(entries: Sequence[Entry]) -> bool:
        cut_ins.append(len(cut_ins))
        reason = "excluded at the desk"
        await other.request_change(
            PID, HW, ChangeKind.EXCLUSION, reason, DESK, card=f"X{len(cut_ins)}"
        )
        return True

    hooked(s).on_commit, hooked(s).keep = other_changes_it, True
    with pytest.raises(ConflictError, match="try again"):
        await s.desk.run_round(PID, HW, 1)
    assert len(cut_ins) == ATTEMPTS
    assert of_kind(await s.ledger(), Kind.PICK) == []
    hooked(s).on_commit = None
    assert len(of_kind(await s.desk.run_round(PID, HW, 1), Kind.PICK)) == 5  # the retry works


# -- a missed round is noted once ----------------------------------------------------------------


async def test_a_missed_round_is_noted_once(s: Site) -> None:
    s.clock.set(s.at(HW, 19, 40))
    first = await s.desk.missed(PID, HW, 1, dt.timedelta(minutes=40))
    assert [r.kind for r in first] == [Kind.EXCEPTION]
    assert "round 1 not drawn at its time" in first[0].payload["note"]
    assert await s.desk.missed(PID, HW, 1, dt.timedelta(minutes=41)) == []
    # an old leader that stalled inside the handler, and the new one, both note it
    other, again = s.new_desk(), s.new_desk()
    both = await asyncio.gather(
        other.missed(PID, HW, 1, dt.timedelta(minutes=42)),
        again.missed(PID, HW, 1, dt.timedelta(minutes=42)),
    )
    assert [len(b) for b in both] == [0, 0]
    assert len(of_kind(await s.ledger(), Kind.EXCEPTION)) == 1
    # another round is noted on its own, and a drawn round never
    assert len(await s.desk.missed(PID, HW, 2, dt.timedelta(minutes=5))) == 1
    await s.desk.run_round(PID, HW, 3, DESK)
    assert await s.desk.missed(PID, HW, 3, dt.timedelta(minutes=5)) == []
    assert len(of_kind(await s.ledger(), Kind.EXCEPTION)) == 2


# -- RAPS: the same model -------------------------------------------------------------------------


@pytest.fixture
async def rs(site: str, redis_url: str, tmp_path: Path) -> AsyncIterator[raps.Site]:
    one = await raps.make_site(site, redis_url, tmp_path, "carry_over")
    d = one.desk
    one.desk = RapsRunner(
        redis=d.redis,
        keys=d.keys,
        audit=HookedAudit(d.redis, d.keys),
        promotions=d.promotions,
        clock=d.clock,
        calendar=d.calendar,
        seal=d.seeds.seal,
        seed_source=raps.counter_seeds(),
    )
    yield one
    await one.redis.aclose()


def other_jackpot_desk(rs: raps.Site) -> RapsRunner:
    d = rs.desk
    return RapsRunner(
        redis=d.redis,
        keys=d.keys,
        audit=AuditStore(d.redis, d.keys),
        promotions=d.promotions,
        clock=d.clock,
        calendar=d.calendar,
        seal=d.seeds.seal,
    )


async def assert_one_jackpot(rs: raps.Site, *results: list[AuditRecord]) -> None:
    subject = (await rs.desk.book(raps.PID, raps.SID)).subject
    ledger = await rs.desk.audit.ledger(subject)
    assert len(of_kind(ledger, Kind.POOL)) == len(of_kind(ledger, Kind.PICK)) == 1
    assert sorted(len(of_kind(r, Kind.PICK)) for r in results) == [0] * (len(results) - 1) + [1]
    fresh = await other_jackpot_desk(rs).book(raps.PID, raps.SID)
    assert fresh.version == len(ledger) == (await rs.desk.book(raps.PID, raps.SID)).version
    assert (await rs.desk.audit.verify()).ok


async def test_raps_a_run_request_while_the_jackpot_lands_sees_already_done(
    rs: raps.Site,
) -> None:
    await raps.start(rs)
    await rs.desk.book(raps.PID, raps.SID)  # cached before the leader runs the jackpot
    ran = await other_jackpot_desk(rs).run_jackpot(raps.PID, raps.SID, 1)
    reads: list[asyncio.Task[Any]] = []

    async def page_reads_it() -> None:
        reads.append(asyncio.create_task(rs.desk.book(raps.PID, raps.SID)))
        await run_until_blocked(reads[0])

    assert isinstance(rs.desk.audit, HookedAudit)
    rs.desk.audit.on_ledger = page_reads_it
    assert await rs.desk.run_jackpot(raps.PID, raps.SID, 1, DESK) == []
    assert len((await reads[0]).claims) == 1
    await assert_one_jackpot(rs, ran, [])


async def test_raps_the_other_daemon_commits_between_a_decision_and_its_commit(
    rs: raps.Site,
) -> None:
    await raps.start(rs)
    other = other_jackpot_desk(rs)
    by_other: list[list[AuditRecord]] = []

    async def other_runs_it(entries: Sequence[Entry]) -> bool:
        if Kind.POOL not in kinds_in(entries):
            return False
        by_other.append(await other.run_jackpot(raps.PID, raps.SID, 1, DESK))
        return True

    assert isinstance(rs.desk.audit, HookedAudit)
    rs.desk.audit.on_commit = other_runs_it
    scheduled = await rs.desk.run_jackpot(raps.PID, raps.SID, 1)
    assert scheduled == [] and by_other
    await assert_one_jackpot(rs, scheduled, by_other[0])


async def test_raps_claim_timer_losing_to_the_desk_is_not_an_error(rs: raps.Site) -> None:
    """The announced winner's claim time ran out; the scheduler's reselection is decided
    when the desk, on another daemon, reselects first: the timer finds nothing left."""
    await raps.start(rs)
    await rs.desk.run_jackpot(raps.PID, raps.SID, 1)
    for action in ("crew_arrived", "not_at_device", "announce"):
        await rs.desk.act(raps.PID, raps.SID, 1, action, raps.CREW)
    rs.clock.advance(91)
    other = other_jackpot_desk(rs)

    async def desk_reselects(entries: Sequence[Entry]) -> bool:
        if not any(e.payload.get("action") == "reselect" for e in entries):
            return False
        await other.act(raps.PID, raps.SID, 1, "reselect", DESK, reason="not presented")
        return True

    assert isinstance(rs.desk.audit, HookedAudit)
    rs.desk.audit.on_commit = desk_reselects
    assert await rs.desk.run_due(raps.PID, raps.SID) == 0
    book = await rs.desk.book(raps.PID, raps.SID)
    assert len(book.claims) == 2  # one reselection, the desk's
    subject = book.subject
    resel = [
        r for r in await rs.desk.audit.ledger(subject) if r.payload.get("action") == "reselect"
    ]
    assert [r.actor for r in resel] == ["desk-1 (desk)"]
