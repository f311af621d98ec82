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
from pathlib import Path

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.daemon_helpers import SAST, running
from tests.promotions.helpers import GH, MEMBERS, at, scripted_week_standings_and_boards
from tests.telemetry_helpers import Publisher, game


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
        async with asyncio.timeout(10):  # a month on: the idle sweeper ends Thandi's session
            while await d.service.redis.exists(d.service.keys.session("1001")):
                clock.advance(30)  # (its next look: once this daemon leads, a minute apart)
                await asyncio.sleep(0.01)
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


async def test_scripted_week_standings_and_boards(gh_settings: Settings, pub: Publisher) -> None:
    await scripted_week_standings_and_boards(gh_settings, pub)
