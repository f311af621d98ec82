"""Promotions on the live floor: standings, leaderboards, activations and frozen pools,
read from and written to Redis. The rules themselves live in `bonusd.promotions`; this
module only fetches their inputs and keeps their outputs.

    act:{promotion}:{draw}                 hash   card -> {"channel", "at"} activations
    lbpub:{promotion}:{draw}:{side}        string the latest published board (JSON)
    lbhist:{promotion}:{draw}:{side}       list   every published board, newest first
    pool:{promotion}:{draw}                string the frozen entry pool (canonical text)
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import WatchError

from bonusd.errors import BonusdError, NotFoundError
from bonusd.infra.keys import Keys
from bonusd.promotions import (
    BoardEntry,
    Channel,
    EntryPool,
    MemberWindowStats,
    Promotion,
    Ranked,
    Side,
    SideStats,
    Standing,
    activation_refusal,
    rank_leaderboard,
    seat_holders,
    standing,
)
from bonusd.promotions.schema import Draw
from bonusd.promotions.timing import bin_closes_at
from bonusd.registry.records import Member

BOARD_SIZE = 10
_CANDIDATE_BATCH = 200


class ActivationRefused(BonusdError):
    """An activation the rules do not allow now; the message says why."""


@dataclass(frozen=True, slots=True)
class Activation:
    card: str
    channel: Channel
    at: dt.datetime


def _ms_instant(raw: str | None) -> dt.datetime | None:
    return dt.datetime.fromtimestamp(int(raw) / 1000, dt.UTC) if raw else None


STAT_FIELDS = (
    *(
        f"{side}_{name}"
        for side in ("slots", "tables")
        for name in ("points", "plays", "visits", "reached")
    ),
    "visits",
)
_BULK = 2_000  # above this many cards, read whole hashes instead of HMGET


def stats_of(totals: dict[str, str | None], since: dt.date | None) -> MemberWindowStats:
    """One member's window totals from its `STAT_FIELDS` values (None: no play counted);
    `since`: the first gaming day of telemetry."""

    def side(name: str) -> SideStats:
        return SideStats(
            points=int(totals[f"{name}_points"] or 0),
            visits=int(totals[f"{name}_visits"] or 0),
            plays=int(totals[f"{name}_plays"] or 0),
            reached_at=_ms_instant(totals[f"{name}_reached"]),
        )

    return MemberWindowStats(
        slots=side("slots"),
        tables=side("tables"),
        visits=int(totals["visits"] or 0),
        telemetry_since=since,
    )


class PromotionStore:
    """The live promotions of one site."""

    def __init__(self, redis: Redis, keys: Keys, promotions: Sequence[Promotion]) -> None:
        self.redis = redis
        self.keys = keys
        self.promotions = {p.id: p for p in promotions}

    def promotion(self, promotion_id: str) -> Promotion:
        try:
            return self.promotions[promotion_id]
        except KeyError:
            known = ", ".join(sorted(self.promotions)) or "none"
            raise NotFoundError(
                f"no promotion {promotion_id!r} runs at this site (running: {known})"
            ) from None

    def draw(self, promotion_id: str, draw_id: str) -> tuple[Promotion, Draw]:
        promotion = self.promotion(promotion_id)
        try:
            return promotion, promotion.draw(draw_id)
        except KeyError as exc:
            raise NotFoundError(str(exc).strip("'\"")) from None

    # -- members --------------------------------------------------------------------------

    async def member(self, card: str) -> Member:
        raw = cast(dict[str, str], await self.redis.hgetall(self.keys.member(card)))
        if not raw:
            raise NotFoundError(
                f"card {card} is not a registered member; import it before its standing "
                "can be judged (its play is kept meanwhile)"
            )
        return Member.from_redis(raw)

    async def window_stats(
        self, promotion: Promotion, draw: Draw, cards: Sequence[str]
    ) -> list[MemberWindowStats]:
        """Window stats of many members: one HMGET per field for the lot."""
        if not cards:
            return []
        since = cast(str | None, await self.redis.hget(self.keys.stats, "telemetry_since"))
        since_day = dt.date.fromisoformat(since) if since else None
        if len(cards) > _BULK:
            # many members: whole field hashes are cheaper than packing huge HMGETs
            async with self.redis.pipeline(transaction=False) as pipe:
                for name in STAT_FIELDS:
                    pipe.hgetall(self.keys.window_field(promotion.id, draw.id, name))
                maps: list[dict[str, str]] = await pipe.execute()
            return [
                stats_of(
                    {n: m.get(card) for n, m in zip(STAT_FIELDS, maps, strict=True)}, since_day
                )
                for card in cards
            ]
        async with self.redis.pipeline(transaction=False) as pipe:
            for name in STAT_FIELDS:
                pipe.hmget(self.keys.window_field(promotion.id, draw.id, name), list(cards))
            columns: list[list[str | None]] = await pipe.execute()
        return [
            stats_of(
                {name: col[n] for name, col in zip(STAT_FIELDS, columns, strict=True)}, since_day
            )
            for n in range(len(cards))
        ]

    async def standing(self, promotion_id: str, draw_id: str, card: str) -> Standing:
        promotion, draw = self.draw(promotion_id, draw_id)
        member = await self.member(card)
        (stats,) = await self.window_stats(promotion, draw, [card])
        activated = await self.redis.hexists(self.keys.activations(promotion.id, draw.id), card)
        return standing(
            promotion, draw, member, stats, activated=bool(activated), on_date=draw.date
        )

    async def all_standings(self, promotion_id: str, draw_id: str) -> list[Standing]:
        """The standing of every member with play in the draw's window (or an activation),
        recomputed from the live totals and today's member records."""
        promotion, draw = self.draw(promotion_id, draw_id)
        played = cast(set[str], await self.redis.smembers(self.keys.played(promotion.id, draw.id)))
        activated = set(
            cast(list[str], await self.redis.hkeys(self.keys.activations(promotion.id, draw.id)))
        )
        return await self._standings(promotion, draw, sorted(played | activated), activated)

    async def _standings(
        self, promotion: Promotion, draw: Draw, cards: Sequence[str], activated: set[str]
    ) -> list[Standing]:
        """Numbers only (no explanation texts): bulk work for thousands of members."""
        out: list[Standing] = []
        members = await self._members(cards)
        stats = await self.window_stats(promotion, draw, cards)
        for card, member, st in zip(cards, members, stats, strict=True):
            if member is not None:
                act = card in activated
                out.append(
                    standing(
                        promotion, draw, member, st, activated=act, on_date=draw.date, explain=False
                    )
                )
        return out

    async def full_board(self, promotion_id: str, draw_id: str, side: Side) -> tuple[Ranked, ...]:
        """The whole live board of one side (eligible members, ranked)."""
        promotion, draw = self.draw(promotion_id, draw_id)
        rows = cast(
            list[tuple[str, float]],
            await self.redis.zrevrange(
                self.keys.board(promotion.id, draw.id, side.value), 0, -1, withscores=True
            ),
        )
        cards = [card for card, _ in rows]
        members = await self._members(cards)
        reached = cast(
            dict[str, str],
            await self.redis.hgetall(
                self.keys.window_field(promotion.id, draw.id, f"{side.value}_reached")
            ),
        )
        never = dt.datetime.max.replace(tzinfo=dt.UTC)
        entries = [
            BoardEntry(member, int(score), _ms_instant(reached.get(card)) or never)
            for (card, score), member in zip(rows, members, strict=True)
            if member is not None
        ]
        return rank_leaderboard(
            promotion, draw, side, entries, qualified_only=False, on_date=draw.date
        )

    async def _members(self, cards: Sequence[str]) -> list[Member | None]:
        """The rules' view of many members (None for a card never imported); like
        `window_stats`, a whole-hash read when there are many."""
        if not cards:
            return []
        if len(cards) > _BULK:
            index = cast(dict[str, str], await self.redis.hgetall(self.keys.member_index))
            texts: list[str | None] = [index.get(c) for c in cards]
        else:
            texts = cast(
                list[str | None], await self.redis.hmget(self.keys.member_index, list(cards))
            )
        return [Member.from_index(c, t) if t else None for c, t in zip(cards, texts, strict=True)]

    # -- activation -----------------------------------------------------------------------

    async def activate(
        self, promotion_id: str, draw_id: str, card: str, channel: Channel, now: dt.datetime
    ) -> Activation:
        """Record an activation, or raise `ActivationRefused` saying why not."""
        promotion, draw = self.draw(promotion_id, draw_id)
        await self.member(card)
        active = bool(await self.redis.exists(self.keys.session(card)))
        refusal = activation_refusal(promotion, draw, channel, now, active_on_floor=active)
        if refusal:
            raise ActivationRefused(f"card {card}, draw {draw.id}: {refusal}")
        record = json.dumps({"channel": channel.value, "at": now.isoformat()})
        # the first activation stands; a second through another channel changes nothing
        await self.redis.hsetnx(self.keys.activations(promotion.id, draw.id), card, record)
        stored = json.loads(
            cast(str, await self.redis.hget(self.keys.activations(promotion.id, draw.id), card))
        )
        return Activation(card, Channel(stored["channel"]), dt.datetime.fromisoformat(stored["at"]))

    # -- leaderboards ---------------------------------------------------------------------

    async def live_board(
        self, promotion_id: str, draw_id: str, side: Side, *, size: int = BOARD_SIZE
    ) -> tuple[Ranked, ...]:
        """The top of the live board: eligible members only, ties to who got there first."""
        promotion, draw = self.draw(promotion_id, draw_id)
        key = self.keys.board(promotion.id, draw.id, side.value)
        entries: list[BoardEntry] = []
        start = 0
        ranked: tuple[Ranked, ...] = ()
        while True:
            rows = cast(
                list[tuple[str, float]],
                await self.redis.zrevrange(
                    key, start, start + _CANDIDATE_BATCH - 1, withscores=True
                ),
            )
            if not rows:
                break
            entries += await self._board_entries(promotion, draw, side, rows)
            start += len(rows)
            ranked = rank_leaderboard(
                promotion, draw, side, entries, qualified_only=False, on_date=draw.date
            )
            last_score = rows[-1][1]
            # enough eligible members above any score still unread: the top is settled
            if len(ranked) >= size and ranked[size - 1].points > last_score:
                break
            if len(rows) < _CANDIDATE_BATCH:
                break
        return ranked[:size]

    async def _board_entries(
        self, promotion: Promotion, draw: Draw, side: Side, rows: list[tuple[str, float]]
    ) -> list[BoardEntry]:
        cards = [card for card, _ in rows]
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hmget(self.keys.member_index, cards)
            pipe.hmget(
                self.keys.window_field(promotion.id, draw.id, f"{side.value}_reached"), cards
            )
            index, reached = await pipe.execute()
        out = []
        for (card, score), text, when in zip(rows, index, reached, strict=True):
            if text is None:
                continue  # an unregistered card cannot be judged eligible; never shown
            at = _ms_instant(when) or dt.datetime.max.replace(tzinfo=dt.UTC)
            out.append(BoardEntry(Member.from_index(card, text), int(score), at))
        return out

    async def publish_board(
        self, promotion_id: str, draw_id: str, side: Side, now: dt.datetime
    ) -> dict[str, Any]:
        board = await self.live_board(promotion_id, draw_id, side)
        snapshot = {
            "promotion": promotion_id,
            "draw": draw_id,
            "side": side.value,
            "published_at": now.isoformat(),
            "entries": [
                {"position": r.position, "card": r.card, "points": r.points} for r in board
            ],
        }
        text = json.dumps(snapshot)
        latest = self.keys.board_published(promotion_id, draw_id, side.value)
        # once per instant: a run again after a crash (before the scheduler's marker) keeps
        # the board first published then, and adds no second copy to the history
        while True:
            async with self.redis.pipeline(transaction=True) as pipe:
                await pipe.watch(latest)
                current = await pipe.get(latest)
                if current is not None:
                    published = cast(dict[str, Any], json.loads(current))
                    if published.get("published_at") == snapshot["published_at"]:
                        return published
                pipe.multi()  # type: ignore[no-untyped-call]
                pipe.set(latest, text)
                pipe.lpush(self.keys.board_history(promotion_id, draw_id, side.value), text)
                try:
                    await pipe.execute()
                except WatchError:
                    continue  # another daemon published meanwhile: look again
            return snapshot

    async def published_board(self, promotion_id: str, draw_id: str, side: Side) -> dict[str, Any]:
        self.draw(promotion_id, draw_id)
        text = await self.redis.get(self.keys.board_published(promotion_id, draw_id, side.value))
        if text is None:
            return {
                "promotion": promotion_id,
                "draw": draw_id,
                "side": side.value,
                "published_at": None,
                "entries": [],
            }
        return cast(dict[str, Any], json.loads(text))

    # -- entry pools ----------------------------------------------------------------------

    async def freeze_pool(self, promotion_id: str, draw_id: str, now: dt.datetime) -> EntryPool:
        """Freeze the draw's entry pool once; later calls return the pool frozen first."""
        promotion, draw = self.draw(promotion_id, draw_id)
        existing = await self.pool(promotion_id, draw_id)
        if existing is not None:
            return existing
        activated = set(
            cast(list[str], await self.redis.hkeys(self.keys.activations(promotion.id, draw.id)))
        )
        standings = await self._standings(promotion, draw, sorted(activated), activated)
        seats: list[list[str]] = []
        if draw.seats is not None:
            boards = {
                side: await self.live_board(promotion.id, draw.id, side, size=BOARD_SIZE)
                for side in draw.seats.boards
            }
            seats = [[s.board.value, s.card] for s in seat_holders(promotion, draw, boards)]
        seated = [card for _, card in seats]
        pool = EntryPool.from_standings(promotion.id, draw, standings, closed_at=now, seated=seated)
        # SET NX: two daemons racing to freeze agree on whichever pool landed first
        if await self.redis.set(self.keys.pool(promotion.id, draw.id), pool.canonical(), nx=True):
            await self.redis.set(self.keys.seats(promotion.id, draw.id), json.dumps(seats))
        frozen = await self.pool(promotion_id, draw_id)
        assert frozen is not None
        return frozen

    async def pool(self, promotion_id: str, draw_id: str) -> EntryPool | None:
        raw = await self.redis.get(self.keys.pool(promotion_id, draw_id))
        if raw is None:
            return None
        return EntryPool.parse(raw.encode() if isinstance(raw, str) else raw)

    async def seats(self, promotion_id: str, draw_id: str) -> list[tuple[str, str]]:
        """(board, card) of each leaderboard seat taken when the bin closed, in seat order."""
        raw = await self.redis.get(self.keys.seats(promotion_id, draw_id))
        return [(board, card) for board, card in json.loads(raw)] if raw else []

    def bin_closes_at(self, promotion_id: str, draw_id: str) -> dt.datetime:
        promotion, draw = self.draw(promotion_id, draw_id)
        return bin_closes_at(promotion, draw)
