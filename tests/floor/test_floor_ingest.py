"""The live floor end to end: telemetry published over MQTT, results read through the API."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from bonusd.clocks.clock import ManualClock
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import SAST, Daemon
from tests.telemetry_helpers import Publisher, event, game, rating

EVENING = dt.datetime(2026, 10, 3, 17, 0, tzinfo=SAST)
MEMBERS_CSV = """card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit
1001,Thandi Mokoena,Q,true,1980-02-01,true,false,,
1002,Johan Botha,J,false,1975-06-30,false,false,,2026-07-01
"""
DEVICES_CSV = """device,kind,area,bank,position
EGM-1,egm,main,B1,1
EGM-2,egm,smoking,S4,2
EGM-3,egm,main,B1,3
T1,table,main,Pit 1,Roulette 1
"""


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(dt.datetime(2026, 10, 4, 9, 0, tzinfo=SAST))


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


async def _registries(d: Daemon) -> None:
    for path, body in (("/members/import", MEMBERS_CSV), ("/devices/import", DEVICES_CSV)):
        r = await d.http.post(path, content=body, headers={"content-type": "text/csv"})
        assert r.status_code == 200, r.text


async def test_scripted_evening_exact_totals(daemon: Daemon, pub: Publisher) -> None:
    await _registries(daemon)
    t = EVENING
    first_game = game("1001", t.replace(minute=5), wager=1000, points=10)
    sent = pub.egm(
        "EGM-1",
        event("card_in", "1001", t),
        first_game,
        game("1001", t.replace(minute=6), wager=2000, points=20, win=5000),
        game("1001", t.replace(minute=7), wager=500, points=5),
    )
    # moving to another machine without a card-out moves the player
    sent += pub.egm(
        "EGM-2",
        event("card_in", "1001", t.replace(hour=18)),
        game("1001", t.replace(hour=18, minute=1), wager=1000, points=10),
    )
    moved = await _after(daemon, sent, "/members/1001")
    assert moved["active"]["device"] == "EGM-2"
    assert moved["active"]["area"] == "smoking"
    sent += pub.egm("EGM-2", event("card_out", "1001", t.replace(hour=18, minute=30)))
    sent += pub.table(
        "T1",
        rating("rating_start", "1001", t.replace(hour=19), seat=2),
        rating(
            "rating_update", "1001", t.replace(hour=19, minute=10), 2, wager_cents=20000, points=200
        ),
        rating(
            "rating_end", "1001", t.replace(hour=19, minute=20), 2, wager_cents=10000, points=100
        ),
    )
    # QoS 1 redelivery or a replaying board: the same id again is applied once
    sent += pub.egm("EGM-1", first_game)
    # 07:59:59 still belongs to the gaming day that opened at 08:00 the day before
    sent += pub.egm(
        "EGM-3",
        game("1002", dt.datetime(2026, 10, 4, 7, 59, 59, tzinfo=SAST), wager=100, points=1),
        game("1002", dt.datetime(2026, 10, 4, 8, 0, 0, tzinfo=SAST), wager=300, points=3),
    )
    sent += pub.egm("EGM-1", game("9999", t.replace(hour=21), wager=100, points=1))
    await daemon.wait_committed(sent)

    day = await daemon.get("/members/1001/days/2026-10-03")
    assert day == {
        "card": "1001",
        "gaming_day": "2026-10-03",
        "slots_points": 45,
        "tables_points": 300,  # kept apart from slots, never summed
        "spend_cents": 34500,
        "slots_spend_cents": 4500,
        "tables_spend_cents": 30000,
        "win_cents": 5000,
        "games": 4,
        "ratings": 1,
        "visit": True,
    }
    late = await daemon.get("/members/1002/days/2026-10-03")
    early = await daemon.get("/members/1002/days/2026-10-04")
    assert (late["slots_points"], late["spend_cents"], late["visit"]) == (1, 100, True)
    assert (early["slots_points"], early["spend_cents"]) == (3, 300)
    none = await daemon.get("/members/1001/days/2026-10-04")
    assert none["visit"] is False and none["spend_cents"] == 0

    member = await daemon.get("/members/1001")
    assert member["active"] is None  # card-out, then rating end
    assert member["member"]["tier"] == "Q"
    active = await daemon.get("/floor/active")
    assert sorted((a["card"], a["device"], a["area"]) for a in active) == [
        ("1002", "EGM-3", "main"),
        ("9999", "EGM-1", "main"),
    ]
    unknown = await daemon.get("/members/9999")
    assert unknown["registered"] is False and unknown["flagged_unregistered"] is True
    stats = await daemon.service.store.stats()
    assert stats["applied"] == sent - 1 and stats["duplicates"] == 1


async def test_active_floor_filters_and_table_seats(daemon: Daemon, pub: Publisher) -> None:
    await _registries(daemon)
    t = EVENING
    sent = pub.egm("EGM-1", event("card_in", "1001", t))
    sent += pub.egm("EGM-2", event("card_in", "1002", t))
    sent += pub.table("T1", rating("rating_start", "3003", t, seat=1))
    sent += pub.table("T1", rating("rating_start", "3004", t, seat=4))
    await daemon.wait_committed(sent)
    main_egm = await daemon.get("/floor/active?area=main&kind=egm")
    assert [a["card"] for a in main_egm] == ["1001"]
    tables = await daemon.get("/floor/active?kind=table")
    assert sorted((a["card"], a["seat"]) for a in tables) == [("3003", 1), ("3004", 4)]
    # a new card at an occupied EGM means the previous card-out was lost
    sent += pub.egm("EGM-1", event("card_in", "5005", t.replace(minute=10)))
    await daemon.wait_committed(sent)
    assert (await daemon.get("/members/1001"))["active"] is None
    bad = await daemon.http.get("/floor/active?kind=slot")
    assert bad.status_code == 422


async def test_idle_timeout_ends_session_with_lost_card_out(
    daemon: Daemon, pub: Publisher, clock: ManualClock
) -> None:
    now = clock.now()
    sent = pub.egm("EGM-1", event("card_in", "1001", now), game("1001", now, 100, 1))
    await daemon.wait_committed(sent)
    assert len(await daemon.get("/floor/active")) == 1
    clock.advance(29 * 60)  # not yet idle long enough (timeout 30 minutes)
    clock.advance(60 * 2)
    for _ in range(1000):  # the idle sweeper's next pass: up to 20 s on a busy machine
        if not await daemon.get("/floor/active"):
            break
        await _tick()
        # a pass still running when the clock last moved sleeps until a minute after it:
        # keep the clock moving so that its next pass always comes
        clock.advance(10)
    assert await daemon.get("/floor/active") == []
    assert (await daemon.service.store.stats())["idle_sessions_ended"] == 1


async def _after(d: Daemon, sent: int, path: str) -> Any:
    await d.wait_committed(sent)
    return await d.get(path)


async def _tick() -> None:
    await asyncio.sleep(0.02)


async def test_member_import_over_http_json_and_errors(daemon: Daemon) -> None:
    members = [{"card": "4242", "name": "Zanele Khumalo", "tier": "A", "app_user": True}]
    ok = await daemon.http.post("/members/import", json=members)
    assert ok.status_code == 200
    assert ok.json() == {"imported": 1}
    assert (await daemon.get("/members/4242"))["member"]["tier"] == "A"
    # re-import updates
    members[0]["tier"] = "K"
    await daemon.http.post("/members/import", json=members)
    assert (await daemon.get("/members/4242"))["member"]["tier"] == "K"
    bad = await daemon.http.post(
        "/members/import",
        content="card,name,tier\n1,A,Q\n2,B,X\n",
        headers={"content-type": "text/csv"},
    )
    assert bad.status_code == 422
    assert bad.json()["errors"] == [
        {"row": 3, "field": "tier", "problem": "Input should be '10', 'J', 'Q', 'K' or 'A'"}
    ]
    assert (await daemon.http.get("/members/1")).status_code == 404  # nothing written
