"""Whole-draw views of a promotion: summaries and full recomputes over every member,
with the bulk (numpy) rules of `bonusd.promotions.bulk` on the per-field hashes the
ingest keeps (`pwf:{promotion}:{draw}:{field}`, card -> value)."""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from bonusd.promotions import Promotion, Side
from bonusd.promotions.bulk import (
    TIERS,
    MemberArrays,
    StatArrays,
    bulk_standings,
    needed_fields,
)
from bonusd.promotions.schema import Draw
from bonusd.standings import PromotionStore

_BULK_FIELDS = (
    "slots_points",
    "tables_points",
    "slots_plays",
    "tables_plays",
    "slots_visits",
    "tables_visits",
    "visits",
)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Hold full garbage collections while millions of short-lived strings and dicts are
    built: they hold no cycles, and each collection would walk all of them again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _column(rows: dict[str, int], values: dict[str, str]) -> npt.NDArray[np.int64]:
    """A card -> value hash as a column in the row order of `rows` (0 where absent)."""
    out = np.zeros(len(rows), np.int64)
    if values:
        where = np.fromiter(map(rows.__getitem__, values.keys()), np.int64, len(values))
        out[where] = np.fromiter(map(int, values.values()), np.int64, len(values))
    return out


class DrawSummaries:
    """Bulk reads of the live promotions of one site."""

    def __init__(self, store: PromotionStore) -> None:
        self._store = store
        self._redis = store.redis
        self._keys = store.keys

    async def _member_index(self) -> tuple[dict[str, int], MemberArrays]:
        """Every registered member as arrays, and each card's row (read once per recompute)."""
        index = cast(dict[str, str], await self._redis.hgetall(self._keys.member_index))
        cards = list(index)
        rows = {card: n for n, card in enumerate(cards)}
        return rows, MemberArrays.from_index(cards, list(index.values()))

    async def _arrays(
        self,
        p: Promotion,
        draw: Draw,
        index: tuple[dict[str, int], MemberArrays] | None = None,
    ) -> tuple[npt.NDArray[np.str_], MemberArrays, StatArrays, set[str]]:
        """Every member with play or an activation in the draw, as column arrays."""
        # every play in the window counts a gaming day, so the keys of the `visits` column
        # are exactly the members with play: no separate read of the member set
        boards = {f"{s.value}_points" for s in draw.qualification.sides if draw.leaderboard}
        wanted = sorted(needed_fields(draw) | boards | {"visits"})
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hkeys(self._store.key("act", p.id, draw.id))
            for name in wanted:
                pipe.hgetall(self._store.key("pwf", p.id, draw.id, name))
            replies = await pipe.execute()
        activated = set(cast(list[str], replies[0]))
        fetched: dict[str, dict[str, str]] = dict(zip(wanted, replies[1:], strict=True))
        cards = np.unique(np.array([*fetched["visits"].keys(), *activated], dtype=np.str_))
        index_rows, everyone = index or await self._member_index()
        card_list = cards.tolist()
        rows = np.fromiter((index_rows.get(c, -1) for c in card_list), np.int64, len(card_list))
        found = rows >= 0
        members = (
            everyone.take(card_list, np.where(found, rows, 0), found)
            if index_rows
            else MemberArrays.from_index(card_list, [None] * len(card_list))
        )
        rows_of = {card: n for n, card in enumerate(card_list)}
        columns = {name: _column(rows_of, fetched.get(name, {})) for name in _BULK_FIELDS}
        since = cast(str | None, await self._redis.hget(self._keys.stats, "telemetry_since"))
        stats = StatArrays(
            **columns, telemetry_since=dt.date.fromisoformat(since) if since else None
        )
        return cards, members, stats, activated

    async def summary(self, promotion_id: str, draw_id: str) -> dict[str, Any]:
        """Counts and ticket totals of a draw over its whole member base (bulk rules)."""
        p, draw = self._store.draw(promotion_id, draw_id)
        cards, members, stats, activated = await self._arrays(p, draw)
        bulk = bulk_standings(p, draw, members, stats)
        act = np.isin(cards, np.array(sorted(activated), dtype=np.str_))
        by_tier = {}
        for code, tier in enumerate(TIERS):
            mine = members.tier == code
            by_tier[tier.value] = {
                "qualified": int((bulk.qualified & mine).sum()),
                "tickets": int(bulk.tickets[mine].sum()),
            }
        return {
            "promotion": p.id,
            "draw": draw.id,
            "members_with_play": len(cards),
            "eligible": int(bulk.eligible.sum()),
            "qualified": int(bulk.qualified.sum()),
            "activated": int(act.sum()),
            "tickets": int(bulk.tickets.sum()),
            "entries": int(bulk.tickets[act].sum()),
            "per_tombola": {str(t): int(v.sum()) for t, v in bulk.per_tombola.items()},
            "by_tier": by_tier,
        }

    async def recompute(self, promotion_id: str) -> dict[str, dict[str, int]]:
        """Every standing and every board of a promotion, recomputed from the live totals
        with the bulk rules: per draw, how many standings and board places."""
        p = self._store.promotion(promotion_id)
        with _collector_paused():
            return await self._recompute(p)

    async def _recompute(self, p: Promotion) -> dict[str, dict[str, int]]:
        index = await self._member_index()
        out: dict[str, dict[str, int]] = {}
        for draw in p.draw_list:
            cards, members, stats, _ = await self._arrays(p, draw, index)
            bulk = bulk_standings(p, draw, members, stats)
            placed = 0
            if draw.leaderboard:
                for side in draw.qualification.sides:
                    placed += len(
                        await self._ranked(
                            p=p,
                            draw=draw,
                            side=side,
                            cards=cards,
                            eligible=bulk.eligible,
                            stats=stats,
                        )
                    )
            out[draw.id] = {
                "standings": len(cards),
                "qualified": int(bulk.qualified.sum()),
                "tickets": int(bulk.tickets.sum()),
                "board_places": placed,
            }
        return out

    async def board(self, promotion_id: str, draw_id: str, side: Side) -> list[str]:
        """A whole board's cards in order, computed in bulk (what `recompute` ranks)."""
        p, draw = self._store.draw(promotion_id, draw_id)
        cards, members, stats, _ = await self._arrays(p, draw)
        bulk = bulk_standings(p, draw, members, stats)
        ranked = await self._ranked(
            p=p, draw=draw, side=side, cards=cards, eligible=bulk.eligible, stats=stats
        )
        return [str(c) for c in ranked]

    async def _ranked(
        self,
        *,
        p: Promotion,
        draw: Draw,
        side: Side,
        cards: npt.NDArray[np.str_],
        eligible: npt.NDArray[np.bool_],
        stats: StatArrays,
    ) -> npt.NDArray[np.str_]:
        """A whole board in order (eligible members with points; ties to the earliest)."""
        points = stats.points(side)
        chosen = np.flatnonzero(eligible & (points > 0))
        # when a total was reached only matters between members with the same points:
        # fetch it for those alone
        _, inverse, counts = np.unique(points[chosen], return_inverse=True, return_counts=True)
        tied = chosen[counts[inverse] > 1]
        reached = np.zeros(len(cards), np.int64)
        key = self._store.key("pwf", p.id, draw.id, f"{side.value}_reached")
        if len(tied) > len(cards) // 10:
            # many ties: one whole-hash read beats packing a huge HMGET
            everything = cast(dict[str, str], await self._redis.hgetall(key))
            names = cards[tied].tolist()
            reached[tied] = [int(everything.get(c) or 2**62) for c in names]
        else:
            for i in range(0, len(tied), 20_000):
                rows = tied[i : i + 20_000]
                got = cast(list[str | None], await self._redis.hmget(key, cards[rows].tolist()))
                reached[rows] = [int(x) if x else 2**62 for x in got]
        order = np.lexsort((cards[chosen], reached[chosen], -points[chosen]))
        return cards[chosen][order]
