"""The live accounting (ingest-time operations in Redis) agrees exactly with the pure
reference `bonusd.promotions.aggregate`, over a simulated evening that crosses the
launch-day 3x multiplier window and a gaming-day boundary."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from zoneinfo import ZoneInfo

import redis.asyncio as aioredis

from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.accounting import PromotionBook
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import DecodeLimits, FloorEvent, TelemetryDecoder
from bonusd.infra.keys import Keys
from bonusd.promotions import RatedPlay, Side, aggregate, load_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.registry.records import Member, Tier
from simulators import Encoder, FloorConfig, build_floor, generate_events
from tests.daemon_helpers import PROJECT

JHB = ZoneInfo("Africa/Johannesburg")
START = dt.datetime(2026, 10, 3, 15, 0, tzinfo=JHB)


async def test_live_window_stats_equal_the_reference(site: str, redis_url: str) -> None:
    promotion = load_promotion(PROJECT / "promotions" / "golden-horse-mega-points-chase.toml")
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    store = FloorStore(
        r,
        keys,
        dedup_ttl_s=86400 * 30,
        deadletter_maxlen=1000,
        deadletter_payload_bytes=256,
        book=PromotionBook([promotion]),
    )
    decoder = TelemetryDecoder(
        prefix="bonusd",
        site=site,
        calendar=GamingCalendar(JHB, dt.time(8, 0)),
        limits=DecodeLimits(4096, dt.timedelta(minutes=5), dt.timedelta(days=60)),
    )
    floor = build_floor(FloorConfig(egms=12, tables=2, members=60), seed=3, as_of=START.date())
    encoder = Encoder(prefix="bonusd", site=site)
    plays: dict[str, list[RatedPlay]] = defaultdict(list)
    batch: list[FloorEvent] = []
    now = START + dt.timedelta(days=2)
    for sim in generate_events(floor, seed=3, start=START, duration=dt.timedelta(hours=18)):
        ev = decoder.decode(encoder.topic(sim), encoder.body(sim.payload), now)
        assert isinstance(ev, FloorEvent)
        batch.append(ev)
        if ev.type not in {"card_in", "card_out"}:
            side = Side.SLOTS if ev.kind == "egm" else Side.TABLES
            at = dt.datetime.fromtimestamp(ev.ts_ms / 1000, dt.UTC)
            plays[ev.card].append(RatedPlay(at, side, ev.points))
        if len(batch) == 500:
            await store.apply_batch(batch, [])
            batch = []
    await store.apply_batch(batch, [])

    live = PromotionStore(r, keys, [promotion])
    checked = 0
    for draw_id in ("launch", "halfway", "bonus", "final"):
        draw = promotion.draw(draw_id)
        cards = sorted(plays)
        got = await live.window_stats(promotion, draw, cards)
        for card, stats in zip(cards, got, strict=True):
            want = aggregate(promotion, draw, plays[card], telemetry_since=stats.telemetry_since)
            assert stats == want, (draw_id, card)
            checked += stats.slots.points + stats.tables.points
    assert checked > 0  # the evening really counted for the draws
    await r.aclose()


async def test_bulk_board_order_equals_the_reference(site: str, redis_url: str) -> None:
    """Ties on points (many here) are broken by who got there first, in bulk as in the
    per-member reference; excluded and unregistered members are never placed."""
    promotion = load_promotion(PROJECT / "promotions" / "golden-horse-mega-points-chase.toml")
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    store = FloorStore(r, keys, dedup_ttl_s=3600, deadletter_maxlen=10, deadletter_payload_bytes=10)
    members = [
        Member(card=f"9{i:03d}", name="M", tier=Tier.Q, excluded=i % 17 == 0) for i in range(300)
    ]
    await store.import_members(members)
    head = f"{keys.base}pwf:{promotion.id}:halfway"
    points = {f"9{i:03d}": 1000 * (i % 7) for i in range(320)}  # 9300.. are unregistered
    reached = {card: 1_790_000_000_000 + (i * 7919) % 1000 for i, card in enumerate(points)}
    await r.hset(f"{head}:slots_points", mapping=points)
    await r.hset(f"{head}:slots_reached", mapping=reached)
    await r.hset(f"{head}:visits", mapping=dict.fromkeys(points, 1))  # as ingest leaves it
    await r.sadd(f"{keys.base}pm:{promotion.id}:halfway", *points)
    await r.zadd(f"{keys.base}lb:{promotion.id}:halfway:slots", points)
    live = PromotionStore(r, keys, [promotion])
    reference = [x.card for x in await live.full_board(promotion.id, "halfway", Side.SLOTS)]
    bulk = await DrawSummaries(live).board(promotion.id, "halfway", Side.SLOTS)
    assert bulk == reference
    assert len(reference) == sum(
        1 for i in range(300) if i % 7 and i % 17
    )  # points > 0, registered, not excluded
    # few ties (the other path: the reached instants of the tied members alone)
    tables = {card: 5000 + i - (i % 40 == 0) for i, card in enumerate(points)}
    await r.hset(f"{head}:tables_points", mapping=tables)
    await r.hset(f"{head}:tables_reached", mapping=reached)
    await r.zadd(f"{keys.base}lb:{promotion.id}:halfway:tables", tables)
    reference = [x.card for x in await live.full_board(promotion.id, "halfway", Side.TABLES)]
    bulk = await DrawSummaries(live).board(promotion.id, "halfway", Side.TABLES)
    assert bulk == reference
    await r.aclose()
