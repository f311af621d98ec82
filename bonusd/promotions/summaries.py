"""Whole-draw views of a promotion: summaries and full recomputes over every member,
with the bulk (numpy) rules of `bonusd.promotions.bulk` on the per-field hashes the
ingest keeps (`pwf:{promotion}:{draw}:{field}`, card -> value)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import redis.exceptions

from bonusd.errors import ServiceUnavailableError
from bonusd.promotions import Promotion, Side
from bonusd.promotions.bulk import (
    TIERS,
    MemberArrays,
    StatArrays,
    bulk_standings,
    needed_fields,
)
from bonusd.promotions.schema import Draw
from bonusd.promotions.store import PromotionStore

_BULK_FIELDS = (
    "slots_points",
    "tables_points",
    "slots_plays",
    "tables_plays",
    "slots_visits",
    "tables_visits",
    "visits",
)


def _column(rows: dict[str, int], values: dict[str, str]) -> npt.NDArray[np.int64]:
    """A card -> value hash as a column in the row order of `rows` (0 where absent)."""
    out = np.zeros(len(rows), np.int64)
    if values:
        where = np.fromiter(map(rows.__getitem__, values.keys()), np.int64, len(values))
        out[where] = np.fromiter(map(int, values.values()), np.int64, len(values))
    return out


@dataclass(frozen=True)
class _Fetched:
    """One draw's raw replies: activated cards and the needed columns (card -> value)."""

    activated: set[str]
    columns: dict[str, dict[str, str]]


_Index = tuple[dict[str, int], MemberArrays]

# HMGET batch for a summary's member rows: packing and parsing one batch is the longest
# the event loop is held at a time (~2 ms), and other work runs between batches
_ROWS_PER_READ = 1_000


def _summarise(  # noqa: PLR0917 -- private; runs in a worker thread on data nobody else holds
    promotion: Promotion,
    draw: Draw,
    fetched: _Fetched,
    cards: Sequence[str],
    texts: Sequence[str | None],
    since: dt.date | None,
) -> dict[str, Any]:
    """A draw's summary from its fetched replies: every per-member step (parsing the
    member rows, the columns, the bulk rules, the totals) is here, off the event loop."""
    members = MemberArrays.from_index(cards, texts)
    rows_of = {card: n for n, card in enumerate(cards)}
    stats = StatArrays(
        **{name: _column(rows_of, fetched.columns.get(name, {})) for name in _BULK_FIELDS},
        telemetry_since=since,
    )
    bulk = bulk_standings(promotion, draw, members, stats)
    act = np.fromiter((c in fetched.activated for c in cards), np.bool_, len(cards))
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
        "members_with_play": len(cards),
        "eligible": int(bulk.eligible.sum()),
        "qualified": int(bulk.qualified.sum()),
        "activated": int(act.sum()),
        "tickets": int(bulk.tickets.sum()),
        "entries": int(bulk.tickets[act].sum()),
        "per_tombola": {str(t): int(v.sum()) for t, v in bulk.per_tombola.items()},
        "by_tier": by_tier,
    }


def _index(raw: dict[str, str]) -> _Index:
    """Every registered member as arrays, and each card's row in them."""
    cards = list(raw)
    return {c: n for n, c in enumerate(cards)}, MemberArrays.from_index(cards, list(raw.values()))


class DrawSummaries:
    """Bulk reads of the live promotions of one site."""

    def __init__(self, store: PromotionStore) -> None:
        self._store = store
        self._redis = store.redis
        self._keys = store.keys

    async def _fetch(
        self, promotion: Promotion, draws: list[Draw], *, with_index: bool
    ) -> tuple[list[_Fetched], dict[str, str] | None, dt.date | None]:
        """Everything the draws' rules read, in one pipeline: Redis builds the next reply
        while this process parses the last one. Only the columns the rules need; every
        play counts a gaming day, so the `visits` column's keys are the members with play."""
        plan = []
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hget(self._keys.stats, "telemetry_since")
            if with_index:
                pipe.hgetall(self._keys.member_index)
            for draw in draws:
                sides = draw.qualification.sides if draw.leaderboard else []
                wanted = sorted(
                    needed_fields(draw) | {f"{s.value}_points" for s in sides} | {"visits"}
                )
                plan.append(wanted)
                pipe.hkeys(self._store.keys.activations(promotion.id, draw.id))
                for name in wanted:
                    pipe.hgetall(self._store.keys.window_field(promotion.id, draw.id, name))
            replies = await pipe.execute()
        since = dt.date.fromisoformat(replies[0]) if replies[0] else None
        index = replies[1] if with_index else None
        at = 2 if with_index else 1
        out = []
        for wanted in plan:
            activated = set(replies[at])
            columns = dict(zip(wanted, replies[at + 1 : at + 1 + len(wanted)], strict=True))
            out.append(_Fetched(activated, columns))
            at += 1 + len(wanted)
        return out, index, since

    def _build(
        self, fetched: _Fetched, index: _Index, since: dt.date | None
    ) -> tuple[npt.NDArray[np.str_], MemberArrays, StatArrays]:
        """Column arrays of every member with play or an activation in one draw."""
        columns = fetched.columns
        cards = np.unique(np.array([*columns["visits"].keys(), *fetched.activated], np.str_))
        index_rows, everyone = index
        card_list = cards.tolist()
        rows = np.fromiter((index_rows.get(c, -1) for c in card_list), np.int64, len(card_list))
        found = rows >= 0
        members = (
            everyone.take(card_list, np.where(found, rows, 0), found)
            if index_rows
            else MemberArrays.from_index(card_list, [None] * len(card_list))
        )
        rows_of = {card: n for n, card in enumerate(card_list)}
        stats = StatArrays(
            **{name: _column(rows_of, columns.get(name, {})) for name in _BULK_FIELDS},
            telemetry_since=since,
        )
        return cards, members, stats

    async def _arrays(
        self, promotion: Promotion, draw: Draw
    ) -> tuple[npt.NDArray[np.str_], MemberArrays, StatArrays, _Fetched]:
        (fetched,), raw_index, since = await self._fetch(promotion, [draw], with_index=True)
        assert raw_index is not None
        cards, members, stats = self._build(fetched, _index(raw_index), since)
        return cards, members, stats, fetched

    async def summary(self, promotion_id: str, draw_id: str) -> dict[str, Any]:
        """Counts and ticket totals of a draw over its whole member base (bulk rules).

        The event loop only sends the reads and takes the replies: the member rows read
        are those of members with play or an activation in the draw (not the whole
        index), and the per-member work runs in a worker thread. A Redis timeout is
        `ServiceUnavailableError` (the desk may retry), not an internal error."""
        promotion, draw = self._store.draw(promotion_id, draw_id)
        try:
            (fetched,), _, since = await self._fetch(promotion, [draw], with_index=False)
            cards = list(fetched.columns["visits"].keys() | fetched.activated)
            texts = await self._member_rows(cards)
        except (redis.exceptions.TimeoutError, redis.exceptions.ConnectionError) as exc:
            raise ServiceUnavailableError(
                f"the summary of {promotion_id}/{draw_id} could not be read from Redis "
                f"({type(exc).__name__}: {exc}); Redis is slow or unreachable, try again"
            ) from exc
        return await asyncio.to_thread(_summarise, promotion, draw, fetched, cards, texts, since)

    async def _member_rows(self, cards: Sequence[str]) -> list[str | None]:
        """The member index rows of `cards` (None: never registered), one bounded batch
        at a time so that the loop serves others between them."""
        rows: list[str | None] = []
        for at in range(0, len(cards), _ROWS_PER_READ):
            batch = list(cards[at : at + _ROWS_PER_READ])
            rows += cast(list[str | None], await self._redis.hmget(self._keys.member_index, batch))
        return rows

    async def recompute(self, promotion_id: str) -> dict[str, dict[str, int]]:
        """Every standing and every board of a promotion, recomputed from the live totals
        with the bulk rules: per draw, how many standings and board places."""
        promotion = self._store.promotion(promotion_id)
        return await self._recompute(promotion)

    async def _recompute(self, promotion: Promotion) -> dict[str, dict[str, int]]:
        draws = list(promotion.draw_list)
        fetched, raw_index, since = await self._fetch(promotion, draws, with_index=True)
        assert raw_index is not None
        index = _index(raw_index)
        out: dict[str, dict[str, int]] = {}
        for draw, draw_fetched in zip(draws, fetched, strict=True):
            cards, members, stats = self._build(draw_fetched, index, since)
            bulk = bulk_standings(promotion, draw, members, stats)
            placed = 0
            if draw.leaderboard:
                for side in draw.qualification.sides:
                    placed += len(
                        await self._ranked(promotion, draw, side, cards, bulk.eligible, stats)
                    )
            out[draw.id] = {
                "standings": len(cards),
                "qualified": int(bulk.qualified.sum()),
                "tickets": int(bulk.tickets.sum()),
                "board_places": placed,
            }
        return out

    async def _ranked(  # noqa: PLR0917 -- private; the arrays travel together
        self,
        promotion: Promotion,
        draw: Draw,
        side: Side,
        cards: npt.NDArray[np.str_],
        eligible: npt.NDArray[np.bool_],
        stats: StatArrays,
    ) -> npt.NDArray[np.str_]:
        """A whole board in order: eligible members with points, ties to who got there
        first (the instant only matters, and is only read, for tied totals)."""
        points = stats.points(side)
        chosen = np.flatnonzero(eligible & (points > 0))
        _, inverse, counts = np.unique(points[chosen], return_inverse=True, return_counts=True)
        tied = chosen[counts[inverse] > 1]
        reached = np.zeros(len(cards), np.int64)
        key = self._store.keys.window_field(promotion.id, draw.id, f"{side.value}_reached")
        names = cards[tied].tolist()
        if len(tied) > len(cards) // 10:  # many ties: one whole-hash read beats a huge HMGET
            when = cast(dict[str, str], await self._redis.hgetall(key))
            reached[tied] = [int(when.get(c) or 2**62) for c in names]
        elif names:
            got = cast(list[str | None], await self._redis.hmget(key, names))
            reached[tied] = [int(x) if x else 2**62 for x in got]
        order = np.lexsort((cards[chosen], reached[chosen], -points[chosen]))
        return cards[chosen][order]

    async def board(self, promotion_id: str, draw_id: str, side: Side) -> list[str]:
        """A whole board's cards in order, computed in bulk (what `recompute` ranks)."""
        promotion, draw = self._store.draw(promotion_id, draw_id)
        cards, members, stats, _ = await self._arrays(promotion, draw)
        bulk = bulk_standings(promotion, draw, members, stats)
        ranked = await self._ranked(promotion, draw, side, cards, bulk.eligible, stats)
        return [str(c) for c in ranked]
