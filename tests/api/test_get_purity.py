"""Reading never writes: every GET (and HEAD) route of the application, with a valid token
of every role, leaves the site's Redis keyspace and its audit trail byte for byte as they
were (docs/security.md, "GETs never change state").

The routes come from the application's own route table, so a new route is walked as soon
as it exists; one whose path parameter this test cannot fill fails it, naming the route
(add the parameter's values to FILL). Path parameters are filled with ids that exist on a
site with both seed promotions, members, devices, a week of play, activations, a drawn
round with a settled claim and its prize letter, and with ids that do not exist.

The site is snapshotted with `DUMP` of every key under its prefix (and whether the key
expires). Excluded, on purpose, is only the access accounting (`tests/redis_snapshot.py`):
the rate limiter's namespace (`rate:`: counting requests is its job), the machine tokens'
last use (`usage`) and the screens' connection markers (`online:`, while a screen's socket
is open) (docs/security.md). Every token here is valid, so no failed-check counter moves
either; a bad token's count is state by design and is not tested here.

The websockets of the live push (`/ws/signage`, `/ws/crew`) are opened with good tokens
and with refused ones (wrong role, bad frames, bad query): nothing is written but the
failed-token counters of the refused tokens (under `rate:`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import itertools
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import websockets
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import Route

from bonusd.access.auth import Role
from bonusd.api.app import api_routes
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from tests.browser.helpers import (
    ACTIVATED,
    FESTA,
    GH,
    MEMBERS,
    at,
    golden_horse_week,
    promotions_folder,
    wait_for,
)
from tests.daemon_helpers import PROJECT, Daemon, running
from tests.redis_snapshot import differences, snapshot
from tests.telemetry_helpers import Publisher, sequenced

MISSING = "no-such-thing"
# the role of each client; signage screens hold an area
ROLES: tuple[tuple[Role, str], ...] = (
    (Role.ADMIN, ""),
    (Role.DESK, ""),
    (Role.CREW, ""),
    (Role.KIOSK, ""),
    (Role.APP, ""),
    (Role.SIGNAGE, "main"),
    (Role.SIGNAGE, ""),
)
# query strings worth a second call (the handler takes another path with them)
QUERIES: dict[str, tuple[str, ...]] = {
    "/floor/active": ("area=main&kind=egm&limit=2", "limit=1&cursor=6001001003"),
    "/audit": ("kind=pool&count=5", "q=scheduler", "before=3"),
    "/audit/digest": ("day=2026-11-01", "day=2099-01-01"),
    "/promotions/{promotion}/draws/{draw}/leaderboards/{side}": ("view=live",),
    "/sms/outbox": ("status=sent", "count=1"),
    "/letters/{number}/print": ("paper=A4",),
    "/promotions/{promotion}/jackpots/{session}/{number}/eligibility": ("attempt=1",),
    "/deadletters": ("count=1",),
    "/signage": ("area=main&site=x", "area=BAD!"),
}
WEBSOCKETS = {"/ws/signage", "/ws/crew"}
# routes no call of this test answers with 2xx, and why
NEVER_200: set[str] = set()


@pytest.fixture
def both_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    folder = promotions_folder(tmp_path, site, GH, FESTA)
    # a signage logo for Golden Horse, so GET /signage/logo/{promotion} has one to read
    logo = PROJECT / "promotions" / "demo" / "golden-evening-logo.png"
    (folder / "golden-evening-logo.png").write_bytes(logo.read_bytes())
    gh = folder / f"{GH}.toml"
    gh.write_text(gh.read_text() + '\n[signage]\nlogo = "golden-evening-logo.png"\n')
    return settings.model_copy(update={"promotions": folder})


@pytest.fixture
def pub(broker: Any, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


@pytest.fixture
async def floor(
    both_settings: Settings, pub: Publisher
) -> AsyncIterator[tuple[Daemon, dict[str, Any]]]:
    """The site at 19:00:30 on the halfway draw day: round 1 drawn by the scheduler, the
    first claim taken to its prize letter, every other claim still open."""
    clock = ManualClock(at(11, 5, 10))
    async with running(both_settings, clock) as d:
        await asyncio.wait_for(d.service.scheduler.caught_up.wait(), 60)
        await golden_horse_week(d, clock, pub)
        await _v2_device(d, pub, clock)
        clock.set(at(11, 7, 12))  # activations open: a receipt printed at a kiosk
        await _print_receipt(d, ACTIVATED[0])
        clock.set(at(11, 7, 19))  # the scheduler closes the halfway bin and draws round 1
        book_path = f"/promotions/{GH}/draws/halfway/book"

        async def drawn() -> bool:
            return bool((await d.get(book_path))["claims"])

        await wait_for(drawn, "round 1 of the halfway draw")
        clock.set(at(11, 7, 19, 0, 30))
        claim = (await d.get(book_path))["claims"][0]["claim"]
        base = f"/promotions/{GH}/draws/halfway/claims/{claim}"
        crew, desk = await d.client(Role.CREW), await d.client(Role.DESK)
        try:
            prizes = {"tombola": "pooled", "round": 1, "values_cents": [50000, 100000, 200000]}
            r = await desk.post(f"/promotions/{GH}/draws/halfway/prizes", json=prizes)
            assert r.status_code == 200, r.text
            for client, step, body in (
                (crew, "present", None),
                (crew, "verify", None),
                (crew, "reveal", {"reveal": 1}),
                (desk, "letter", None),
            ):
                r = await client.post(f"{base}/{step}", json=body)
                assert r.status_code == 200, (step, r.text)
        finally:
            await crew.aclose()
            await desk.aclose()
        book = await d.get(book_path)
        letter = next(c["letter"] for c in book["claims"] if c["letter"])
        festa = next(p for p in d.service.promotions if p.id == FESTA)
        session = festa.jackpot_sessions[0].id
        desk = await d.client(Role.DESK)
        try:  # a jackpot the scheduler missed, run by the desk: an attempt to report on
            r = await desk.post(f"/promotions/{FESTA}/jackpots/{session}/1/run")
            assert r.status_code == 200, r.text
        finally:
            await desk.aclose()
        known = _fill(letter, festa.draw_list[0].id, [s.id for s in festa.jackpot_sessions])
        yield d, known


async def _v2_device(d: Daemon, pub: Publisher, clock: ManualClock) -> None:
    """A device speaking telemetry contract v2 (for GET /devices/{device}/sequence): one
    card-out of a card on no machine, which changes no totals."""
    ts = clock.now() - dt.timedelta(minutes=1)
    pub.egm("EGM-0499", sequenced("card_out", "7770002", ts, "boot-1", 1))

    async def seen() -> bool:
        return (await d.http.get("/devices/EGM-0499/sequence")).status_code == 200

    await wait_for(seen, "the v2 device's event")


async def _print_receipt(d: Daemon, card: str) -> None:
    """Receipt 1 (for GET /receipts/{number}), printed through a kiosk visit."""
    kiosk = await d.client(Role.KIOSK)
    try:
        opened = await kiosk.post("/kiosk/visits", json={"card": card})
        assert opened.status_code == 201, opened.text
        headers = {"X-Kiosk-Visit": opened.json()["visit"]}
        body = {"promotion": GH, "draw": "halfway"}
        printed = await kiosk.post("/kiosk/visit/receipts", json=body, headers=headers)
        assert printed.status_code == 201, printed.text
    finally:
        await kiosk.aclose()


async def _kiosk_visit(d: Daemon, kiosk: httpx.AsyncClient, card: str) -> dict[str, str]:
    """A visit open at the test's kiosk client: the header GET /kiosk/visit reads with."""
    opened = await kiosk.post("/kiosk/visits", json={"card": card})
    assert opened.status_code == 201, opened.text
    return {"X-Kiosk-Visit": opened.json()["visit"]}


def _fill(letter: str, festa_draw: str, sessions: list[str]) -> dict[str, Any]:
    """The values of each path parameter: ids that exist here, and ids that do not."""
    winner = ACTIVATED[0]
    return {
        # (promotion, draw) and (promotion, session) go together
        "places": [
            (GH, "launch"),
            (GH, "halfway"),
            (GH, "bonus"),
            (GH, "final"),
            (FESTA, festa_draw),
            (GH, MISSING),
            (MISSING, "halfway"),
        ],
        "sessions": [(FESTA, sessions[0]), (FESTA, sessions[-1]), (FESTA, MISSING), (GH, MISSING)],
        "card": [winner, MEMBERS[-1][0], "7770001"],
        "day": ["2026-11-02", "2026-11-07", "2030-01-01"],
        "side": ["slots", "tables"],
        "tombola": ["pooled", "slots", "nope"],
        "round_no": ["1", "3", "9"],
        "number": [letter, f"{GH}.halfway-999999", "1", "14", "999"],
        "name": ["signage.js", "crew.css", "swagger-ui.css", "no-such.js", "..%2Fpyproject.toml"],
        "device": ["EGM-0499", MISSING],
    }


def _urls(path: str, known: dict[str, Any]) -> list[str]:
    """Every URL of `path` with its parameters filled from `known`."""
    names = re.findall(r"\{(\w+)\}", path)
    unknown = [n for n in names if n not in FILL]
    assert not unknown, (
        f"GET {path}: this test does not know how to fill {unknown}; add them to FILL in "
        "tests/api/test_get_purity.py so the new route is checked for writes"
    )
    groups: list[list[dict[str, str]]] = []
    if "promotion" in names and "session" in names:
        groups.append([{"promotion": p, "session": s} for p, s in known["sessions"]])
    elif "promotion" in names and "draw" in names:
        groups.append([{"promotion": p, "draw": d} for p, d in known["places"]])
    elif "promotion" in names:
        promotions = sorted({p for p, _ in known["places"]})
        groups.append([{"promotion": p} for p in promotions])
    for name in names:
        if name in ("promotion", "draw", "session"):
            continue
        groups.append([{name: v} for v in known[FILL[name]]])
    urls = []
    for combo in itertools.product(*groups):
        values: dict[str, str] = {k: v for part in combo for k, v in part.items()}
        urls.append(re.sub(r"\{(\w+)\}", lambda m, v=values: v[m.group(1)], path))
    return urls


# path parameter -> the entry of `_fill` that holds its values
FILL = {
    "promotion": "places",
    "draw": "places",
    "session": "sessions",
    "card": "card",
    "day": "day",
    "side": "side",
    "tombola": "tombola",
    "round_no": "round_no",
    "number": "number",
    "name": "name",
    "device": "device",
}


def get_routes(daemon: Daemon) -> list[tuple[str, str]]:
    """(method, path) of every GET and HEAD route of the application; every websocket
    route must be one this test opens."""
    out = []
    for route in api_routes(daemon.service.app):
        if isinstance(route, APIWebSocketRoute):
            assert route.path in WEBSOCKETS, f"websocket {route.path}: add it to this test"
            continue
        if not isinstance(route, APIRoute | Route):
            raise AssertionError(f"route {route!r} of an unknown kind: add it to this test")
        out += [(m, route.path) for m in sorted(route.methods or ()) if m in ("GET", "HEAD")]
    return out


async def settled(r: aioredis.Redis, base: str) -> None:
    """Wait until the daemon's own followers (the SMS notices of the winners, ...) are done:
    the keyspace unchanged for a second (the clock stands still, so nothing else is due)."""
    last, still = await snapshot(r, base), 0
    async with asyncio.timeout(30):
        while still < 4:
            await asyncio.sleep(0.25)
            now = await snapshot(r, base)
            still = still + 1 if now == last else 0
            last = now


async def test_no_get_route_writes_anything(
    floor: tuple[Daemon, dict[str, Any]], redis_url: str
) -> None:
    d, known = floor
    base = d.service.keys.base
    routes = get_routes(d)
    assert len(routes) >= 30, routes
    clients = [await d.client(role, area) for role, area in ROLES]
    kiosk = next(c for c, (role, _) in zip(clients, ROLES, strict=True) if role is Role.KIOSK)
    headers = {"/kiosk/visit": await _kiosk_visit(d, kiosk, ACTIVATED[0])}
    tokens = await ws_tokens(d)
    r = aioredis.Redis.from_url(redis_url)
    try:
        await settled(r, base)
        records = [x.hash for x in await d.service.audit.records()]
        before = after_route = await snapshot(r, base)
        calls, writers, unread = 0, [], []
        for method, path in routes:
            before_route = after_route  # the last route's: nothing else writes meanwhile
            statuses: set[int] = set()
            for url in _urls(path, known):
                for query in ("", *QUERIES.get(path, ())):
                    full = f"{url}?{query}" if query else url
                    responses = await asyncio.gather(
                        *(c.request(method, full, headers=headers.get(path)) for c in clients)
                    )
                    for response in responses:
                        assert response.status_code < 500, (method, full, response.text)
                        statuses.add(response.status_code)
                    calls += len(responses)
            after_route = await snapshot(r, base)
            wrote = differences(before_route, after_route)
            if not any(200 <= st < 300 for st in statuses) and path not in NEVER_200:
                unread.append(f"{method} {path}: {sorted(statuses)}")
            if wrote:
                writers.append(f"{method} {path} wrote to Redis: {wrote[:8]}")
        assert not writers, "\n".join(writers)
        assert not unread, f"no call found something to read; fill real ids: {unread}"
        await _websockets(d, tokens)
        after = await snapshot(r, base)
        assert not differences(before, after)
        assert [x.hash for x in await d.service.audit.records()] == records
        assert calls > 1000, calls  # every route with every role, real ids and missing ones
    finally:
        await r.aclose()
        for c in clients:
            await c.aclose()


async def ws_tokens(d: Daemon) -> dict[str, str]:
    """A token for each role the websocket cases use."""
    out = {}
    for role, area in ((Role.SIGNAGE, "main"), (Role.CREW, ""), (Role.DESK, ""), (Role.KIOSK, "")):
        issued = await d.service.tokens.issue(
            role=role, name=f"ws {role}", area=area, now=d.service.clock.now(),
            valid_for=dt.timedelta(days=1),
        )  # fmt: skip
        out[role.value] = issued.token
    return out


async def _websockets(d: Daemon, tokens: dict[str, str]) -> None:
    """Open each live stream with good and refused tokens and bad frames, and close it."""
    ws_base = str(d.http.base_url).replace("http://", "ws://").rstrip("/")
    r = aioredis.Redis.from_url(str(d.service.settings.redis_url))
    base = d.service.keys.base
    try:
        start = await snapshot(r, base)
        cases: list[tuple[str, str | None]] = [
            (f"/ws/signage?token={tokens['signage']}", None),
            (f"/ws/signage?token={tokens['signage']}&epoch=e&seq=%C2%B2", None),
            ("/ws/signage?area=main", json.dumps({"token": tokens["signage"]})),
            ("/ws/signage?area=main", json.dumps({"token": tokens["kiosk"]})),
            ("/ws/crew", json.dumps({"token": tokens["crew"]})),
            ("/ws/crew", json.dumps({"token": tokens["desk"], "resume": {"epoch": "x", "seq": 3}})),
            ("/ws/crew", json.dumps({"token": tokens["signage"]})),
            ("/ws/crew", json.dumps({"token": "bd_nope_nope"})),
            ("/ws/crew", "[[[[[["),
            ("/ws/crew", json.dumps({"resume": 1})),
        ]
        for path, hello in cases:
            try:
                async with websockets.connect(ws_base + path, open_timeout=10) as ws:
                    if hello is not None:
                        await ws.send(hello)
                    with contextlib.suppress(TimeoutError, websockets.ConnectionClosed):
                        await asyncio.wait_for(ws.recv(), 5)
            except (OSError, websockets.InvalidHandshake, websockets.ConnectionClosed):
                pass  # refused before or during the handshake: what it wrote is checked below
            wrote = differences(start, await snapshot(r, base))
            assert not wrote, f"websocket {path} wrote to Redis: {wrote[:12]}"
    finally:
        await r.aclose()


async def test_reading_a_random_time_session_never_fixes_its_times(
    settings: Settings, tmp_path: Path, site: str, redis_url: str
) -> None:
    """A session with random jackpot times takes them from the scheduler's seed in Redis;
    reading the session before any scheduler has fixed it answers 409 and sets nothing
    (the scheduler, or a desk step, sets it)."""
    folder = promotions_folder(tmp_path, site, FESTA)
    path = folder / f"{FESTA}.toml"
    text = path.read_text(encoding="utf-8")
    every = 'times = { every_minutes = 30, first = "14:30", last = "21:00" }'
    assert every in text
    path.write_text(text.replace(every, "times = { random = 5 }"), encoding="utf-8")
    clock = ManualClock(at(11, 7, 12))
    r = aioredis.Redis.from_url(redis_url)
    try:
        await _random_session_reads(settings.model_copy(update={"promotions": folder}), clock, r)
    finally:
        await r.aclose()


async def _random_session_reads(settings: Settings, clock: ManualClock, r: aioredis.Redis) -> None:
    async with Service(settings, clock=clock) as svc:
        issued = await svc.tokens.issue(
            role=Role.DESK, name="desk", now=clock.now(), valid_for=dt.timedelta(days=1)
        )
        session = svc.promotions[0].jackpot_sessions[0].id
        base = svc.keys.base
        before = await snapshot(r, base)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=svc.app),
            base_url="http://bonusd",
            headers={"Authorization": f"Bearer {issued.token}"},
        ) as http:
            for path_ in ("", "/announcements", "/1/verify", "/1/eligibility"):
                got = await http.get(f"/promotions/{FESTA}/jackpots/{session}{path_}")
                assert got.status_code in (404, 409), (path_, got.text)
            got = await http.get(f"/promotions/{FESTA}/jackpots/{session}")
            assert got.status_code == 409
            assert "random jackpot times" in got.json()["detail"]
            assert differences(before, await snapshot(r, base)) == []
            await svc.jackpots.commit_seeds(FESTA, session)  # a step fixes them
            got = await http.get(f"/promotions/{FESTA}/jackpots/{session}")
            assert got.status_code == 200, got.text
            assert len(got.json()["jackpots"]) == 5
