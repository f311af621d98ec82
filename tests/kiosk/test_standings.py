"""The player's view read from Redis (`bonusd.kiosk.standings`): the same numbers as the
desk's standing, the member's own board place and activation, one round trip, nothing
written, and a published board masked as signage masks it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from bonusd.infra.keys import Keys
from bonusd.kiosk.standings import player_view, public_board
from bonusd.promotions import Channel, Side, load_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.registry.records import Member, Tier
from tests.redis_snapshot import differences, snapshot

SEEDS = Path(__file__).parents[2] / "promotions"
GH = "golden-horse-mega-points-chase"
SAST = dt.timezone(dt.timedelta(hours=2))
NOW = dt.datetime(2026, 11, 7, 12, 0, tzinfo=SAST)
THANDI, JOHAN, SIPHO = "6001001001", "6001001002", "6001001003"


@pytest.fixture
async def store(aredis: aioredis.Redis, site: str) -> PromotionStore:
    keys = Keys("bonusd", site)
    promotion = load_promotion(SEEDS / f"{GH}.toml")
    members = [
        Member(card=THANDI, name="Thandi Mokoena", tier=Tier.Q, app_user=True),
        Member(card=JOHAN, name="Johan Botha", tier=Tier.J),
        Member(card=SIPHO, name="Sipho Ndlovu", tier=Tier.A, excluded=True, exclusion_reason="x"),
    ]
    for m in members:
        await aredis.hset(keys.member(m.card), mapping=m.to_redis())
        await aredis.hset(keys.member_index, m.card, m.to_index())
    totals = {
        THANDI: {"slots_points": 21_250, "tables_points": 18_400, "visits": 4, "slots_plays": 9},
        JOHAN: {"slots_points": 5_000, "visits": 1, "slots_plays": 2},
        SIPHO: {"slots_points": 90_000, "visits": 9, "slots_plays": 20},
    }
    for draw in ("halfway", "bonus", "final"):
        for card, fields in totals.items():
            for name, value in fields.items():
                await aredis.hset(keys.window_field(GH, draw, name), card, value)
    at = dt.datetime(2026, 11, 7, 9, 15, tzinfo=SAST)
    record = json.dumps({"channel": "kiosk", "at": at.isoformat()})
    await aredis.hset(keys.activations(GH, "halfway"), THANDI, record)
    board = {
        "promotion": GH,
        "draw": "halfway",
        "side": "slots",
        "published_at": "2026-11-06T08:00:00+02:00",
        "entries": [
            {"position": 1, "card": SIPHO, "points": 90_000},
            {"position": 2, "card": THANDI, "points": 21_250},
            {"position": 3, "card": JOHAN, "points": 5_000},
        ],
    }
    await aredis.set(keys.board_published(GH, "halfway", "slots"), json.dumps(board))
    return PromotionStore(aredis, keys, [promotion])


async def test_the_view_has_the_desks_numbers_and_the_members_own_place(
    store: PromotionStore,
) -> None:
    view = await player_view(store, THANDI, NOW)
    assert view["member"] == {"masked_name": "T. M****", "card_last4": "1001"}
    draws = {d["draw"]: d for d in view["draws"]}
    assert list(draws) == ["halfway", "bonus", "final"]
    for draw_id, entry in draws.items():
        desk = await store.standing(GH, draw_id, THANDI)
        assert (entry["tickets"], entry["entries"]) == (desk.tickets, desk.entries)
        assert entry["per_tombola"] == {str(t): n for t, n in desk.per_tombola.items()}
    halfway = draws["halfway"]
    assert halfway["status"] == "entered"
    assert halfway["activation"]["channel"] == Channel.KIOSK
    assert halfway["activation"]["at"] == dt.datetime(2026, 11, 7, 9, 15, tzinfo=SAST)
    assert halfway["boards"] == [
        {"side": "slots", "position": 2},
        {"side": "tables", "position": None},
    ]
    assert draws["bonus"]["boards"] == [
        {"side": "slots", "position": None},
        {"side": "tables", "position": None},
    ]
    text = json.dumps(view, default=str)
    for other in (SIPHO, JOHAN, "Sipho", "Johan", "90000", "90,000"):
        assert other not in text, other


async def test_excluded_and_unknown_cards_read_the_same(store: PromotionStore) -> None:
    unknown = await player_view(store, "7770001", NOW)
    assert unknown["neutral"] is True
    assert await player_view(store, SIPHO, NOW) == unknown


async def test_one_round_trip_and_nothing_written(
    store: PromotionStore, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = aioredis.Redis.from_url(redis_url)
    try:
        before = await snapshot(raw, store.keys.base)
        pipelines: list[Any] = []
        direct: list[Any] = []
        real_pipeline = store.redis.pipeline

        def counted(*args: Any, **kwargs: Any) -> Any:
            pipelines.append(args)
            return real_pipeline(*args, **kwargs)

        async def refused(*args: Any, **kwargs: Any) -> Any:
            direct.append(args)
            raise AssertionError(f"a command outside the pipeline: {args}")

        monkeypatch.setattr(store.redis, "pipeline", counted)
        monkeypatch.setattr(store.redis, "execute_command", refused)
        await player_view(store, THANDI, NOW)
        await player_view(store, "7770001", NOW)
        assert (len(pipelines), direct) == (2, [])
        monkeypatch.undo()
        assert differences(before, await snapshot(raw, store.keys.base)) == []
    finally:
        await raw.aclose()


async def test_a_public_board_is_masked(store: PromotionStore) -> None:
    board, places = await public_board(store, GH, "halfway", Side.SLOTS)
    assert board["published_at"] == "2026-11-06T08:00:00+02:00"
    assert [(p.position, p.name, p.card, p.points) for p in places] == [
        (1, "S. N****", "****1003", 90_000),
        (2, "T. M****", "****1001", 21_250),
        (3, "J. B****", "****1002", 5_000),
    ]
    _, none_yet = await public_board(store, GH, "bonus", Side.TABLES)
    assert none_yet == ()
