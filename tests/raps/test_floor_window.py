"""The RAPS floor mirror is followed only around a session (`FloorWindow`): not before
`BONUSD_RAPS_FLOOR_LEAD_S` ahead of its first jackpot, all through it, and let go once no
jackpot of it is still to be picked from the floor (open claims do not hold it; an empty
pool's retry does); a pick outside the window still reads the floor."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from bonusd.service.floorwindow import FloorWindow
from tests.raps.helpers import CREW, PID, SID, Site, fifty, local

LAST = 14  # the session's last jackpot, at 21:00


async def until(check: Callable[[], bool], seconds: float = 5.0) -> None:
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.01)


@pytest.fixture
async def window(s: Site) -> AsyncIterator[FloorWindow]:
    promotions = tuple(s.desk.promotions.promotions.values())
    w = FloorWindow(s.desk, lambda: promotions, lead_s=600, every_s=0.01, check_s=0.02)
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    yield w
    stop.set()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)


async def test_followed_from_the_lead_until_no_pick_is_to_come(
    s: Site, window: FloorWindow
) -> None:
    mirror = window.mirror
    s.clock.set(local(14, 19))  # the first jackpot is at 14:30: 11 minutes ahead
    await fifty(s, s.clock.now())
    await asyncio.sleep(0.2)  # ten checks, twenty ticks of the follow loop
    assert mirror.full_reads == 0 and mirror.seq is None and not window.wanted()

    s.clock.set(local(14, 20, 1))  # within the 600-s lead
    await until(lambda: mirror.seq is not None)
    assert mirror.full_reads == 1 and mirror.size == 50
    seq = mirror.seq
    await fifty(s, s.clock.now())  # every row written again: followed by deltas
    await until(lambda: mirror.seq != seq)
    assert mirror.full_reads == 1

    s.clock.set(local(21))
    await fifty(s, s.clock.now())
    for number in range(1, LAST):
        await s.desk.run_jackpot(PID, SID, number)
    s.clock.set(local(21, 3))  # past the last jackpot, which has not run (a late start)
    await asyncio.sleep(0.2)
    assert window.unsettled == {f"{PID}.{SID}"} and mirror.seq is not None
    assert window.releases == 0

    await s.desk.run_jackpot(PID, SID, LAST)  # run late: no pick from the floor is to come
    await until(lambda: mirror.seq is None)
    book = await s.desk.book(PID, SID)
    assert all(book.claims[c].state.value == "alerted" for c in book.jackpot(LAST).claims)
    # (its claim is still open: a reselection picks from the frozen pool, not the floor)
    assert window.releases == 1 and not window.unsettled and mirror.size == 0
    reads = mirror.full_reads
    await asyncio.sleep(0.2)
    assert mirror.full_reads == reads  # not followed any more

    floor = await s.desk.snapshot()  # a pick outside the window reads the floor whole
    assert floor.size == 50 and mirror.full_reads == reads + 1
    await until(lambda: mirror.seq is None)  # and it is let go again
    assert window.releases == 2


async def test_a_timer_keeps_it_followed_on_a_daemon_without_the_book(
    s: Site, window: FloorWindow
) -> None:
    """A daemon that never loaded the session's book sees only its timers in the deadline
    index, a claim's or a retry's: it keeps the floor followed while there is one, and
    lets it go once it has read the book and found no pick to come."""
    s.clock.set(local(21))
    await fifty(s, s.clock.now())
    for number in range(1, LAST + 1):
        await s.desk.run_jackpot(PID, SID, number)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    await s.desk.act(PID, SID, 1, "not_at_device", CREW)
    await s.desk.act(PID, SID, 1, "announce", CREW)
    s.desk._books.clear()  # as on a daemon that has not read the session
    s.clock.set(local(21, 1, 10))
    await asyncio.sleep(0.2)
    assert window.unsettled == {f"{PID}.{SID}"} and window.wanted()
    book = await s.desk.book(PID, SID)  # read here now (the crew's handheld asked for it)
    assert book.claims[1].state.value == "announced"
    await until(lambda: not window.unsettled)
    assert not window.wanted()


async def test_an_empty_pools_retry_keeps_it_followed(s: Site, window: FloorWindow) -> None:
    """A jackpot whose pool was empty is picked again from the floor a minute later: its
    retry keeps the floor followed past the window, until it has run."""
    s.clock.set(local(21))
    for number in range(1, LAST + 1):  # nobody on the floor: every pool is empty
        await s.desk.run_jackpot(PID, SID, number)
    s.clock.set(local(21, 1, 10))  # past the window; the last jackpot's retry is at 21:01
    await asyncio.sleep(0.2)  # ten checks
    assert window.unsettled == {f"{PID}.{SID}"} and window.wanted()
    book = await s.desk.book(PID, SID)
    assert book.jackpot(LAST).retry_at == local(21, 1)
    await fifty(s, s.clock.now())
    await s.desk.run_due(PID, SID)  # the retries run: every jackpot now has its winner
    assert all(st.claims for st in (await s.desk.book(PID, SID)).jackpots.values())
    await until(lambda: window.mirror.seq is None)
    assert not window.unsettled and not window.wanted()


async def test_its_checks_leave_the_sessions_book_to_idle_out(s: Site, window: FloorWindow) -> None:
    """The window's checks read the session's book as the desk's cache holds it: they do
    not keep it (and the floors of its open jackpots) cached through the tail."""
    s.clock.set(local(21))
    await fifty(s, s.clock.now())
    for number in range(1, LAST + 1):
        await s.desk.run_jackpot(PID, SID, number)
    for at in (local(21, 2), local(22, 30)):  # the tail: checked every 20 ms
        s.clock.set(at)
        await asyncio.sleep(0.2)
        assert s.desk.cached(f"{PID}.{SID}") is not None and not window.wanted()
    s.clock.set(local(23, 1))  # two hours after the last step: the desk's idle time
    assert s.desk.cached(f"{PID}.{SID}") is None


async def test_the_copy_syncs_faster_in_the_seconds_around_each_jackpot(s: Site) -> None:
    promotions = tuple(s.desk.promotions.promotions.values())
    w = FloorWindow(s.desk, lambda: promotions, lead_s=600, every_s=0.25, near_s=0.05)
    s.clock.set(local(14, 19))
    await w.check()
    assert w.interval() == 0.25  # 11 minutes before the first jackpot (14:30)
    s.clock.set(local(14, 29, 49))
    assert w.interval() == 0.25  # 11 s before
    s.clock.set(local(14, 29, 51))
    assert w.interval() == 0.05  # 9 s before
    s.clock.set(local(14, 30, 59))
    assert w.interval() == 0.05  # its pick and claim begin
    s.clock.set(local(14, 31, 1))
    assert w.interval() == 0.25
    slow = FloorWindow(s.desk, lambda: promotions, lead_s=600, every_s=0.02, near_s=0.05)
    await slow.check()
    s.clock.set(local(14, 29, 55))
    assert slow.interval() == 0.02  # never slower than the regular interval


async def test_the_leader_archives_each_jackpots_base_just_before_its_time(s: Site) -> None:
    """`prepare_due` archives jackpot n's floor base once, within `base_lead` of its time;
    the pick then archives a difference from it."""
    promotions = tuple(s.desk.promotions.promotions.values())
    w = FloorWindow(s.desk, lambda: promotions, lead_s=600, every_s=0.25, base_lead_s=2)
    s.clock.set(local(14, 29))
    await fifty(s, s.clock.now())
    await s.desk.commit_seeds(PID, SID)
    await w.check()
    s.clock.set(local(14, 29, 57))
    assert await w.prepare_due() == 0  # 3 s before the first jackpot (14:30)
    s.clock.set(local(14, 29, 58, 500_000))
    assert await w.prepare_due() == 1
    assert await w.prepare_due() == 0  # once each
    s.clock.set(local(14, 30))
    records = await s.desk.run_jackpot(PID, SID, 1)
    archived = await s.redis.hgetall(s.keys.raps_floor(f"{PID}.{SID}.j1"))
    assert len(archived) == 3  # the base, the difference, the attempt's name of it
    assert archived[archived["1"]].startswith("bonusd-raps-floor 2 ")
    assert records[0].payload["members"] == 30
    book = s.desk.cached(f"{PID}.{SID}")
    assert book is not None and isinstance(book.jackpot(1).floor.source, list)
    where = book.jackpot(1).floor.place("E01")
    assert w.compact() == 1 and w.compact() == 0  # once picked, its lines as one string
    assert isinstance(book.jackpot(1).floor.source, str)
    assert book.jackpot(1).floor.place("E01") == where
    off = FloorWindow(s.desk, lambda: promotions, lead_s=600, every_s=0.25)  # base lead 0
    stop = asyncio.Event()
    stop.set()
    await off.bases(stop)  # returns at once: nothing to do
    assert off.based == {}
