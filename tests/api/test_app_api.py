"""The casino app's API (bonusd/api/appapi.py, docs/app-api.md) through a running daemon
with an `app` token: a member's standings, activation with channel `app` only while the
member plays, published boards masked, and never another member's data.

Golden Horse, with play over MQTT in the halfway draw's window: Thandi (…1001) and Johan
(…1002) qualify on slots, Sipho (…1003, excluded) plays the most, Lerato (…1004) is under
age; 7770001 is no member.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.promotions import Side
from bonusd.promotions.kioskview import NOT_ELIGIBLE
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT, SAST, Daemon, running
from tests.telemetry_helpers import Publisher, event, game

GH = "golden-horse-mega-points-chase"
MEMBERS = """card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit
6001001001,Thandi Mokoena,Q,true,1980-02-01,true,false,,
6001001002,Johan Botha,J,false,1975-06-30,false,false,,
6001001003,Sipho Ndlovu,A,false,1970-01-01,false,true,self-exclusion order 42,
6001001004,Lerato Dlamini,J,false,2010-01-01,false,false,,
"""
OTHERS = (
    "6001001002",
    "6001001003",
    "6001001004",
    "Johan",
    "Botha",
    "Sipho",
    "Ndlovu",
    "Lerato",
    "Dlamini",
)
DRAW_DAY = dt.datetime(2026, 11, 7, 12, 0, tzinfo=SAST)
ACTIVATIONS = "/app/members/{card}/activations"


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 10, day, hour, minute, tzinfo=SAST)


@pytest.fixture
def app_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return settings.model_copy(update={"promotions": folder})


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


@pytest.fixture
async def floor(
    app_settings: Settings, pub: Publisher
) -> AsyncIterator[tuple[Daemon, ManualClock, Publisher]]:
    """Members imported and a week of play in the halfway window; the clock at 12:00 on
    the halfway draw day (activation open, the bin closes at 19:00)."""
    clock = ManualClock(at(10, 9))
    async with running(app_settings, clock) as d:
        r = await d.http.post(
            "/members/import", content=MEMBERS, headers={"content-type": "text/csv"}
        )
        assert r.status_code == 200, r.text
        sent = 0
        for n, day, games, points in (
            (1, 6, 3, 8000),
            (2, 7, 3, 7000),
            (3, 8, 4, 25000),
            (4, 8, 3, 9000),
        ):
            card, egm = f"600100100{n}", f"EGM-{n}"
            sent += pub.egm(
                egm, *(game(card, at(day, 20, i), 300000, points) for i in range(games))
            )
            sent += pub.egm(egm, event("card_out", card, at(day, 23)))  # nobody plays now
        await d.wait_committed(sent)
        clock.set(DRAW_DAY)
        yield d, clock, pub


@pytest.fixture
async def app(floor: tuple[Daemon, ManualClock, Publisher]) -> AsyncIterator[httpx.AsyncClient]:
    client = await floor[0].client(Role.APP)
    yield client
    await client.aclose()


def _no_other_member(text: str) -> None:
    for word in OTHERS:
        assert word not in text, word


async def test_a_members_standings_through_the_app(
    floor: tuple[Daemon, ManualClock, Publisher], app: httpx.AsyncClient
) -> None:
    d, _, _ = floor
    r = await app.get("/app/members/6001001001")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["neutral"] is False
    assert body["member"] == {"masked_name": "T. M****", "card_last4": "1001"}
    draws = {x["draw"]: x for x in body["draws"]}
    assert list(draws) == ["halfway", "bonus", "final"]
    halfway = draws["halfway"]
    desk = await d.get(f"/promotions/{GH}/draws/halfway/standings/6001001001")
    assert (halfway["tickets"], halfway["entries"]) == (desk["tickets"], desk["entries"]) == (26, 0)
    assert halfway["status"] == "not_activated"
    assert halfway["lines"] == [
        "slots: qualified (24,000 of 20,000 points)",
        "tables: 0 of 20,000 points — 20,000 to go",
        "+24 from slots points",
        "+2 for gaming visits",
    ]
    assert halfway["activation"]["open_now"] is True
    assert halfway["activation"]["closes"] == "2026-11-07T19:00:00+02:00"
    assert halfway["draw_times"][0] == "2026-11-07T19:00:00+02:00"
    assert all(x["receipt"] is None for x in body["draws"])
    _no_other_member(r.text)
    for word in ("Thandi", "Mokoena", "1980", "tier", "self-exclusion"):
        assert word not in r.text, word


async def test_excluded_under_age_and_unknown_cards_read_the_same(app: httpx.AsyncClient) -> None:
    bodies = {
        card: (await app.get(f"/app/members/{card}")).text for card in ("6001001003", "6001001004")
    }
    unknown = (await app.get("/app/members/7770001")).text
    assert bodies == {"6001001003": unknown, "6001001004": unknown}
    body = json.loads(unknown)
    assert dt.datetime.fromisoformat(body.pop("as_of")) == DRAW_DAY
    assert body == {
        "neutral": True,
        "message": "nothing to show for this card — please see the promotions desk",
        "member": None,
        "draws": [],
    }


@pytest.mark.parametrize(
    "card",
    ["12ab!", "1" * 33, "1" * 200, "10%0A01", "10%0001", "10%2F01", "%E2%80%AE6001001001", "10 01"],
)
async def test_bad_cards_are_422(app: httpx.AsyncClient, card: str) -> None:
    r = await app.get(f"/app/members/{card}")
    assert r.status_code in (404, 422), (card, r.status_code)  # a "/" splits the path: 404
    if "%2F" not in card:
        assert r.status_code == 422, (card, r.text)
    r = await app.post(
        f"/app/members/{card}/activations", json={"promotion": GH, "draw": "halfway"}
    )
    assert r.status_code in (404, 422), (card, r.status_code)


async def test_activation_only_while_the_member_plays(
    floor: tuple[Daemon, ManualClock, Publisher], app: httpx.AsyncClient
) -> None:
    d, clock, pub = floor
    body = {"promotion": GH, "draw": "halfway"}
    idle = await app.post(ACTIVATIONS.format(card="6001001001"), json=body)
    assert idle.status_code == 409, idle.text
    assert "only while you are playing (carded in or rated)" in idle.json()["detail"]

    sent = d.service.ingest.committed + pub.egm("EGM-1", event("card_in", "6001001001", DRAW_DAY))
    await d.wait_committed(sent)
    ok = await app.post(ACTIVATIONS.format(card="6001001001"), json=body)
    assert ok.status_code == 200, ok.text
    done = ok.json()
    assert dt.datetime.fromisoformat(done.pop("at")) == DRAW_DAY
    assert done == {"promotion": GH, "draw": "halfway", "channel": "app"}
    clock.advance(60)
    again = await app.post(ACTIVATIONS.format(card="6001001001"), json=body)
    assert again.json() == ok.json()  # the first activation stands
    view = (await app.get("/app/members/6001001001")).json()
    halfway = next(x for x in view["draws"] if x["draw"] == "halfway")
    assert halfway["status"] == "entered"
    assert halfway["activation"]["channel"] == "app"
    assert halfway["entries"] == 26

    for card in (
        "6001001003",
        "6001001004",
        "7770001",
    ):  # excluded, under age, no member: one answer
        refused = await app.post(ACTIVATIONS.format(card=card), json=body)
        assert refused.status_code == 409, (card, refused.text)
        assert refused.json() == {"detail": NOT_ELIGIBLE}
    missing = await app.post(
        ACTIVATIONS.format(card="6001001001"), json={"promotion": GH, "draw": "x"}
    )
    assert missing.status_code == 404
    bad = await app.post(ACTIVATIONS.format(card="6001001001"), json={"promotion": GH})
    assert bad.status_code == 422

    clock.set(dt.datetime(2026, 11, 7, 19, 0, 1, tzinfo=SAST))
    late = await app.post(ACTIVATIONS.format(card="6001001002"), json=body)
    assert late.status_code == 409
    assert "the entry bin closed at 19:00 on 07 Nov 2026" in late.json()["detail"]


async def test_boards_come_masked(
    floor: tuple[Daemon, ManualClock, Publisher], app: httpx.AsyncClient
) -> None:
    d, clock, _ = floor
    await d.service.promotion_store.publish_board(GH, "halfway", Side.SLOTS, clock.now())
    r = await app.get(f"/app/promotions/{GH}/draws/halfway/leaderboards/slots")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["published_at"] is not None
    assert [(e["position"], e["name"], e["card"]) for e in body["entries"]] == [
        (1, "T. M****", "****1001"),
        (2, "J. B****", "****1002"),
    ]  # Sipho is excluded and Lerato under age: never on a board
    for word in ("6001001001", "6001001002", "Thandi", "Mokoena", "Johan", "Botha"):
        assert word not in r.text, word
    none = await app.get(f"/app/promotions/{GH}/draws/bonus/leaderboards/tables")
    assert none.json()["entries"] == []
    missing = await app.get(f"/app/promotions/{GH}/draws/nope/leaderboards/slots")
    assert missing.status_code == 404


async def test_roles_and_rate_limits(
    floor: tuple[Daemon, ManualClock, Publisher], app: httpx.AsyncClient
) -> None:
    d, clock, _ = floor
    kiosk = await d.client(Role.KIOSK)
    try:
        for method, path in (
            ("GET", "/app/members/6001001001"),
            ("POST", ACTIVATIONS.format(card="6001001001")),
            ("GET", f"/app/promotions/{GH}/draws/halfway/leaderboards/slots"),
        ):
            r = await kiosk.request(method, path, json={"promotion": GH, "draw": "halfway"})
            assert r.status_code == 403, (method, path)
    finally:
        await kiosk.aclose()
    for path in ("/members/6001001001", f"/promotions/{GH}/draws/halfway/standings/6001001001"):
        assert (await app.get(path)).status_code == 403, path  # the desk's and kiosk's reads

    limit = d.service.tokens.limiter.limits.standings_per_card
    clock.set(clock.now().replace(second=0) + dt.timedelta(minutes=1))  # a fresh window
    codes = [(await app.get("/app/members/6001001002")).status_code for _ in range(limit.count + 1)]
    assert codes == [200] * limit.count + [429]
    over = await app.get("/app/members/6001001002")
    assert int(over.headers["Retry-After"]) >= 1
    assert "too many app lookups for card 6001001002" in over.json()["detail"]
    assert (await app.get("/app/members/6001001001")).status_code == 200  # another card
    clock.advance(limit.window_s)
    assert (await app.get("/app/members/6001001002")).status_code == 200
