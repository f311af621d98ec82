"""The live push over real websockets: a real daemon (real uvicorn on a free loopback port,
real Redis, real Mosquitto), the Golden Horse halfway draw day, and clients speaking the
protocol of docs/push.md with the `websockets` library (helpers in tests/push/helpers.py;
the fixtures below).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.audit.chain import Entry, Kind
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.runner import DrawRunner
from bonusd.infra.keys import Keys
from bonusd.promotions.store import PromotionStore
from bonusd.settings import Settings
from tests.daemon_helpers import Daemon, running
from tests.push.helpers import (
    GH,
    HALFWAY_AT,
    MEMBERS,
    NAMES,
    apply,
    connect,
    draw_day,
    ensure_closed,
    events,
    frozen_pool,
    golden_horse,
    recv,
    run_round,
    token,
    until,
)


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    return golden_horse(settings, tmp_path, site)


@pytest.fixture
async def day(gh_settings: Settings, redis_url: str, site: str) -> AsyncIterator[Daemon]:
    async with draw_day(gh_settings, redis_url, site) as d:
        yield d


async def test_a_draw_round_on_signage_and_crew(day: Daemon) -> None:
    d = day
    signage = await connect(d, "/ws/signage", {"token": await token(d, Role.SIGNAGE, "main")})
    crew = await connect(d, "/ws/crew", {"token": await token(d, Role.CREW)})
    first = await recv(signage)
    assert first["type"] == "snapshot"
    assert first["stream"] == f"signage:{d.service.settings.site}:main"
    state = first["state"]
    assert set(state) == {
        "promotion",
        "next_draw",
        "multiplier",
        "boards",
        "announcements",
        "jackpot",
        "upcoming",
    }
    assert state["promotion"]["id"] == GH
    assert state["promotion"]["title"] == "Mega Points Chase"
    assert state["upcoming"][0]["kind"] == "draw" and state["upcoming"][0]["round"] == 1
    assert state["multiplier"]["factor"] == 3
    assert state["multiplier"]["ends_at"] == "2026-11-07T21:00:00+02:00"
    nxt = state["next_draw"]
    assert (nxt["draw"], nxt["round"], nxt["at"]) == ("halfway", 1, "2026-11-07T19:00:00+02:00")
    assert len(nxt["commitment"]) == 64  # the seed commitment, published before the draw
    assert state["announcements"] == []
    crew_first = await recv(crew)
    assert crew_first["type"] == "snapshot"
    desk = crew_first["state"].pop("desk")  # the desk's change marker (deskview)
    assert crew_first["state"] == {"alerts": [], "recent": []}
    assert desk["audit"] > 0 and desk["draws"][f"{GH}.halfway"] == "activation"

    await ensure_closed(d)
    desk = await d.client(Role.DESK)
    r = await desk.post(f"/promotions/{GH}/draws/halfway/run", json={"round": 1})
    assert r.status_code == 200, r.text
    winners = {c["card"] for c in r.json()["claims"]}
    assert len(winners) == 5

    seen = await until(signage, lambda m: len(events([m], "winner")) == 5)
    view = dict(state)
    seq = apply(view, [first, *seen])
    assert len(view["announcements"]) == 5
    for row in view["announcements"]:
        assert row["state"] == "announced" and row["deadline"] == "2026-11-07T18:56:30+02:00"
        assert row["card"].startswith("****") and len(row["card"]) == 8
        assert row["name"].endswith("****") and ". S" in row["name"]
    text = json.dumps(seen)
    for card in winners:
        assert card not in text and NAMES[card] not in text
    assert view["next_draw"]["round"] == 2  # round 1 is drawn

    crew_seen = await until(crew, lambda m: len(m.get("set", {}).get("alerts", [])) == 5)
    assert len(events(crew_seen, "alert")) == 5
    alerts = crew_seen[-1]["set"]["alerts"]
    assert {a["card"] for a in alerts} == winners
    one = alerts[0]
    assert one["actions"] == ["present"]
    assert one["endpoints"] == {
        "present": f"/promotions/{GH}/draws/halfway/claims/{one['claim']}/present"
    }
    assert one["name"] == NAMES[one["card"]]
    assert NAMES[one["card"]] in one["announcement"]
    assert one["deadline"] == "2026-11-07T18:56:30+02:00"

    # the crew presents the winner over HTTP: both streams follow
    handheld = await d.client(Role.CREW)
    r = await handheld.post(f"/promotions/{GH}/draws/halfway/claims/{one['claim']}/present")
    assert r.status_code == 200, r.text
    more = await until(signage, lambda m: bool(events([m], "outcome")))
    apply(view, more, seq)
    (outcome,) = events(more, "outcome")
    assert outcome["claim"] == one["claim"] and outcome["state"] == "presented"
    crew_more = await until(crew, lambda m: bool(events([m], "state")))
    after = next(a for a in crew_more[-1]["set"]["alerts"] if a["claim"] == one["claim"])
    assert after["state"] == "presented" and after["actions"] == ["verify"]
    for client in (signage, crew):
        await client.close()
    await desk.aclose()
    await handheld.aclose()


# -- resume, gaps, epochs ------------------------------------------------------------------------


async def test_resume_replays_the_missed_deltas_in_order(day: Daemon) -> None:
    d = day
    hello = {"token": await token(d, Role.SIGNAGE, "main")}
    a = await connect(d, "/ws/signage", hello)
    snap = await recv(a)
    epoch, n = snap["epoch"], snap["seq"]
    await run_round(d, 1)
    (delta,) = await until(a, lambda m: bool(events([m], "winner")))
    assert delta["seq"] == n + 1
    await run_round(d, 2)
    (delta2,) = await until(a, lambda m: bool(events([m], "winner")))
    assert delta2["seq"] == n + 2

    # a client that saw n and missed what followed (a gap) resumes from n: the deltas it
    # missed come first, in order, the same messages as everybody else's
    b = await connect(d, "/ws/signage", {**hello, "resume": {"epoch": epoch, "seq": n}})
    assert [await recv(b), await recv(b)] == [delta, delta2]
    # up to date: nothing is resent, the next change arrives as the next delta
    c = await connect(d, "/ws/signage", {**hello, "resume": {"epoch": epoch, "seq": n + 2}})
    await run_round(d, 3)
    (delta3,) = await until(c, lambda m: bool(events([m], "winner")))
    assert delta3["seq"] == n + 3
    assert (await until(b, lambda m: m["seq"] == n + 3))[-1] == delta3

    # what cannot be replayed gets a fresh snapshot: another epoch, a seq ahead, bad input
    for resume in (
        {"epoch": "0" * 16, "seq": n},
        {"epoch": epoch, "seq": n + 99},
        {"epoch": epoch, "seq": -1},
    ):
        e = await connect(d, "/ws/signage", {**hello, "resume": resume})
        first = await recv(e)
        assert first["type"] == "snapshot" and first["seq"] == n + 3
        assert first["epoch"] == epoch
        await e.close()
    for ws in (a, b, c):
        await ws.close()


async def test_resume_from_beyond_the_ring_gets_a_snapshot(
    gh_settings: Settings, redis_url: str, site: str
) -> None:
    await frozen_pool(redis_url, site)
    small = gh_settings.model_copy(update={"push_resume_deltas": 1})
    async with running(small, ManualClock(HALFWAY_AT - dt.timedelta(minutes=5))) as d:
        await d.http.post("/members/import", content=MEMBERS, headers={"content-type": "text/csv"})
        await d.service.scheduler.caught_up.wait()
        hello = {"token": await token(d, Role.SIGNAGE, "main")}
        a = await connect(d, "/ws/signage", hello)
        snap = await recv(a)
        for number in (1, 2):
            await run_round(d, number)
            await until(a, lambda m, k=number: any(e["round"] == k for e in events([m], "winner")))
        resume = {"epoch": snap["epoch"], "seq": snap["seq"]}  # 2 behind, the ring holds 1
        b = await connect(d, "/ws/signage", {**hello, "resume": resume})
        first = await recv(b)
        assert first["type"] == "snapshot" and first["seq"] == snap["seq"] + 2
        # one behind: replayed
        c = await connect(d, "/ws/signage", {**hello, "resume": {**resume, "seq": snap["seq"] + 1}})
        assert (await recv(c))["type"] == "delta"
        for ws in (a, b, c):
            await ws.close()


async def test_a_restarted_daemon_is_a_new_epoch(
    gh_settings: Settings, redis_url: str, site: str
) -> None:
    await frozen_pool(redis_url, site)
    clock = ManualClock(HALFWAY_AT - dt.timedelta(minutes=5))
    async with running(gh_settings, clock) as d:
        await d.service.scheduler.caught_up.wait()
        signage = await token(d, Role.SIGNAGE, "main")
        ws = await connect(d, "/ws/signage", {"token": signage})
        before = await recv(ws)
        await ws.close()
    async with running(gh_settings, clock) as d:
        resume = {"epoch": before["epoch"], "seq": before["seq"]}
        ws = await connect(d, "/ws/signage", {"token": signage, "resume": resume})
        after = await recv(ws)
        assert after["type"] == "snapshot"
        assert after["epoch"] != before["epoch"]
        assert after["state"]["next_draw"] == before["state"]["next_draw"]
        await ws.close()


# -- several daemons: the notification travels through Redis --------------------------------------


async def test_every_audit_commit_is_announced_in_its_transaction(
    redis_url: str, site: str, aredis: aioredis.Redis
) -> None:
    keys = Keys("bonusd", site)
    audit = AuditStore(aredis, keys)
    listener = aredis.pubsub(ignore_subscribe_messages=True)
    await listener.subscribe(f"{keys.base}notify")
    entry = Entry(HALFWAY_AT, "desk-1 (desk)", Kind.EXCEPTION, {"draw_id": "x", "note": "n"})
    await audit.commit([entry], subject=f"{GH}.halfway", expect=0)
    await audit.append(at=HALFWAY_AT, actor="admin", kind=Kind.RULE_CHANGE, payload={})
    heard = []
    async with asyncio.timeout(10):
        while len(heard) < 2:
            message = await listener.get_message(timeout=1)
            if message is not None:
                heard.append(message["data"])
    assert heard == [f"{GH}.halfway", "rule_change"]
    await listener.aclose()


async def test_a_round_drawn_by_another_daemon_reaches_the_screens(day: Daemon) -> None:
    """The round is committed by a desk that is not this daemon's (as another daemon of the
    site would): the screens learn it from Redis."""
    d = day
    svc = d.service
    ws = await connect(d, "/ws/signage", {"token": await token(d, Role.SIGNAGE, "main")})
    await recv(ws)
    other = DrawRunner(
        redis=svc.redis,
        keys=svc.keys,
        audit=AuditStore(svc.redis, svc.keys),
        promotions=PromotionStore(svc.redis, svc.keys, list(svc.promotions)),
        clock=svc.clock,
        seal=svc.draws.seeds.seal,
    )
    await ensure_closed(d)
    records = await other.run_round(GH, "halfway", 1)
    cards = {r.payload["card"] for r in records if r.kind == "pick"}
    seen = await until(ws, lambda m: len(events([m], "winner")) == 5)
    assert {e["card"] for e in events(seen, "winner")} == {"****" + c[-4:] for c in cards}
    await ws.close()
