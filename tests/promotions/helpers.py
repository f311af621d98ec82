"""What the promotion tests share: Golden Horse's members file and times, and the
scripted week of play whose standings and boards the live test (and the Redis Cluster
test) check."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
from pathlib import Path

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.promotions import (
    Draw,
    Promotion,
    load_promotion,
)
from bonusd.registry.masking import public_member
from bonusd.settings import Settings
from tests.daemon_helpers import SAST, running
from tests.telemetry_helpers import Publisher, event, game, rating

GH = "golden-horse-mega-points-chase"


MEMBERS = """card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit
1001,Thandi Mokoena,Q,true,1980-02-01,true,false,,
1002,Johan Botha,J,false,1975-06-30,false,false,,
1003,Sipho Ndlovu,A,false,1970-01-01,false,true,self-exclusion,
"""


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 10, day, hour, minute, tzinfo=SAST)


async def scripted_week_standings_and_boards(gh_settings: Settings, pub: Publisher) -> None:
    clock = ManualClock(at(10, 9))
    async with running(gh_settings, clock) as d:
        r = await d.http.post(
            "/members/import", content=MEMBERS, headers={"content-type": "text/csv"}
        )
        assert r.status_code == 200
        sent = 0
        # Thandi: 5,000 base points inside the 3x window (= 15,000), 6,000 the next day:
        # 21,000 slots points, over 20,000 only thanks to the 3x window.
        sent += pub.egm("EGM-1", event("card_in", "1001", at(3, 17, 59)))
        sent += pub.egm("EGM-1", *(game("1001", at(3, 18, i), 25000, 1000) for i in range(5)))
        sent += pub.egm("EGM-1", *(game("1001", at(4, 12, i), 30000, 1500) for i in range(4)))
        # 07:30 on 06 Oct still belongs to the gaming day of 05 Oct (one visit, not two)
        sent += pub.table(
            "RT-1",
            rating("rating_start", "1001", at(5, 22), 3),
            rating("rating_update", "1001", at(5, 23), 3, wager_cents=500000, points=5000),
            rating("rating_end", "1001", at(6, 7, 30), 3, wager_cents=400000, points=4000),
        )
        # Johan: 30,000 slots points on one day, outside any multiplier window
        sent += pub.egm("EGM-2", *(game("1002", at(6, 20, i), 300000, 10000) for i in range(3)))
        # Sipho is excluded: lots of points, yet no board and no tickets
        sent += pub.egm("EGM-3", *(game("1003", at(7, 20, i), 900000, 25000) for i in range(4)))
        await d.wait_committed(sent)

        thandi = await d.get(f"/promotions/{GH}/draws/halfway/standings/1001")
        assert thandi["sides"]["slots"] == {
            "points": 21000,
            "threshold": 20000,
            "qualified": True,
            "tickets": 21,
        }
        assert thandi["sides"]["tables"]["points"] == 9000
        assert thandi["sides"]["tables"]["qualified"] is False
        assert thandi["visits"] == 3  # 03, 04 and 05 Oct (the 07:30 rating end is 05 Oct's)
        assert thandi["qualified"] is True
        assert thandi["tickets"] == 21 + 2 * 3
        assert any("tables" in r and "9,000 of 20,000" in r for r in thandi["reasons"])
        assert thandi["activated"] is False
        assert thandi["entries"] == 0

        johan = await d.get(f"/promotions/{GH}/draws/halfway/standings/1002")
        assert johan["tickets"] == 30 + 2 * 1
        sipho = await d.get(f"/promotions/{GH}/draws/halfway/standings/1003")
        assert sipho["tickets"] == 0
        assert sipho["eligible"] is False

        summary = await d.get(f"/promotions/{GH}/draws/halfway/summary")
        assert summary["members_with_play"] == 3
        assert summary["eligible"] == 2  # Sipho is excluded
        assert summary["qualified"] == 2
        assert summary["tickets"] == 27 + 32
        assert summary["entries"] == 0  # nobody activated yet
        assert summary["by_tier"]["Q"] == {"qualified": 1, "tickets": 27}
        assert summary["by_tier"]["J"] == {"qualified": 1, "tickets": 32}
        live = await d.get(f"/promotions/{GH}/draws/halfway/leaderboards/slots?view=live")
        assert [(e["card"], e["points"]) for e in live["entries"]] == [
            ("1002", 30000),
            ("1001", 21000),
        ]
        tables = await d.get(f"/promotions/{GH}/draws/halfway/leaderboards/tables?view=live")
        assert [(e["card"], e["points"]) for e in tables["entries"]] == [("1001", 9000)]

        # the weekly publication (Friday 08:00) comes from the scheduler on the clock
        clock.set(at(16, 8, 0) + dt.timedelta(seconds=1))
        board = f"/promotions/{GH}/draws/halfway/leaderboards/slots"
        async with asyncio.timeout(10):
            while not str((await d.get(board))["published_at"]).startswith("2026-10-16T06:00"):
                await asyncio.sleep(0.02)
        published = await d.get(board)
        assert [e["card"] for e in published["entries"]] == ["1002", "1001"]
        for role in (Role.SIGNAGE, Role.KIOSK, Role.CREW):  # the same board, masked
            async with await d.client(role) as floor:
                shown = (await floor.get(board)).json()
            assert [(e["position"], e["points"]) for e in shown["entries"]] == [
                (1, 30000),
                (2, 21000),
            ]
            masked = [public_member("Johan Botha", "1002"), public_member("Thandi Mokoena", "1001")]
            assert [{"name": e["name"], "card": e["card"]} for e in shown["entries"]] == masked
            assert not {"1001", "1002"} & {e["card"] for e in shown["entries"]}


def all_draws() -> list[tuple[Promotion, Draw]]:
    return [(p, d) for p in seeds() for d in p.draw_list]


FOLDER = Path(__file__).parents[2] / "promotions"


@functools.cache
def seeds() -> tuple[Promotion, ...]:
    return (
        load_promotion(FOLDER / "golden-horse-mega-points-chase.toml"),
        load_promotion(FOLDER / "montecasino-festa-fortuna.toml"),
    )
