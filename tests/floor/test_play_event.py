"""The aggregated `play` event: the decoder's contract, and that a floor reported in `play`
intervals leaves exactly the Redis state (floor and Golden Horse promotion) that the same
floor reported game by game leaves."""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import redis.asyncio as aioredis

from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.accounting import PromotionBook
from bonusd.floor.effects import Effects
from bonusd.floor.rules import describe
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import (
    MAX_PLAY_INTERVAL,
    DecodeLimits,
    FloorEvent,
    Reason,
    Rejection,
    TelemetryDecoder,
)
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.registry.records import Member, Tier
from tests.daemon_helpers import PROJECT

JHB = ZoneInfo("Africa/Johannesburg")
CAL = GamingCalendar(JHB, dt.time(8, 0))
NOW = dt.datetime(2026, 10, 3, 21, 0, tzinfo=JHB)
LIMITS = DecodeLimits(4096, dt.timedelta(minutes=5), dt.timedelta(days=7))
EGM = "bonusd/gh/egm/EGM-0412/events"
GH = "golden-horse-mega-points-chase"


def _decoder(site: str = "gh") -> TelemetryDecoder:
    return TelemetryDecoder(prefix="bonusd", site=site, calendar=CAL, limits=LIMITS)


def _play(**over: object) -> bytes:
    body: dict[str, object] = {
        "id": "p1",
        "type": "play",
        "ts": "2026-10-03T17:10:00+02:00",
        "since": "2026-10-03T17:05:00+02:00",
        "card": "7001",
        "games": 42,
        "wager_cents": 21000,
        "win_cents": 16500,
        "points": 210,
    }
    body.update(over)
    return json.dumps(body).encode()


# -- the decoder -------------------------------------------------------------------------------


def test_decodes_a_play_interval() -> None:
    ev = _decoder().decode(EGM, _play(), NOW)
    assert isinstance(ev, FloorEvent)
    assert (ev.type, ev.kind, ev.device, ev.card) == ("play", "egm", "EGM-0412", "7001")
    assert ev.ts_ms == int(dt.datetime(2026, 10, 3, 15, 10, tzinfo=dt.UTC).timestamp() * 1000)
    assert (ev.games, ev.wager_cents, ev.win_cents, ev.points) == (42, 21000, 16500, 210)
    assert ev.gaming_day == "2026-10-03"


def test_the_longest_interval_is_accepted() -> None:
    since = dt.datetime(2026, 10, 3, 17, 0, tzinfo=JHB)
    ts = since + MAX_PLAY_INTERVAL
    out = _decoder().decode(EGM, _play(since=since.isoformat(), ts=ts.isoformat()), NOW)
    assert isinstance(out, FloorEvent)
    assert dt.timedelta(minutes=15) == MAX_PLAY_INTERVAL  # as docs/telemetry.md says


@pytest.mark.parametrize(
    ("topic", "payload", "reason", "detail"),
    [
        (EGM, _play(games=0), Reason.INVALID, "games"),
        (EGM, _play(games=10_001), Reason.INVALID, "games"),
        (EGM, _play(games=None), Reason.INVALID, "games"),
        (EGM, _play(since=None), Reason.INVALID, "since"),
        (EGM, _play(since="2026-10-03T17:05:00"), Reason.INVALID, "since"),  # no offset
        (EGM, _play(since="2026-10-03T17:10:00+02:00"), Reason.INVALID, "not before ts"),
        (EGM, _play(since="2026-10-03T15:10:00Z"), Reason.INVALID, "not before ts"),  # same
        (EGM, _play(since="2026-10-03T17:11:00+02:00"), Reason.INVALID, "not before ts"),
        (EGM, _play(since="2026-10-03T16:54:59.999+02:00"), Reason.INVALID, "longer than"),
        (EGM, _play(wager_cents=-1), Reason.INVALID, "wager_cents"),
        (EGM, _play(points=10**9 + 1), Reason.INVALID, "points"),
        (EGM, _play(win_cents=1.5), Reason.INVALID, "win_cents"),
        (
            EGM,
            _play(since="2026-10-03T21:01:00+02:00", ts="2026-10-03T21:06:00+02:00"),
            Reason.FUTURE,
            "ahead",
        ),
        ("bonusd/gh/table/RT-07/events", _play(), Reason.WRONG_DEVICE_KIND, "play"),
    ],
)
def test_bad_play_events_are_dead_lettered_with_a_reason(
    topic: str, payload: bytes, reason: Reason, detail: str
) -> None:
    out = _decoder().decode(topic, payload, NOW)
    assert isinstance(out, Rejection)
    assert out.reason is reason
    assert detail in out.detail


def test_a_play_counts_its_games_on_the_gaming_day() -> None:
    ev = _decoder().decode(EGM, _play(), NOW)
    assert isinstance(ev, FloorEvent)
    fx = Effects()
    describe(ev, fx)
    day = "day:2026-10-03:7001"
    assert fx.increments[(day, "games")] == 42
    assert fx.increments[(day, "slots_points")] == 210
    assert fx.increments[(day, "spend_cents")] == 21000
    assert fx.increments[(day, "win_cents")] == 16500
    assert fx.values[(day, "visit")] == "1"
    assert [s[1] for s in fx.sessions] == ["P"]  # rated play at the EGM, at ts


# -- the same floor, game by game and in play intervals ----------------------------------------

CARDS = [f"70{i:02d}" for i in range(8)]
INTERVAL = dt.timedelta(minutes=5)
# 16:30 to 22:30 on launch day: across the 3x window's start (17:00) and end (22:00) and the
# launch draw's bin close (20:00), all on the 5-minute grid of the intervals
FIRST = dt.datetime(2026, 10, 3, 16, 30, tzinfo=JHB)
INTERVALS = 72


def _floor(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One evening as (games, plays): per card, a card-in, then every 5 minutes an interval
    of games, the last one at the interval's end, reported either game by game or as one
    `play` event; then a card-out. An interval ends 1 ms before the grid instant, so none
    straddles an edge (docs/telemetry.md, "Aggregated play")."""
    rng = random.Random(seed)
    games: list[dict[str, Any]] = []
    plays: list[dict[str, Any]] = []

    def stamp(t: dt.datetime) -> str:
        return t.isoformat(timespec="milliseconds")

    for n, card in enumerate(CARDS):
        device = f"EGM-{n:04d}"
        scale = 1 + n * 12  # from casual to threshold chasers
        start = FIRST + dt.timedelta(minutes=5 * (n % 3))
        ev_in = {"type": "card_in", "ts": stamp(start), "card": card}
        games.append({**ev_in, "id": f"g-{card}-in", "device": device})
        plays.append({**ev_in, "id": f"p-{card}-in", "device": device})
        since = start
        for i in range(INTERVALS - n % 3 - 2 * (n % 2)):
            ts = start + (i + 1) * INTERVAL - dt.timedelta(milliseconds=1)
            k = rng.randint(1, 25)
            parts = []
            for j in range(k):
                at = ts if j == k - 1 else since + (ts - since) * (j + 1) / (k + 1)
                points = rng.randint(1 if j == k - 1 else 0, scale)
                wager = points * 100 + rng.randint(0, 99)
                parts.append((at, wager, rng.randint(0, wager * 2), points))
            for j, (at, wager, win, points) in enumerate(parts):
                games.append(
                    {
                        "id": f"g-{card}-{i}-{j}",
                        "type": "game",
                        "ts": stamp(at),
                        "card": card,
                        "device": device,
                        "wager_cents": wager,
                        "win_cents": win,
                        "points": points,
                    }
                )
            plays.append(
                {
                    "id": f"p-{card}-{i}",
                    "type": "play",
                    "ts": stamp(ts),
                    "since": stamp(since),
                    "card": card,
                    "device": device,
                    "games": k,
                    "wager_cents": sum(p[1] for p in parts),
                    "win_cents": sum(p[2] for p in parts),
                    "points": sum(p[3] for p in parts),
                }
            )
            since = ts
        if n % 4:  # some card out, the others leave their card in
            ev_out = {"type": "card_out", "ts": stamp(since), "card": card}
            games.append({**ev_out, "id": f"g-{card}-out", "device": device})
            plays.append({**ev_out, "id": f"p-{card}-out", "device": device})
    key = lambda e: (e["ts"], e["id"])  # noqa: E731 - the floor's arrival order
    return sorted(games, key=key), sorted(plays, key=key)


async def _dump(r: aioredis.Redis, keys: Keys) -> dict[str, Any]:
    """Every key of the site with its value, keyed relative to the site's base; without
    the de-duplication id sets, the counters and the floor-row change log, which count
    messages and writes, not play."""
    out: dict[str, Any] = {}
    async for key in r.scan_iter(match=f"{keys.base}*", count=1000):
        rel = key.removeprefix(keys.base)
        if rel.startswith(("seen:", "floor-row-")) or rel == "stats":
            continue
        kind = await r.type(key)
        if kind == "hash":
            out[rel] = await r.hgetall(key)
        elif kind == "set":
            out[rel] = sorted(await r.smembers(key))
        elif kind == "zset":
            out[rel] = await r.zrange(key, 0, -1, withscores=True)
        elif kind == "string":
            out[rel] = await r.get(key)
        else:
            out[rel] = (kind, await r.dump(key))
    return out


@pytest.fixture
async def two_sites(redis_url: str) -> AsyncIterator[tuple[aioredis.Redis, Keys, Keys]]:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    tag = uuid.uuid4().hex[:8]
    pair = (Keys("bonusd", f"games{tag}"), Keys("bonusd", f"plays{tag}"))
    yield r, *pair
    for keys in pair:
        doomed = [k async for k in r.scan_iter(match=f"{keys.base}*", count=1000)]
        if doomed:
            await r.delete(*doomed)
    await r.aclose()


async def test_play_intervals_leave_the_state_of_their_games(
    two_sites: tuple[aioredis.Redis, Keys, Keys],
) -> None:
    r, game_keys, play_keys = two_sites
    promotion = load_promotion(PROJECT / "promotions" / f"{GH}.toml")
    members = [
        Member(card=c, name=f"Member {c}", tier=Tier.Q, app_user=n % 2 == 0)
        for n, c in enumerate(CARDS[:-1])  # the last card is unregistered: flagged, not lost
    ]
    games, plays = _floor(seed=11)
    assert len(games) > 5 * len(plays)  # the intervals really aggregate
    now = FIRST + dt.timedelta(hours=7)

    async def apply(keys: Keys, stream: list[dict[str, Any]]) -> FloorStore:
        store = FloorStore(
            r,
            keys,
            dedup_ttl_s=86400 * 30,
            deadletter_maxlen=1000,
            deadletter_payload_bytes=256,
            book=PromotionBook([promotion]),
        )
        await store.import_members(members)
        decoder = _decoder(keys.site)
        batch: list[FloorEvent] = []
        for sent in stream:
            body = dict(sent)
            topic = f"bonusd/{keys.site}/egm/{body.pop('device')}/events"
            ev = decoder.decode(topic, json.dumps(body).encode(), now)
            assert isinstance(ev, FloorEvent), ev
            batch.append(ev)
            if len(batch) == 200:
                await store.apply_batch(batch, [])
                batch = []
        await store.apply_batch(batch, [])
        return store

    await apply(game_keys, games)
    await apply(play_keys, plays)

    by_games, by_plays = await _dump(r, game_keys), await _dump(r, play_keys)
    assert by_plays == by_games
    # ... and the state is the interesting one: the 3x window, thresholds and tickets
    assert any(k.startswith(f"pwf:{GH}:halfway:slots_points") for k in by_games)
    assert int(by_games["day:2026-10-03:7000"]["games"]) > INTERVALS

    standings = {}
    for keys in (game_keys, play_keys):
        store = PromotionStore(r, keys, [promotion])
        standings[keys.site] = {
            d: await store.all_standings(GH, d) for d in ("launch", "halfway", "bonus", "final")
        }
    got_games, got_plays = standings[game_keys.site], standings[play_keys.site]
    assert got_plays == got_games
    halfway = got_games["halfway"]
    assert {s.qualified for s in halfway} == {True, False}  # the 20,000 threshold splits them
    assert sum(s.tickets for s in halfway) > 0
    assert CARDS[-1] not in {s.card for s in halfway}  # unregistered: in no standing
    window = int(by_games[f"pwf:{GH}:halfway:slots_points"]["7003"])
    base = int(by_games["day:2026-10-03:7003"]["slots_points"])
    assert base < window < 3 * base  # 3x inside 17:00-22:00 only
