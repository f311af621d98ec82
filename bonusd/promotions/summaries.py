"""Whole-draw views of a promotion: summaries, full recomputes and whole boards over
every member, with the bulk (numpy) rules of `bonusd.promotions.bulk` on the per-field
hashes the ingest keeps (`pwf:{promotion}:{draw}:{field}`, card -> value).

The reads are undecoded (`rawread`: flat lists of bytes, no dict per hash) and every
per-member step (columns, member rows, the rules, ranking) runs in a worker thread
(`columns`); the event loop only sends the reads and takes the replies."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions

from bonusd.errors import ServiceUnavailableError
from bonusd.promotions import Promotion, Side
from bonusd.promotions.bulk import TIERS, BulkStandings, Ints, MemberArrays, bulk_standings
from bonusd.promotions.columns import (
    NEVER_REACHED,
    DrawColumns,
    DrawReplies,
    Flat,
    MemberIndex,
    board_order,
    tied_rows,
)
from bonusd.promotions.rawread import raw_client, read_draw, read_head, read_rows, read_values
from bonusd.promotions.schema import Draw
from bonusd.promotions.store import PromotionStore

BULK_AT_ONCE = 2  # whole-draw reads (summaries, boards, recomputes) a daemon runs at once


def _summarise(
    promotion: Promotion, draw: Draw, columns: DrawColumns, rows: Sequence[bytes | None]
) -> dict[str, Any]:
    """A draw's summary from its columns and its players' index rows: every per-member
    step (parsing the member rows, the bulk rules, the totals) is here, off the loop."""
    members = MemberArrays.from_rows(columns.cards, rows)
    bulk = bulk_standings(promotion, draw, members, columns.stats)
    by_tier = {}
    for code, tier in enumerate(TIERS):
        mine = members.tier == code
        by_tier[tier.value] = {
            "qualified": int((bulk.qualified & mine).sum()),
            "tickets": int(bulk.tickets[mine].sum()),
        }
    return {
        "promotion": promotion.id,
        "draw": draw.id,
        "members_with_play": len(columns.cards),
        "eligible": int(bulk.eligible.sum()),
        "qualified": int(bulk.qualified.sum()),
        "activated": int(columns.activated.sum()),
        "tickets": int(bulk.tickets.sum()),
        "entries": int(bulk.tickets[columns.activated].sum()),
        "per_tombola": {str(t): int(v.sum()) for t, v in bulk.per_tombola.items()},
        "by_tier": by_tier,
    }


@dataclass(frozen=True)
class _DrawView:
    """One draw's members with play or an activation, their standings in bulk."""

    columns: DrawColumns
    bulk: BulkStandings

    @classmethod
    def build(  # runs in a worker thread on data nobody else holds
        cls,
        promotion: Promotion,
        draw: Draw,
        replies: DrawReplies,
        index: MemberIndex | Flat,
        since: dt.date | None,
    ) -> _DrawView:
        if not isinstance(index, MemberIndex):
            index = MemberIndex.parse(index)
        columns = DrawColumns.build(replies, since)
        members = index.of(columns.cards)
        return cls(columns, bulk_standings(promotion, draw, members, columns.stats))

    def order(
        self, side: Side, chosen: Ints, reached: tuple[Sequence[bytes], Sequence[bytes | None]]
    ) -> Ints:
        """The rows of the board of `side` in order, given the reached instants read."""
        instants = self.columns.column(*reached, absent=NEVER_REACHED)
        return board_order(self.columns.cards, chosen, self.columns.stats.points(side), instants)


def _standings(view: _DrawView, placed: int) -> dict[str, int]:
    return {
        "standings": len(view.columns.cards),
        "qualified": int(view.bulk.qualified.sum()),
        "tickets": int(view.bulk.tickets.sum()),
        "board_places": placed,
    }


async def _settle(pending: asyncio.Task[Any] | None) -> None:
    """Stop a read started ahead and no longer wanted (its error, if any, is not ours)."""
    if pending is None:
        return
    pending.cancel()
    await asyncio.wait([pending])
    if not pending.cancelled():
        pending.exception()  # retrieved: a failed read ahead is not reported twice


class DrawSummaries:
    """Bulk reads of the live promotions of one site."""

    def __init__(self, store: PromotionStore, *, at_once: int = BULK_AT_ONCE) -> None:
        self._store = store
        self._redis = store.redis
        self._keys = store.keys
        self._bulk = asyncio.Semaphore(at_once)  # whole-draw reads running at once

    @contextlib.asynccontextmanager
    async def _raw(self) -> AsyncIterator[aioredis.Redis]:
        """A raw client for one whole-draw read, once fewer than `at_once` run (each
        holds a few connections of its own besides the daemon's pool)."""
        async with self._bulk, raw_client(self._redis) as raw:
            yield raw

    async def summary(self, promotion_id: str, draw_id: str) -> dict[str, Any]:
        """Counts and ticket totals of a draw over its whole member base (bulk rules).

        The event loop only sends the reads and takes the replies: the member rows read
        are those of members with play or an activation in the draw (not the whole
        index), and the per-member work runs in a worker thread. A Redis timeout is
        `ServiceUnavailableError` (the desk may retry), not an internal error."""
        promotion, draw = self._store.draw(promotion_id, draw_id)
        try:
            async with self._raw() as raw:
                since, _ = await read_head(raw, self._keys, with_index=False)
                replies = await read_draw(raw, self._keys, promotion.id, draw)
                columns = await asyncio.to_thread(DrawColumns.build, replies, since)
                rows = await read_rows(raw, self._keys, columns.cards)
        except (redis.exceptions.TimeoutError, redis.exceptions.ConnectionError) as exc:
            raise ServiceUnavailableError(
                f"the summary of {promotion_id}/{draw_id} could not be read from Redis "
                f"({type(exc).__name__}: {exc}); Redis is slow or unreachable, try again"
            ) from exc
        return await asyncio.to_thread(_summarise, promotion, draw, columns, rows)

    async def recompute(self, promotion_id: str) -> dict[str, dict[str, int]]:
        """Every standing and every board of a promotion, recomputed from the live totals
        with the bulk rules: per draw, how many standings and board places."""
        promotion = self._store.promotion(promotion_id)
        return await self._recompute(promotion)

    async def _recompute(self, promotion: Promotion) -> dict[str, dict[str, int]]:
        """Draw by draw; the next draw's columns are read while this one is computed
        and ranked (Redis builds replies while this process works)."""
        draws = list(promotion.draw_list)
        out: dict[str, dict[str, int]] = {}
        ahead: asyncio.Task[DrawReplies] | None = None
        async with self._raw() as raw:
            try:
                since, raw_index = await read_head(raw, self._keys, with_index=True)
                assert raw_index is not None
                if draws:
                    ahead = asyncio.ensure_future(self._read(raw, promotion, draws[0]))
                index = await asyncio.to_thread(MemberIndex.parse, raw_index)
                del raw_index
                for at, draw in enumerate(draws):
                    assert ahead is not None
                    replies = await ahead
                    if at + 1 < len(draws):
                        ahead = asyncio.ensure_future(self._read(raw, promotion, draws[at + 1]))
                    view = await asyncio.to_thread(
                        _DrawView.build, promotion, draw, replies, index, since
                    )
                    del replies
                    placed = 0
                    for side in draw.qualification.sides if draw.leaderboard else []:
                        placed += len(await self._ranked(raw, promotion, draw, side, view))
                    out[draw.id] = _standings(view, placed)
            finally:
                await _settle(ahead)
        return out

    async def _read(self, raw: aioredis.Redis, promotion: Promotion, draw: Draw) -> DrawReplies:
        return await read_draw(raw, self._keys, promotion.id, draw)

    async def _ranked(
        self,
        raw: aioredis.Redis,
        promotion: Promotion,
        draw: Draw,
        side: Side,
        view: _DrawView,
    ) -> Ints:
        """The rows of a whole board in order: eligible members with points, ties to who got there
        first (the instant only matters, and is only read, for tied totals)."""
        points = view.columns.stats.points(side)
        chosen, tied = await asyncio.to_thread(tied_rows, points, view.bulk.eligible)
        key = self._keys.window_field(promotion.id, draw.id, f"{side.value}_reached")
        reached: tuple[Sequence[bytes], Sequence[bytes | None]] = ([], [])
        if len(tied) > len(view.columns.cards) // 10:  # many ties: one whole-hash read
            reached = await read_values(raw, key, None)  # beats a huge HMGET
        elif len(tied):
            reached = await read_values(raw, key, [view.columns.cards[n] for n in tied])
        return await asyncio.to_thread(view.order, side, chosen, reached)

    async def board(self, promotion_id: str, draw_id: str, side: Side) -> list[str]:
        """A whole board's cards in order, computed in bulk (what `recompute` ranks)."""
        promotion, draw = self._store.draw(promotion_id, draw_id)
        async with self._raw() as raw:
            since, raw_index = await read_head(raw, self._keys, with_index=True)
            assert raw_index is not None
            replies = await read_draw(raw, self._keys, promotion.id, draw)
            view = await asyncio.to_thread(
                _DrawView.build, promotion, draw, replies, raw_index, since
            )
            ranked = await self._ranked(raw, promotion, draw, side, view)
        return [view.columns.cards[row].decode() for row in ranked.tolist()]
