"""An entry bin closes on the scheduler's clock, or by the desk's explicit request once its
scheduled close has come; never earlier, and never as a side effect of a read
(docs/draws.md, "Closing the entry bin").

The desk's request is tested on a daemon whose scheduler is not running (the case it is
for: no daemon led at the close), through the application itself; the scheduler's close,
its catch-up after downtime and the ticket lists on a running daemon.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bonusd.access.auth import Role
from bonusd.audit.chain import Kind
from bonusd.clocks.clock import ManualClock
from bonusd.draws.book import BinOpenError
from bonusd.promotions import Action, TimedAction
from bonusd.settings import Settings
from tests.browser.helpers import GH, wait_for
from tests.daemon_helpers import running
from tests.draws.helpers import CLOSES, HttpDesk
from tests.redis_snapshot import differences

HALFWAY = f"{GH}.halfway"
BASE = f"/promotions/{GH}/draws/halfway"
CLOSES_TEXT = "2026-11-07T19:00:00+02:00"


async def test_the_desk_cannot_close_a_bin_before_its_scheduled_close(desk: HttpDesk) -> None:
    before = await desk.keyspace()
    for path, body in ((f"{BASE}/close-bin", None), (f"{BASE}/run", {"round": 1})):
        r = await desk.post(Role.DESK, path, body)
        assert r.status_code == 409, r.text
        detail = r.json()["detail"]
        assert f"the entry bin of {HALFWAY} closes at {CLOSES_TEXT} (in 0:08:00)" in detail
        assert "cannot be closed, nor a round drawn" in detail
    # the final's bin, the one a ticket list closed 35 days early in the report
    r = await desk.post(Role.DESK, f"/promotions/{GH}/draws/final/close-bin")
    assert r.status_code == 409
    assert "closes at 2026-12-12T20:00:00+02:00" in r.json()["detail"]
    desk.clock.set(CLOSES - dt.timedelta(microseconds=1))
    assert (await desk.post(Role.DESK, f"{BASE}/close-bin")).status_code == 409
    assert differences(before, await desk.keyspace()) == []
    state = (await desk.get(Role.DESK, f"/promotions/{GH}")).json()
    halfway = next(x for x in state["draws"] if x["id"] == "halfway")
    assert halfway["pool_sha256"] is None


async def test_the_desk_closes_a_bin_at_its_time_in_its_own_name(desk: HttpDesk) -> None:
    desk.clock.set(CLOSES)
    r = await desk.post(Role.DESK, f"{BASE}/close-bin")
    assert r.status_code == 200, r.text
    rounds = r.json()["rounds"]
    assert rounds and all(x["pool_commitment"] for x in rounds)
    pools = [x for x in await desk.service.audit.ledger(HALFWAY) if x.kind == Kind.POOL]
    assert len(pools) == len(rounds)
    assert {x.actor for x in pools} == {f"{Role.DESK} one (desk)"}
    state = (await desk.get(Role.DESK, f"/promotions/{GH}")).json()
    halfway = next(x for x in state["draws"] if x["id"] == "halfway")
    assert halfway["state"] == "frozen" and halfway["pool_sha256"]
    # closing a closed bin changes nothing; the ticket list reads what was frozen
    after = await desk.keyspace()
    assert (await desk.post(Role.DESK, f"{BASE}/close-bin")).status_code == 200
    assert differences(after, await desk.keyspace()) == []
    csv = await desk.get(Role.DESK, f"{BASE}/tickets/pooled/1.csv")
    assert csv.status_code == 200 and rounds[0]["pool_commitment"] in csv.text


async def test_only_the_desk_closes_a_bin(desk: HttpDesk) -> None:
    desk.clock.set(CLOSES + dt.timedelta(minutes=5))
    before = await desk.keyspace()
    for role in (Role.CREW, Role.KIOSK, Role.SIGNAGE):
        r = await desk.post(role, f"{BASE}/close-bin")
        assert r.status_code == 403, (role, r.text)
        assert "needs the admin or desk role" in r.json()["detail"]
    r = await desk.http.post(f"{BASE}/close-bin")
    assert r.status_code == 401
    assert differences(before, await desk.keyspace()) == []


async def test_a_ticket_list_read_before_the_close_writes_nothing(desk: HttpDesk) -> None:
    before = await desk.keyspace()
    for path, status, words in (
        (f"{BASE}/tickets/pooled/1.csv", 409, f"closes at {CLOSES_TEXT}"),
        (f"{BASE}/tickets/pooled/1", 409, "the ticket lists exist then"),
        (f"/promotions/{GH}/draws/final/tickets/pooled/1.csv", 404, "has no pooled round 1"),
        (f"/promotions/{GH}/draws/final/tickets/slots/1.csv", 409, "2026-12-12T20:00:00+02:00"),
        (f"{BASE}/tickets/pooled/7.csv", 404, "its rounds: pooled 1, pooled 2, pooled 3"),
    ):
        r = await desk.get(Role.DESK, path)
        assert r.status_code == status, (path, r.text)
        assert words in r.json()["detail"], (path, r.text)
    # past the close with nobody to close it: the answer says what to do
    desk.clock.set(CLOSES + dt.timedelta(minutes=1))
    r = await desk.get(Role.DESK, f"{BASE}/tickets/pooled/1.csv")
    assert r.status_code == 409
    assert f"POST {BASE}/close-bin" in r.json()["detail"]
    assert differences(before, await desk.keyspace()) == []


async def test_the_schedulers_close_is_not_refused_by_an_early_wake(desk: HttpDesk) -> None:
    """A wall clock can wake its sleeper a hair before the instant; the scheduler's action
    is judged at the instant it was scheduled for, never refused as early."""
    desk.clock.set(CLOSES - dt.timedelta(milliseconds=3))
    with pytest.raises(BinOpenError):
        await desk.service.draws.close_bin(GH, "halfway")
    action = TimedAction(CLOSES, Action.BIN_CLOSES, (GH, "halfway"))
    await desk.service.actions.close_bin(action)
    pools = [x for x in await desk.service.audit.ledger(HALFWAY) if x.kind == Kind.POOL]
    assert pools and {x.actor for x in pools} == {"scheduler (system)"}


async def test_the_scheduler_closes_the_bin_and_a_late_start_catches_up(
    gh_settings: Settings,
) -> None:
    clock = ManualClock(CLOSES - dt.timedelta(seconds=1))
    async with running(gh_settings, clock) as d:
        await asyncio.wait_for(d.service.scheduler.caught_up.wait(), 30)
        desk = await d.client(Role.DESK)
        try:
            r = await desk.get(f"{BASE}/tickets/pooled/1.csv")
            assert r.status_code == 409 and "(in 0:00:01)" in r.text
            clock.set(CLOSES)

            async def listed() -> bool:
                return (await desk.get(f"{BASE}/tickets/pooled/1.csv")).status_code == 200

            await wait_for(listed, "the scheduler to close the bin")
        finally:
            await desk.aclose()
        records = await d.service.audit.ledger(HALFWAY)
        assert {x.actor for x in records if x.kind == Kind.POOL} == {"scheduler (system)"}
        # the bonus and final bins stay open
        for draw in ("bonus", "final"):
            assert await d.service.promotion_store.pool(GH, draw) is None


async def test_a_daemon_down_at_the_close_closes_the_bin_when_it_starts(
    gh_settings: Settings,
) -> None:
    clock = ManualClock(CLOSES + dt.timedelta(minutes=30))  # down from 18:50 to 19:30
    async with running(gh_settings, clock) as d:
        await asyncio.wait_for(d.service.scheduler.caught_up.wait(), 30)
        records = await d.service.audit.ledger(HALFWAY)
        pools = [x for x in records if x.kind == Kind.POOL]
        assert pools and {x.actor for x in pools} == {"scheduler (system)"}
        missed = [x for x in records if x.kind == Kind.EXCEPTION]
        assert missed, "round 1, missed by 30 minutes, waits for the desk"
        assert await d.service.promotion_store.pool(GH, "halfway") is not None
