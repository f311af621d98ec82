"""A member's standing in every running draw, read from Redis in one round trip: the
kiosk's hot path (card in -> standings on screen) and the app's member read.

`player_view` finds the running draws (`bonusd.kiosk.playerview.running_draws`: the
promotion has started, the earning window or the activation has opened, the draw night's
gaming day has not ended),
reads everything their rules need for one card in a single pipeline, judges each
standing with the rules (`bonusd.promotions.standing`) and words the view
(`bonusd.kiosk.playerview.view_of`). What it reads, per call:

    member:{card}                                hash    the member record (masked name)
    stats                                        hash    `telemetry_since`
    pwf:{promotion}:{draw}:{field}               hash    the card's window totals (HGET each)
    act:{promotion}:{draw}                       hash    the card's activation (HGET)
    lbpub:{promotion}:{draw}:{side}              string  the published board (its own place)

Nothing is written: a kiosk or an app reading a card leaves the site as it was.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.infra.keys import Keys
from bonusd.kiosk.playerview import (
    ActivationRecord,
    DrawFacts,
    PublicPlace,
    public_places,
    running_draws,
    view_json,
    view_of,
)
from bonusd.promotions import (
    Channel,
    Draw,
    Promotion,
    Side,
    standing,
)
from bonusd.promotions.store import STAT_FIELDS, PromotionStore, stats_of
from bonusd.registry.records import Member


def board_sides(draw: Draw) -> tuple[Side, ...]:
    """The sides whose boards a draw publishes (`Action.LEADERBOARD_PUBLISH`)."""
    return tuple(draw.qualification.sides) if draw.leaderboard else ()


def board_position(text: str | None, card: str) -> int | None:
    """The card's own position on a published board (None: not on it, or none published)."""
    if not text:
        return None
    board = cast(dict[str, Any], json.loads(text))
    for entry in board.get("entries", ()):
        if str(entry.get("card")) == card:
            return int(entry["position"])
    return None


def activation_record(text: str | None) -> ActivationRecord | None:
    """An activation as `PromotionStore.activate` stores it ({"channel", "at"})."""
    if not text:
        return None
    raw = cast(dict[str, str], json.loads(text))
    return ActivationRecord(Channel(raw["channel"]), dt.datetime.fromisoformat(raw["at"]))


def queue_reads(pipe: Any, keys: Keys, card: str, draws: list[tuple[Promotion, Draw]]) -> None:
    """Queue on `pipe` every read `player_view` makes (the benchmark times the same)."""
    pipe.hgetall(keys.member(card))
    pipe.hget(keys.stats, "telemetry_since")
    for promotion, draw in draws:
        for name in STAT_FIELDS:
            pipe.hget(keys.window_field(promotion.id, draw.id, name), card)
        pipe.hget(keys.activations(promotion.id, draw.id), card)
        for side in board_sides(draw):
            pipe.get(keys.board_published(promotion.id, draw.id, side.value))


async def read_facts(
    redis: Redis, keys: Keys, card: str, draws: list[tuple[Promotion, Draw]]
) -> tuple[Member | None, list[DrawFacts]]:
    """The member record and each draw's facts about `card`, in one round trip."""
    async with redis.pipeline(transaction=False) as pipe:
        queue_reads(pipe, keys, card, draws)
        replies: list[Any] = await pipe.execute()
    raw_member = cast(dict[str, str], replies[0])
    member = Member.from_redis(raw_member) if raw_member else None
    since = dt.date.fromisoformat(replies[1]) if replies[1] else None
    at = 2
    facts = []
    for promotion, draw in draws:
        values = dict(zip(STAT_FIELDS, replies[at : at + len(STAT_FIELDS)], strict=True))
        at += len(STAT_FIELDS)
        activation = activation_record(replies[at])
        at += 1
        boards = {}
        for side in board_sides(draw):
            boards[side] = board_position(replies[at], card)
            at += 1
        judged = None
        if member is not None:
            judged = standing(
                promotion,
                draw,
                member,
                stats_of(values, since),
                activated=activation is not None,
                on_date=draw.date,
                explain=False,
            )
        facts.append(DrawFacts(promotion, draw, judged, activation, boards))
    return member, facts


async def player_view(promotions: PromotionStore, card: str, now: dt.datetime) -> dict[str, Any]:
    """What the cardholder of `card` sees at a kiosk or in the app at `now`, as plain data
    in the shape of `PlayerViewOut` (`bonusd.kiosk.playerview.view_json`): the neutral
    view for a card that is no member, an excluded member or one the exclusions keep out
    of every running draw; else the member's standing in each running draw."""
    draws = running_draws(list(promotions.promotions.values()), now)
    member, facts = await read_facts(promotions.redis, promotions.keys, card, draws)
    return view_json(view_of(member, facts, now))


async def public_board(
    promotions: PromotionStore, promotion_id: str, draw_id: str, side: Side
) -> tuple[dict[str, Any], tuple[PublicPlace, ...]]:
    """A draw's published board as the floor screens show it: the board as published
    (`PromotionStore.published_board`, NotFoundError for an unknown draw) and its places
    masked (names read in one round trip)."""
    board = await promotions.published_board(promotion_id, draw_id, side)
    entries: list[dict[str, Any]] = list(board.get("entries", ()))
    cards = [str(e["card"]) for e in entries]
    names: dict[str, str] = {}
    if cards:
        async with promotions.redis.pipeline(transaction=False) as pipe:
            for card in cards:
                pipe.hget(promotions.keys.member(card), "name")
            found: list[str | None] = await pipe.execute()
        names = {card: name for card, name in zip(cards, found, strict=True) if name}
    return board, public_places(entries, names)
