"""The whole-draw views read undecoded replies and build their columns in numpy
(`rawread`, `columns`): on any member base they must give what the per-member reference
gives — every draw's qualified members and tickets, every board in order, every summary
count — with ties on points and on the instant, absent fields, cards never registered,
excluded and under-age members, and activations without play."""

from __future__ import annotations

import datetime as dt
import sys
import threading
import uuid
from dataclasses import dataclass
from types import FrameType

import hypothesis.strategies as st
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings

from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.promotions import Side, load_promotion
from bonusd.promotions.bulk import MemberArrays
from bonusd.promotions.columns import DrawColumns, DrawReplies
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.registry.records import Member, Tier
from tests.daemon_helpers import PROJECT

GH = "golden-horse-mega-points-chase"
PROMOTION = load_promotion(PROJECT / "promotions" / f"{GH}.toml")
FEW = settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])

# thresholds of the draws (20,000 / 50,000 / 100,000) and, repeated, ties
POINTS = st.sampled_from([0, 1_000, 1_000, 20_000, 20_000, 50_000, 100_000, 150_000])
# few instants: equal totals reached at the same instant, so the card decides
REACHED = st.sampled_from(["1790000000000", "1790000000001", "1790000000002", "0"])
BIRTHS = st.sampled_from(
    [None, dt.date(1980, 1, 1), dt.date(2008, 11, 7), dt.date(2008, 11, 8), dt.date(2010, 5, 5)]
)
VISITS = st.sampled_from([None, dt.date(2026, 7, 15), dt.date(2026, 9, 30), dt.date(2025, 1, 1)])


@dataclass(frozen=True)
class Player:
    """One card of the generated base: its member record (None: never registered), its
    play in every draw's window (field -> value; empty: no play) and its activations."""

    card: str
    member: Member | None
    stats: dict[str, int | str]
    activated: frozenset[str]  # draw ids


@st.composite
def _member(draw: st.DrawFn, card: str) -> Member:
    return Member(
        card=card,
        name="M",
        tier=draw(st.sampled_from(list(Tier))),
        app_user=draw(st.booleans()),
        excluded=draw(st.integers(0, 5)) == 0,
        date_of_birth=draw(BIRTHS),
        last_visit=draw(VISITS),
    )


@st.composite
def _player(draw: st.DrawFn, card: str) -> Player:
    member = draw(_member(card)) if draw(st.integers(0, 3)) else None
    stats: dict[str, int | str] = {}
    if draw(st.integers(0, 4)):  # play in the window: a visit at least
        stats["visits"] = draw(st.integers(1, 6))
        for side in Side:
            if draw(st.booleans()):  # else the side's fields are absent
                stats[f"{side}_points"] = draw(POINTS)
                stats[f"{side}_plays"] = draw(st.integers(0, 3))
                stats[f"{side}_visits"] = draw(st.integers(0, int(stats["visits"])))
                if draw(st.integers(0, 3)):
                    stats[f"{side}_reached"] = draw(REACHED)
    activated = draw(st.sets(st.sampled_from([d.id for d in PROMOTION.draw_list]), max_size=2))
    return Player(card, member, stats, frozenset(activated))


@st.composite
def _players(draw: st.DrawFn) -> list[Player]:
    # cards of mixed lengths and cases: the card breaks ties, bytes must sort as text
    cards = draw(st.lists(st.from_regex(r"[A-Za-z0-9-]{1,4}", fullmatch=True), unique=True))
    return [draw(_player(card)) for card in cards]


async def _write(r: aioredis.Redis, keys: Keys, players: list[Player], since: bool) -> None:
    """The players as the member import and the ingest leave them, in every draw."""
    members = [p.member for p in players if p.member is not None]
    if members:
        floor = FloorStore(
            r, keys, dedup_ttl_s=60, deadletter_maxlen=10, deadletter_payload_bytes=10
        )
        await floor.import_members(members)
    if since:
        await r.hset(keys.stats, "telemetry_since", "2026-08-01")
    for draw in PROMOTION.draw_list:
        async with r.pipeline(transaction=False) as pipe:
            for player in players:
                for field, value in player.stats.items():
                    pipe.hset(keys.window_field(GH, draw.id, field), player.card, value)
                if player.stats:
                    pipe.sadd(keys.played(GH, draw.id), player.card)
                for side in Side:
                    score = player.stats.get(f"{side}_points")
                    if score is not None:
                        pipe.zadd(keys.board(GH, draw.id, side.value), {player.card: score})
                if draw.id in player.activated:
                    pipe.hset(keys.activations(GH, draw.id), player.card, "{}")
            await pipe.execute()


async def _check_against_the_reference(r: aioredis.Redis, keys: Keys) -> None:
    live = PromotionStore(r, keys, [PROMOTION])
    summaries = DrawSummaries(live)
    recomputed = await summaries.recompute(GH)
    for draw in PROMOTION.draw_list:
        reference = await live.all_standings(GH, draw.id)  # registered members only
        played = await r.smembers(keys.played(GH, draw.id))
        activated = set(await r.hkeys(keys.activations(GH, draw.id)))
        placed = 0
        for side in draw.qualification.sides if draw.leaderboard else []:
            board = [x.card for x in await live.full_board(GH, draw.id, side)]
            assert await summaries.board(GH, draw.id, side) == board
            placed += len(board)
        assert recomputed[draw.id] == {
            "standings": len(played | activated),
            "qualified": sum(s.qualified for s in reference),
            "tickets": sum(s.tickets for s in reference),
            "board_places": placed,
        }
        summary = await summaries.summary(GH, draw.id)
        assert summary["members_with_play"] == len(played | activated)
        assert summary["activated"] == len(activated)
        assert summary["eligible"] == sum(s.eligible for s in reference)
        assert summary["qualified"] == recomputed[draw.id]["qualified"]
        assert summary["tickets"] == recomputed[draw.id]["tickets"]
        assert summary["entries"] == sum(s.entries for s in reference)


@FEW
@given(players=_players(), since=st.booleans())
async def test_recompute_boards_and_summaries_equal_the_reference(
    aredis: aioredis.Redis, players: list[Player], since: bool
) -> None:
    keys = Keys("bonusd", f"t{uuid.uuid4().hex[:10]}")
    try:
        await _write(aredis, keys, players, since)
        await _check_against_the_reference(aredis, keys)
    finally:
        found = [k async for k in aredis.scan_iter(match=f"{keys.base}*", count=1000)]
        if found:
            await aredis.delete(*found)


@given(members=st.lists(st.one_of(st.none(), _member("C1"))))
def test_index_rows_parsed_in_bulk_equal_the_row_by_row_parse(members: list[Member | None]) -> None:
    texts = [m.to_index() if m else None for m in members]
    cards = [f"C{n}" for n in range(len(members))]
    bulk = MemberArrays.from_rows(
        [c.encode() for c in cards], [t.encode() if t else None for t in texts]
    )
    one_by_one = MemberArrays.from_index(cards, texts)
    for name in ("tier", "app_user", "excluded", "birth_year", "birth_md", "last_visit"):
        assert getattr(bulk, name).tolist() == getattr(one_by_one, name).tolist(), name


def test_a_map_reply_gives_the_columns_of_a_flat_one() -> None:
    """A Redis Cluster client's replies are maps, a raw client's flat lists: same columns."""
    visits = {b"A": b"2", b"b": b"1", b"C": b"3"}
    points = {b"C": b"900", b"A": b"50"}  # another order, a card absent
    flat = DrawReplies([b"Z", b"A"], {"visits": _flat(visits), "slots_points": _flat(points)})
    mapped = DrawReplies([b"Z", b"A"], {"visits": visits, "slots_points": points})
    one, other = DrawColumns.build(flat, None), DrawColumns.build(mapped, None)
    assert one.cards == other.cards == [b"A", b"b", b"C", b"Z"]  # activated without play last
    assert one.stats.slots_points.tolist() == other.stats.slots_points.tolist() == [50, 0, 900, 0]
    assert one.stats.visits.tolist() == [2, 1, 3, 0]
    assert one.activated.tolist() == other.activated.tolist() == [True, False, False, True]


def _flat(mapping: dict[bytes, bytes]) -> list[bytes]:
    return [item for pair in mapping.items() for item in pair]


# the per-member steps of a recompute and of a whole board: none may run on the loop
HEAVY = {"build", "parse", "from_rows", "bulk_standings", "tied_rows", "order", "board_order"}


async def test_recompute_and_board_do_their_per_member_work_off_the_event_loop(
    aredis: aioredis.Redis,
) -> None:
    keys = Keys("bonusd", f"t{uuid.uuid4().hex[:10]}")
    member = Member(card="C1", name="M", tier=Tier.Q)
    stats: dict[str, int | str] = {"visits": 2, "slots_points": 30_000, "slots_reached": "1"}
    players = [Player("C1", member, stats, frozenset()), Player("C2", None, stats, frozenset())]
    loop_thread = threading.get_ident()
    on_loop: set[str] = set()

    def profile(frame: FrameType, event: str, _: object) -> None:
        if event == "call" and threading.get_ident() == loop_thread:
            on_loop.add(frame.f_code.co_name)

    try:
        await _write(aredis, keys, players, since=False)
        summaries = DrawSummaries(PromotionStore(aredis, keys, [PROMOTION]))
        sys.setprofile(profile)  # this thread only: worker threads are not profiled
        try:
            recomputed = await summaries.recompute(GH)
            board = await summaries.board(GH, "halfway", Side.SLOTS)
        finally:
            sys.setprofile(None)
    finally:
        found = [k async for k in aredis.scan_iter(match=f"{keys.base}*", count=1000)]
        await aredis.delete(*found)
    assert recomputed["halfway"]["qualified"] == 1  # C2 was never registered
    assert board == ["C1"]
    assert "recompute" in on_loop  # the profile did watch the loop's thread
    assert HEAVY.isdisjoint(on_loop), sorted(HEAVY & on_loop)
