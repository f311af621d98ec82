"""A scripted week of the Golden Horse promotion driven over MQTT through the daemon;
standings, leaderboards, activations and the frozen pool read back through the API.

Expectations worked out by hand from the seed (cl. 7, 8) and DOMAIN.md:
- 3x multiplier on 03 Oct 17h00-22h00 (launch day), all play, slots and tables.
- Halfway: window 01 Oct 08:00 - 06 Nov 07:59, 20,000 points per side, 1 ticket per
  1,000 points on each qualified side, +2 per gaming visit once per member if a side
  qualified; bin closes 07 Nov 19:00.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT, SAST, running
from tests.telemetry_helpers import Publisher, event, game, rating

GH = "golden-horse-mega-points-chase"
MEMBERS = """card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit
1001,Thandi Mokoena,Q,true,1980-02-01,true,false,,
1002,Johan Botha,J,false,1975-06-30,false,false,,
1003,Sipho Ndlovu,A,false,1970-01-01,false,true,self-exclusion,
"""


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 10, day, hour, minute, tzinfo=SAST)


@pytest.fixture
def promotions_dir(tmp_path: Path, site: str) -> Path:
    """The seed promotion file, moved to this test's site."""
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return folder


@pytest.fixture
def gh_settings(settings: Settings, promotions_dir: Path) -> Settings:
    """The suite's daemon settings, running the seed promotion moved to this test's site."""
    return settings.model_copy(update={"promotions": promotions_dir})


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


async def test_scripted_week_standings_and_boards(gh_settings: Settings, pub: Publisher) -> None:
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


async def test_activation_rules_and_frozen_pool(gh_settings: Settings, pub: Publisher) -> None:
    clock = ManualClock(at(10, 9))
    async with running(gh_settings, clock) as d:
        await d.http.post("/members/import", content=MEMBERS, headers={"content-type": "text/csv"})
        sent = pub.egm("EGM-2", *(game("1002", at(6, 20, i), 300000, 10000) for i in range(3)))
        sent += pub.egm("EGM-1", *(game("1001", at(7, 20, i), 300000, 10000) for i in range(3)))
        await d.wait_committed(sent)
        kiosk = await d.client(Role.KIOSK)
        url = f"/promotions/{GH}/draws/halfway/activations"
        early = await kiosk.post(url, json={"card": "1002", "channel": "kiosk"})
        assert early.status_code == 409
        assert "activation opens at 08:00 on 07 Nov 2026" in early.json()["detail"]

        clock.set(dt.datetime(2026, 11, 7, 12, 0, tzinfo=SAST))
        ok = await kiosk.post(url, json={"card": "1002", "channel": "kiosk"})
        assert ok.status_code == 200, ok.text
        app = await kiosk.post(url, json={"card": "1001", "channel": "app"})
        assert app.status_code == 409  # the app registers only while the member plays
        assert "only while you are playing" in app.json()["detail"]
        unknown = await kiosk.post(url, json={"card": "7777", "channel": "kiosk"})
        assert unknown.status_code == 404
        standing = await d.get(f"/promotions/{GH}/draws/halfway/standings/1002")
        assert standing["activated"] is True
        assert standing["entries"] == 32

        clock.set(dt.datetime(2026, 11, 7, 19, 0, 1, tzinfo=SAST))  # the bin closes at 19:00
        async with asyncio.timeout(10):
            while True:
                promo = await d.get(f"/promotions/{GH}")
                halfway = next(x for x in promo["draws"] if x["id"] == "halfway")
                if halfway["state"] == "frozen":
                    break
                await asyncio.sleep(0.02)
        pool = await d.service.promotion_store.pool(GH, "halfway")
        assert pool is not None
        assert pool.entries(pool.tombolas[0][0]) == {"1002": 32}  # only activated members
        assert halfway["pool_sha256"] == pool.sha256
        late = await kiosk.post(url, json={"card": "1001", "channel": "kiosk"})
        assert late.status_code == 409
        assert "closed" in late.json()["detail"]
        await kiosk.aclose()


async def test_rule_change_by_reload_is_recorded_and_applied(
    gh_settings: Settings, pub: Publisher, promotions_dir: Path
) -> None:
    clock = ManualClock(at(10, 9))
    async with running(gh_settings, clock) as d:
        await d.http.post("/members/import", content=MEMBERS, headers={"content-type": "text/csv"})
        sent = pub.egm("EGM-2", *(game("1002", at(6, 20, i), 300000, 7000) for i in range(3)))
        await d.wait_committed(sent)
        standing = f"/promotions/{GH}/draws/halfway/standings/1002"
        assert (await d.get(standing))["qualified"] is True  # 21,000 of 20,000

        path = promotions_dir / f"{GH}.toml"
        original = path.read_text()
        marker = 'qualification = { kind = "threshold", threshold = 20000'
        assert marker in original
        path.write_text(original.replace(marker, marker.replace("20000", "25000"), 1))
        r = await d.http.post("/promotions/reload")
        assert r.status_code == 200, r.text
        (record,) = r.json()["changes"]
        assert record["actor"].startswith("test suite")
        assert "draws.halfway.qualification.threshold: 20000 -> 25000" in record["changes"]
        after = await d.get(standing)
        assert after["qualified"] is False
        assert any("21,000 of 25,000" in x for x in after["reasons"])

        path.write_text(original.replace("threshold = 20000", "threshold = -5", 1))
        broken = await d.http.post("/promotions/reload")
        assert broken.status_code == 422
        assert f"{GH}.toml" in broken.json()["detail"]
        assert "threshold" in broken.json()["detail"]
        assert (await d.get(standing))["qualified"] is False  # the 25,000 rule still runs

        log = await d.get("/promotions/changes")
        assert [x["changes"] for x in log] == [record["changes"]]


async def test_scheduled_actions_run_once_across_restarts(gh_settings: Settings) -> None:
    """Each timed action runs once at its instant on the daemon clock; a restarted daemon
    runs what it missed and nothing twice."""
    history = f"bonusd:{{{gh_settings.site}}}:lbhist:{GH}:halfway:slots"
    pool_key = f"bonusd:{{{gh_settings.site}}}:pool:{GH}:launch"
    clock = ManualClock(dt.datetime(2026, 10, 1, 9, 0, tzinfo=SAST))
    async with running(gh_settings, clock) as d:
        r = d.service.redis
        assert await r.llen(history) == 0  # the first Friday publication is 02 Oct 08:00
        clock.set(dt.datetime(2026, 10, 2, 8, 0, 1, tzinfo=SAST))
        async with asyncio.timeout(10):
            while await r.llen(history) < 1:
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        assert await r.llen(history) == 1
    # down over the launch bin close (03 Oct 20:00) and the next Friday (09 Oct 08:00)
    clock.set(dt.datetime(2026, 10, 9, 12, 0, tzinfo=SAST))
    async with running(gh_settings, clock) as d:
        r = d.service.redis
        async with asyncio.timeout(10):
            while await r.llen(history) < 2 or not await r.exists(pool_key):
                await asyncio.sleep(0.02)
        frozen = await r.get(pool_key)
    async with running(gh_settings, clock) as d:
        r = d.service.redis
        await asyncio.sleep(0.5)  # a third start: everything already ran
        assert d.service.scheduler.fired == 0
        assert await r.llen(history) == 2
        assert await r.get(pool_key) == frozen
