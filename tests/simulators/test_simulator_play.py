"""Aggregated play: `play` events fold the games they stand for, exactly, and follow the
telemetry contract (docs/telemetry.md, "Aggregated play").

The per-game stream folded afterwards (`fold_stream`) equals the stream generated with
`granularity="play"`; every interval's totals equal those of its games; intervals never
straddle a multiplier window, an earning window or a gaming day; bonusd's decoder takes
every event.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import itertools
from collections import defaultdict
from decimal import Decimal
from zoneinfo import ZoneInfo

import numpy as np
import pytest
import redis.asyncio as aioredis

from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.accounting import PromotionBook
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import MAX_PLAY_INTERVAL, DecodeLimits, FloorEvent, TelemetryDecoder
from bonusd.infra.keys import Keys
from bonusd.promotions import MemberWindowStats, Side, load_promotion, multiplier_at
from bonusd.promotions.store import PromotionStore
from simulators import (
    Cuts,
    Encoder,
    Floor,
    FloorConfig,
    SimEvent,
    build_floor,
    fold_games,
    fold_stream,
    generate_events,
    load_floor,
)
from simulators.campaign import Campaign
from simulators.games import Games
from tests.daemon_helpers import PROJECT

JHB = ZoneInfo("Africa/Johannesburg")
PROMOTION = load_promotion(PROJECT / "promotions" / "golden-horse-mega-points-chase.toml")
# launch day: the 3x window opens at 17:00 and closes at 22:00; the gaming day at 08:00
START = dt.datetime(2026, 10, 3, 16, 30, tzinfo=JHB)
SPAN = dt.timedelta(hours=16)
MAX_MINUTES = 5.0


def _floor() -> Floor:
    return build_floor(load_floor("ci").config, seed=3, as_of=START.date())


def _cuts() -> Cuts:
    return Cuts(max_minutes=MAX_MINUTES, edges=Campaign(PROMOTION).edges, zone=JHB)


@pytest.fixture(scope="module")
def games() -> list[SimEvent]:
    return list(generate_events(_floor(), seed=4, start=START, duration=SPAN, promotion=PROMOTION))


@pytest.fixture(scope="module")
def plays() -> list[SimEvent]:
    stream = generate_events(
        _floor(), seed=4, start=START, duration=SPAN, promotion=PROMOTION, granularity="play"
    )
    return list(stream)


def _ms(ts: str | int) -> int:
    return int(dt.datetime.fromisoformat(str(ts)).timestamp() * 1000)


def _key(e: SimEvent) -> tuple[object, ...]:
    # the run ids (the stems of epochs and ids) differ; each device's seqs must not
    fields = tuple(sorted((k, v) for k, v in e.payload.items() if k not in ("id", "epoch")))
    return (e.t_ms, e.device, e.payload["type"], fields)


def test_folding_the_game_stream_gives_the_play_stream(
    games: list[SimEvent], plays: list[SimEvent]
) -> None:
    folded = list(fold_stream(games, _cuts()))
    assert [e.t_ms for e in folded] == sorted(e.t_ms for e in folded)
    # an interval still open at the end of the run is cut short in the folded stream only
    settled = int((START + SPAN).timestamp() * 1000) - int(MAX_MINUTES * 60_000)
    assert sorted(_key(e) for e in folded if e.t_ms < settled) == sorted(
        _key(e) for e in plays if e.t_ms < settled
    )
    assert sum(e.payload["type"] == "play" for e in plays) > 1000
    assert not any(e.payload["type"] == "game" for e in plays)
    assert len({(e.device, e.payload["epoch"], e.payload["seq"]) for e in folded}) == len(folded)


def test_folding_a_v1_stream_names_each_play_after_its_first_game() -> None:
    span = dt.timedelta(hours=2)
    games = generate_events(_floor(), seed=4, start=START, duration=span, contract="v1")
    folded = list(fold_stream(games, _cuts()))
    plays = [e for e in folded if e.payload["type"] == "play"]
    assert plays and all(str(e.payload["id"]).endswith("-play") for e in plays)
    assert all("epoch" not in e.payload for e in folded)
    assert len({e.payload["id"] for e in folded}) == len(folded)


class _Times:
    """The instants of a list of events, as a sequence `bisect` can search."""

    def __init__(self, events: list[SimEvent]) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, i: int) -> int:
        return self._events[i].t_ms


def test_play_totals_equal_the_games_they_fold(games: list[SimEvent]) -> None:
    by_stint: dict[tuple[str, str], list[SimEvent]] = defaultdict(list)
    for e in games:
        if e.payload["type"] == "game":
            by_stint[e.device, str(e.payload["card"])].append(e)
    totals = {"games": 0, "wager_cents": 0, "win_cents": 0, "points": 0}
    checked = 0
    for play in fold_stream(games, _cuts()):
        p = play.payload
        if p["type"] != "play":
            continue
        since, ts = _ms(p["since"]), _ms(p["ts"])
        stint = by_stint[play.device, str(p["card"])]
        times = _Times(stint)
        inside = stint[bisect.bisect_right(times, since) : bisect.bisect_right(times, ts)]
        assert len(inside) == p["games"]
        for field in ("wager_cents", "win_cents", "points"):
            assert sum(int(g.payload[field]) for g in inside) == p[field]
        assert inside[-1].t_ms == ts == play.t_ms
        for name in totals:
            totals[name] += int(p[name])
        checked += 1
    every_game = [e.payload for e in games if e.payload["type"] == "game"]
    assert totals == {
        "games": len(every_game),
        "wager_cents": sum(int(g["wager_cents"]) for g in every_game),
        "win_cents": sum(int(g["win_cents"]) for g in every_game),
        "points": sum(int(g["points"]) for g in every_game),
    }
    assert checked > 1000


def test_intervals_follow_the_contract_and_never_straddle_an_edge(
    games: list[SimEvent], plays: list[SimEvent]
) -> None:
    calendar = PROMOTION.calendar
    game_times: dict[tuple[str, str], list[int]] = defaultdict(list)
    for e in games:
        if e.payload["type"] == "game":
            game_times[e.device, str(e.payload["card"])].append(e.t_ms)
    previous: dict[tuple[str, str], int] = {}
    factors: set[Decimal] = set()
    for e in plays:
        p = e.payload
        key = (e.device, str(p["card"]))
        if p["type"] == "card_in":
            previous[key] = e.t_ms
        if p["type"] != "play":
            continue
        since, ts = _ms(p["since"]), _ms(p["ts"])
        assert since < ts
        assert ts - since <= MAX_MINUTES * 60_000
        assert int(p["games"]) >= 1
        # the intervals of a card on an EGM follow each other (unless the player paused)
        assert since == previous[key] or since > previous[key] + MAX_MINUTES * 60_000 - 2
        previous[key] = ts
        # its first game has the multiplier and gaming day of its ts (bonusd's own rules),
        # so every game between them has too
        times = game_times[key]
        first = times[bisect.bisect_right(times, since)]
        assert since < first <= ts
        at_first, at_ts = (dt.datetime.fromtimestamp(t / 1000, dt.UTC) for t in (first, ts))
        factor = multiplier_at(PROMOTION, at_ts, Side.SLOTS)
        assert multiplier_at(PROMOTION, at_first, Side.SLOTS) == factor
        assert calendar.gaming_day(at_first) == calendar.gaming_day(at_ts)
        factors.add(factor)
    assert factors == {Decimal(1), Decimal(3)}  # the run crosses both edges of the 3x window


def test_table_ratings_never_straddle_an_edge(plays: list[SimEvent]) -> None:
    last: dict[tuple[str, int], int] = {}
    crossed = 0
    for e in plays:
        p = e.payload
        if e.kind != "table":
            continue
        key = (e.device, int(p["seat"]))
        if p["type"] != "rating_start":
            before = dt.datetime.fromtimestamp(last[key] / 1000, dt.UTC)
            at = dt.datetime.fromtimestamp(e.t_ms / 1000, dt.UTC)
            same = multiplier_at(PROMOTION, before, Side.TABLES) == multiplier_at(
                PROMOTION, at, Side.TABLES
            )
            # an increment may start at its previous event 1 ms before an edge, never earlier
            crossed += not same
            assert same or before.timestamp() * 1000 % 1000 == 999
        last[key] = e.t_ms
    assert crossed > 0


def test_bonusd_decodes_every_simulated_event(plays: list[SimEvent]) -> None:
    decoder = TelemetryDecoder(
        prefix="bonusd",
        site="sim",
        calendar=GamingCalendar(JHB, dt.time(8, 0)),
        limits=DecodeLimits(4096, dt.timedelta(minutes=5), dt.timedelta(days=7)),
    )
    encoder = Encoder(prefix="bonusd", site="sim")
    kinds = set()
    for e in plays:
        now = dt.datetime.fromtimestamp(e.t_ms / 1000, dt.UTC)
        decoded = decoder.decode(encoder.topic(e), encoder.body(e.payload), now)
        assert isinstance(decoded, FloorEvent), (decoded, e.payload)
        assert decoded.games == e.payload.get("games", 1)
        kinds.add(decoded.type)
    assert kinds == {"card_in", "card_out", "play", "rating_start", "rating_update", "rating_end"}


def test_fold_games_cuts_at_the_limit_the_edges_and_after_a_pause() -> None:
    minute = 60_000
    edge = 100 * minute
    cuts = Cuts(max_minutes=5, edges=[edge], zone=JHB)
    t = np.asarray(
        [10, 60_000, 2 * minute, 4 * minute, 6 * minute, edge - 60_000, edge, edge + 1,
         edge + 30 * minute],
        dtype=np.int64,
    )  # fmt: skip
    ones = np.ones(len(t), dtype=np.int64)
    got = fold_games(Games(t=t, wager=ones * 100, win=ones * 0, points=ones), cuts, card_in_ms=0)
    assert [(i.since_ms, i.ts_ms, i.games) for i in got] == [
        (0, 4 * minute, 4),  # 5 minutes from the card-in
        (4 * minute, 6 * minute, 1),
        (edge - 60_000 - 1, edge - 60_000, 1),  # a pause: starts 1 ms before its first game
        (edge - 60_000, edge + 1, 2),  # the edge is the first game's own instant: no cut
        (edge + 30 * minute - 1, edge + 30 * minute, 1),
    ]
    assert [i.wager_cents for i in got] == [400, 100, 100, 200, 100]


def test_fold_games_stops_before_an_edge() -> None:
    minute = 60_000
    edge = 10 * minute
    cuts = Cuts(max_minutes=15, edges=[edge], zone=JHB)
    t = np.asarray([edge - 3 * minute, edge - 1, edge, edge + minute], dtype=np.int64)
    ones = np.ones(len(t), dtype=np.int64)
    got = fold_games(
        Games(t=t, wager=ones, win=ones, points=ones), cuts, card_in_ms=edge - 4 * minute
    )
    assert [(i.since_ms, i.ts_ms, i.games) for i in got] == [
        (edge - 4 * minute, edge - 1, 2),
        (edge - 1, edge + minute, 2),
    ]


def test_play_intervals_are_limited_by_the_contract() -> None:
    limit = MAX_PLAY_INTERVAL / dt.timedelta(minutes=1)
    Cuts(max_minutes=limit, zone=JHB)
    with pytest.raises(ValueError, match="at most 15 minutes"):
        Cuts(max_minutes=limit + 1, zone=JHB)
    with pytest.raises(ValueError, match="granularity"):
        generate_events(_floor(), seed=1, start=START, duration=SPAN, granularity="hand")  # type: ignore[arg-type]


def _untimed(stats: MemberWindowStats) -> MemberWindowStats:
    return dataclasses.replace(
        stats,
        slots=dataclasses.replace(stats.slots, reached_at=None),
        tables=dataclasses.replace(stats.tables, reached_at=None),
    )


async def test_the_daemon_keeps_the_same_totals_from_games_and_from_their_play(
    site: str, redis_url: str
) -> None:
    """The same simulated evening, sent game by game to one site and folded into play
    events to another: bonusd's day totals and promotion window stats agree exactly (only
    the instant a total was reached moves, within the interval)."""
    # six EGMs and two tables play some 30,000 games in the 16 hours
    floor = build_floor(FloorConfig(egms=6, tables=2, members=80), seed=3, as_of=START.date())
    games = list(generate_events(floor, seed=6, start=START, duration=SPAN, promotion=PROMOTION))
    streams = {"game": games, "play": list(fold_stream(games, _cuts()))}
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    stores: dict[str, tuple[FloorStore, PromotionStore]] = {}
    try:
        for granularity, stream in streams.items():
            keys = Keys("bonusd", f"{site}{granularity}")
            store = FloorStore(
                r, keys, dedup_ttl_s=86_400, deadletter_maxlen=100, deadletter_payload_bytes=256,
                book=PromotionBook([PROMOTION]),
            )  # fmt: skip
            decoder = TelemetryDecoder(
                prefix="bonusd",
                site=keys.site,
                calendar=PROMOTION.calendar,
                limits=DecodeLimits(4096, dt.timedelta(minutes=5), dt.timedelta(days=30)),
            )
            encoder = Encoder(prefix="bonusd", site=keys.site)
            now = START + SPAN
            decoded = [
                decoder.decode(encoder.topic(e), encoder.body(e.payload), now) for e in stream
            ]
            assert all(isinstance(d, FloorEvent) for d in decoded)
            batch = [d for d in decoded if isinstance(d, FloorEvent)]
            for i in range(0, len(batch), 500):
                await store.apply_batch(batch[i : i + 500], [])
            stores[granularity] = (store, PromotionStore(r, keys, [PROMOTION]))
        cards = sorted({str(e.payload["card"]) for e in games})
        days = sorted(
            {PROMOTION.calendar.gaming_day(START), PROMOTION.calendar.gaming_day(START + SPAN)}
        )
        assert len(days) == 2
        played = 0
        for card, day in itertools.product(cards, days):
            per_game = await stores["game"][0].member_day(card, day)
            assert await stores["play"][0].member_day(card, day) == per_game, (card, day)
            played += per_game["games"]
        assert played == sum(e.payload["type"] == "game" for e in games)
        for draw in PROMOTION.draw_list:
            by_game = await stores["game"][1].window_stats(PROMOTION, draw, cards)
            by_play = await stores["play"][1].window_stats(PROMOTION, draw, cards)
            for a, b in zip(by_play, by_game, strict=True):
                assert _untimed(a) == _untimed(b), draw.id
                # a play interval is rated at its ts, its last game (which may earn 0 points)
                for side in (Side.SLOTS, Side.TABLES):
                    late, early = a.side(side).reached_at, b.side(side).reached_at
                    assert (late is None) == (early is None)
                    if late is not None and early is not None:
                        assert early <= late < early + dt.timedelta(minutes=MAX_MINUTES)
        assert sum(s.slots.points for s in by_game) > 0
    finally:
        for granularity in streams:
            found = [k async for k in r.scan_iter(match=f"bonusd:{{{site}{granularity}}}:*")]
            if found:
                await r.delete(*found)
        await r.aclose()
