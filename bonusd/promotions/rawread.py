"""Undecoded bulk reads for the whole-draw views (`summaries`): the per-field hashes,
the member index and the reached instants, as the bytes Redis sends.

A whole hash read the default way costs more in this process than in Redis: each of its
200,000 cards and values is decoded to `str` and put in a dict. Here a second client
(same address, credentials and timeouts, its own connections, closed after use) speaks
RESP2 without decoding, so an HGETALL arrives as one flat list of bytes. A Redis Cluster
client is used as it is, with undecoded replies (its maps arrive as dicts of bytes);
`columns.pairs` reads both shapes. `DrawSummaries` runs at most `BULK_AT_ONCE` (2) of
these reads at once, so a burst of desk requests waits its turn rather than opening
connections without bound."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import redis.asyncio as aioredis
from redis.client import NEVER_DECODE

from bonusd.infra.keys import Keys
from bonusd.promotions.bulk import needed_fields
from bonusd.promotions.columns import DrawReplies, Flat, pairs
from bonusd.promotions.schema import Draw

# connections of one raw client: a recompute reads the next draw while ranking the last
_RAW_CONNECTIONS = 4

# HMGET batch for a summary's member rows: packing one batch and parsing its reply is
# the longest the event loop is held at a time (~2 ms); other work runs between batches
ROWS_PER_READ = 1_000

# connection settings a pool adds for itself (its maintenance-notice handling, which
# needs RESP3): the raw client's own pool makes its own
_POOL_OWN = ("maint_notifications", "orig_", "himport_registry", "oss_cluster")

_RAW: dict[str, Any] = {NEVER_DECODE: True}


async def _command(raw: aioredis.Redis, *args: str | bytes) -> Any:
    """One command, its reply undecoded."""
    return await raw.execute_command(*args, **_RAW)  # type: ignore[no-untyped-call]


def _keep(response: Any, **_: Any) -> Any:
    return response


@asynccontextmanager
async def raw_client(redis: aioredis.Redis) -> AsyncIterator[aioredis.Redis]:
    """A client of the same Redis replying undecoded bytes, HGETALL as a flat list."""
    if not isinstance(redis, aioredis.Redis):  # a cluster client: undecoded RESP3 maps
        yield redis
        return
    pool = redis.connection_pool
    settings = {k: v for k, v in pool.connection_kwargs.items() if not k.startswith(_POOL_OWN)}
    settings |= {"decode_responses": False, "protocol": 2}
    raw = aioredis.Redis.from_pool(
        aioredis.ConnectionPool(
            connection_class=pool.connection_class,
            max_connections=_RAW_CONNECTIONS,
            **settings,
        )
    )
    raw.set_response_callback("HGETALL", _keep)
    try:
        yield raw
    finally:
        await raw.aclose()


def read_fields(draw: Draw) -> list[str]:
    """The columns a whole-draw view reads: those the rules need, each board's points,
    and `visits` (its cards are the members with play)."""
    sides = draw.qualification.sides if draw.leaderboard else []
    return sorted(needed_fields(draw) | {f"{s.value}_points" for s in sides} | {"visits"})


async def read_head(
    raw: aioredis.Redis, keys: Keys, *, with_index: bool
) -> tuple[dt.date | None, Flat | None]:
    """Since when telemetry counts, and (if asked) the whole member index."""
    async with raw.pipeline(transaction=False) as pipe:
        pipe.execute_command("HGET", keys.stats, "telemetry_since", **_RAW)
        if with_index:
            pipe.execute_command("HGETALL", keys.member_index, **_RAW)
        replies = await pipe.execute()
    since = dt.date.fromisoformat(replies[0].decode()) if replies[0] else None
    return since, (replies[1] if with_index else None)


async def read_draw(raw: aioredis.Redis, keys: Keys, promotion_id: str, draw: Draw) -> DrawReplies:
    """One draw's activated cards and the columns `read_fields` names, in one pipeline:
    Redis builds the next reply while this process parses the last one."""
    wanted = read_fields(draw)
    async with raw.pipeline(transaction=False) as pipe:
        pipe.execute_command("HKEYS", keys.activations(promotion_id, draw.id), **_RAW)
        for name in wanted:
            key = keys.window_field(promotion_id, draw.id, name)
            pipe.execute_command("HGETALL", key, **_RAW)
        replies = await pipe.execute()
    return DrawReplies(list(replies[0]), dict(zip(wanted, replies[1:], strict=True)))


async def read_rows(raw: aioredis.Redis, keys: Keys, cards: Sequence[bytes]) -> list[bytes | None]:
    """The member index rows of `cards` (None: never registered), one bounded batch at
    a time so that the event loop serves others between them."""
    rows: list[bytes | None] = []
    for at in range(0, len(cards), ROWS_PER_READ):
        batch = cards[at : at + ROWS_PER_READ]
        rows += await _command(raw, "HMGET", keys.member_index, *batch)
    return rows


async def read_values(
    raw: aioredis.Redis, key: str, cards: Sequence[bytes] | None
) -> tuple[Sequence[bytes], Sequence[bytes | None]]:
    """Cards and values of a card -> value hash: all of them (`cards` None), else those
    of `cards` (None where the hash has none)."""
    if cards is None:
        return pairs(cast(Flat, await _command(raw, "HGETALL", key)))
    return cards, await _command(raw, "HMGET", key, *cards)
