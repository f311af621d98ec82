"""The live push hub: one per daemon. It keeps the streams floor screens and crew
handhelds subscribe to (`signage:{site}:{area}`, `crew:{site}`), recomputes their views
when something they show may have changed, and hands each change to every subscriber.

A stream, its subscribers and their bounded queues are `bonusd.push.stream`: each message
is serialised once per stream, and nothing a subscriber does can delay the hub or
another subscriber.

Triggers: the Redis channel `{base}notify`, published in the same MULTI as every audit
commit (`audit_store`), so every daemon of a site hears every draw step; `announce()`
from the service's own handlers (boards published, multiplier windows); and a one-second
tick for clocks and as the fallback when a notification is lost. Only streams with
subscribers are recomputed, from one read of the site's inputs (`views.Inputs`). A change
of the clock (a jump, pause, resume or speed) goes to every stream as a delta at once
(`bonusd.push.clockstate`), and the views are recomputed.

Revocations travel on the same channel (`token-revoked:{id}`, `TokenStore.revoke`): the
hub kicks every subscriber holding that token (4401) the moment it hears one, and looks
the held tokens up in Redis after each (re)subscription and every `TOKEN_RECHECK_TICKS`,
for a revocation published while it was not listening. (Expiry is each connection's own
timer on the daemon's clock: `bonusd.api.push`.)
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar, cast
from zoneinfo import ZoneInfo

from redis.asyncio import Redis

from bonusd.access.auth import AuthError, Principal, TokenStore
from bonusd.clocks.clock import Clock
from bonusd.draws.book import DrawBook
from bonusd.errors import BonusdError
from bonusd.infra.backoff import pause
from bonusd.infra.channel import cancel_when, listen, notify_channel, revoked_token
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.promotions import Side
from bonusd.promotions.store import PromotionStore
from bonusd.push.clockstate import ClockWatch
from bonusd.push.presence import ScreenPresence
from bonusd.push.stream import REVOKED, SHUTDOWN, PushStats, Stream, Subscriber
from bonusd.push.views import (
    Inputs,
    Place,
    board_draws,
    cards_needed,
    relevant_draws,
    relevant_sessions,
)
from bonusd.raps.book import RapsBook

logger = logging.getLogger(__name__)

TICK_S = 1.0  # clocks and the lost-notification fallback (wall cadence, like a poll)
IDLE_TICKS = 300  # a stream without subscribers is forgotten after this many ticks
GC_WAVE, GC_QUIET_TICKS = 200, 5  # see PushHub._settle_gc
TOKEN_RECHECK_TICKS = 15  # held tokens looked up again (a revocation heard by nobody)
RECENT_REVOCATIONS = 1024  # kept to refuse a connection racing its token's revocation
DrawBooks = Callable[[str, str], Awaitable[DrawBook]]
SessionBooks = Callable[[str, str], Awaitable[RapsBook]]
B = TypeVar("B")


class PushUnavailable(BonusdError):
    """The stream's view cannot be computed now (Redis is down); the client retries."""


class PushHub:
    """The streams of one daemon and the task that keeps them current."""

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        clock: Clock,
        zone: ZoneInfo,
        promotions: PromotionStore,
        draw_book: DrawBooks,
        session_book: SessionBooks,
        queue_size: int = 64,
        resume_deltas: int = 256,
        ping_every_s: int = 10,
        handshake_s: float = 10.0,
    ) -> None:
        self._redis, self._keys, self._clock, self._zone = redis, keys, clock, zone
        self.clock_watch = ClockWatch(clock, zone)
        self._promotions = promotions
        self._draw_book, self._session_book = draw_book, session_book
        self.queue_size, self.resume_deltas = queue_size, resume_deltas
        self._ping_ticks = max(1, ping_every_s)
        self.handshake_s = handshake_s
        self.channel = notify_channel(keys)
        self._tokens, self.presence = TokenStore(redis, keys), ScreenPresence(redis, keys, clock)
        self._revoked: dict[str, None] = {}  # the latest revocations heard, oldest first
        self.ticks = 0
        self._ticked = False
        self._gc_seen = self._gc_frozen = self._gc_quiet = 0
        self.streams: dict[str, Stream] = {}
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._failing = False
        self._unreadable: set[tuple[str, str]] = set()
        self.recomputes = 0
        self.stats = PushStats()

    @property
    def site(self) -> str:
        return self._keys.site

    def stream_key(self, area: str | None) -> str:
        return f"signage:{self.site}:{area}" if area else f"crew:{self.site}"

    # -- triggers ---------------------------------------------------------------------------
    async def announce(self, reason: str) -> None:
        """Something the views show changed outside the audit trail (a board published, a
        multiplier window): recompute here, and tell the site's other daemons."""
        self._wake.set()
        try:
            await self._redis.publish(self.channel, reason)
        except REDIS_ERRORS as exc:
            logger.warning("push: could not tell other daemons of %s (%s)", reason, exc)

    # -- subscribers ------------------------------------------------------------------------
    async def subscribe(
        self, area: str | None, resume: tuple[str, int] | None, *, holder: Principal | None = None
    ) -> Subscriber:
        """Join the signage stream of `area` (the crew stream for None) as `holder` (the
        token is kicked with its subscribers when revoked): replay the deltas after
        `resume` when they are all here, else start with a snapshot."""
        key = self.stream_key(area)
        stream = self.streams.get(key)
        if stream is None:
            ring, clock = self.resume_deltas, self.clock_watch.message
            stream = self.streams[key] = Stream(key, area or "", ring, clock)
        stream.idle = 0  # not forgotten while this waits
        if stream.view is None or not stream.subscribers:
            await self.refresh([stream])  # not kept current while nobody watched
            if stream.view is None:
                raise PushUnavailable("the live view cannot be computed now; retry shortly")
        token_id = holder.token_id if holder is not None else ""
        if token_id in self._revoked:  # revoked while this connection was being checked
            raise AuthError(401, f"token {token_id} was revoked")
        sub = Subscriber(stream, self.queue_size, self.stats, token_id=token_id)
        replay = stream.replay(*resume) if resume is not None else None
        if replay is None or len(replay) >= self.queue_size:
            sub.queue.put_nowait(None)
        else:
            sub.sent_seq = resume[1] if resume is not None else -1
            for item in replay:
                sub.queue.put_nowait(item)
        stream.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        sub.stream.subscribers.discard(sub)

    @property
    def subscribers(self) -> int:
        return sum(len(s.subscribers) for s in self.streams.values())

    # -- revocation -------------------------------------------------------------------------
    def revoke(self, token_id: str) -> int:
        """Kick every subscriber holding token `token_id` (4401); how many there were."""
        self._revoked[token_id] = None
        while len(self._revoked) > RECENT_REVOCATIONS:
            del self._revoked[next(iter(self._revoked))]
        held = [s for st in self.streams.values() for s in st.subscribers if s.token_id == token_id]
        for sub in held:
            sub.kick(REVOKED, f"token {token_id} was revoked")
        if held:
            logger.info("push: token %s revoked; closing its %d connection(s)", token_id, len(held))
        return len(held)

    async def recheck_tokens(self) -> None:
        """Look the tokens of the subscribers up in Redis and kick those revoked meanwhile
        (a notification published while this hub was not listening is lost), and the staff
        sessions ended for inactivity (no notification tells of those)."""
        held = {s.token_id for st in self.streams.values() for s in st.subscribers}
        held.discard("")
        try:
            gone = await self._tokens.revoked_among(held, self._clock.now())
        except REDIS_ERRORS as exc:
            logger.debug("push: held tokens not looked up (%s); looked up again later", exc)
            return
        for token_id in gone:
            self.revoke(token_id)

    # -- the loop ---------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Listen for notifications and keep the watched streams current, until `stop`;
        then close every subscriber (1001, going away)."""
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._listen(stop), name="push-listen")
                tg.create_task(self._ticker(stop), name="push-tick")
                tg.create_task(self._loop(stop), name="push-loop")
                clock = tg.create_task(self.clock_watch.follow(self.clock_moved), name="push-clock")
                tg.create_task(cancel_when(stop, clock), name="push-clock-end")
        finally:
            for stream in self.streams.values():
                for sub in list(stream.subscribers):
                    sub.kick(SHUTDOWN, "the daemon is stopping")

    async def _ticker(self, stop: asyncio.Event) -> None:
        """The one-second tick (a wall cadence, like a poll; the time shown is the clock's)."""
        while not await pause(stop, TICK_S):
            self._ticked = True
            self._wake.set()
        self._wake.set()

    async def _loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._wake.wait()
            if stop.is_set():
                return
            self._wake.clear()
            watched = [s for s in self.streams.values() if s.subscribers]
            await self.refresh(watched)
            if self._ticked:
                self._ticked = False
                self._housekeeping()
                await self.presence.beat(self.streams, self.ticks)  # screens online
                if self.ticks % TOKEN_RECHECK_TICKS == 0:
                    await self.recheck_tokens()

    def _housekeeping(self) -> None:
        """Once a tick: pings for streams quiet for the ping interval, fresh clocks for
        snapshots, streams nobody watches forgotten, and the collector kept off
        long-lived connections."""
        self.ticks += 1
        self.clock_moved()  # a clock that announces no change (or one missed) is polled
        at = self._at()
        for key, stream in list(self.streams.items()):
            stream.at = at  # a snapshot sent now carries a fresh clock
            if stream.subscribers:
                stream.idle = 0
                if self.ticks - stream.spoke >= self._ping_ticks:
                    stream.ping(at)
                    stream.spoke = self.ticks
            else:
                stream.idle += 1
                if stream.idle > IDLE_TICKS:
                    del self.streams[key]
        self._settle_gc()

    def _settle_gc(self) -> None:
        """Once the connections of a wave of screens have settled (no change for a few
        ticks), move what they hold out of the collector's full passes, as start-up
        does for its own objects (`gc.freeze`): a full pass over 2,000 connections'
        objects stalls every screen for ~200 ms. When many have left, collect
        everything once and freeze again, so closed connections' cycles are freed."""
        subscribers = self.subscribers
        self._gc_quiet = self._gc_quiet + 1 if subscribers == self._gc_seen else 0
        self._gc_seen = subscribers
        grew, shrank = subscribers - self._gc_frozen, self._gc_frozen - subscribers
        if self._gc_quiet < GC_QUIET_TICKS or max(grew, shrank) < GC_WAVE:
            return
        if shrank > 0:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        self._gc_frozen = subscribers
        logger.info("push: %d connection(s) settled; kept out of full collections", subscribers)

    def clock_moved(self) -> None:
        """Tell every stream of a change of the clock, if there was one, and recompute."""
        went_back = self.clock_watch.poll()
        if went_back is None:
            return
        at = self._at()
        for stream in self.streams.values():
            stream.clock_moved(at, went_back=went_back)
        self._wake.set()

    def _at(self) -> str:
        return self._clock.now().astimezone(self._zone).isoformat(timespec="seconds")

    async def refresh(self, streams: Collection[Stream]) -> None:
        """Recompute `streams` from one read of the inputs and send what changed. One at
        a time, so sequence numbers follow the order the inputs were read in."""
        if not streams:
            return
        async with self._lock:
            try:
                inputs = await self.inputs()
            except (*REDIS_ERRORS, BonusdError) as exc:
                if not self._failing:
                    logger.warning("push: views not recomputed (%s); retrying each second", exc)
                self._failing = True
                return
            if self._failing:
                logger.warning("push: views recomputed again")
            self._failing = False
            at = self._at()
            for stream in streams:
                if stream.advance(stream.compute(inputs), at):
                    stream.spoke = self.ticks  # a delta is as good as a ping
            self.recomputes += 1

    async def _listen(self, stop: asyncio.Event) -> None:
        async def heard(data: str | None) -> None:
            token_id = revoked_token(data)
            if token_id is not None:
                self.revoke(token_id)
                return
            self.presence.moved(self.streams, data)  # a screen moved: it reconnects
            self._wake.set()  # also on (re)subscribing: whatever happened meanwhile
            if data is None:
                await self.recheck_tokens()

        await listen(self._redis, self.channel, stop, heard, what="push")

    # -- inputs -----------------------------------------------------------------------------
    async def inputs(self) -> Inputs:
        """Everything the views show, read now: the books of the draws and RAPS sessions
        near today, the published boards, the names and places of the members shown."""
        now = self._clock.now()
        promotions = tuple(self._promotions.promotions.values())
        draws: dict[str, DrawBook] = {}
        for pid, did in relevant_draws(promotions, now):
            book = await self._book(self._draw_book, pid, did)
            if book is not None:
                draws[f"{pid}.{did}"] = book
        sessions: dict[str, RapsBook] = {}
        for pid, sid in relevant_sessions(promotions, now):
            raps = await self._book(self._session_book, pid, sid)
            if raps is not None:
                sessions[f"{pid}.{sid}"] = raps
        boards: dict[tuple[str, str, str], dict[str, Any]] = {}
        for pid, did in board_draws(promotions, now):
            for side in Side:
                boards[(pid, did, side.value)] = await self._promotions.published_board(
                    pid, did, side
                )
        names = await self._names(sorted(cards_needed(draws, sessions, boards)))
        wanted = sorted({c.card for b in draws.values() for c in b.claims.values()})
        return Inputs(
            now=now,
            zone=self._zone,
            site=self.site,
            promotions=promotions,
            draws=draws,
            sessions=sessions,
            boards=boards,
            names=names,
            places=await self._places(wanted),
            audit_seq=await self._redis.llen(self._keys.audit),
        )

    async def _book(
        self, read: Callable[[str, str], Awaitable[B]], promotion_id: str, owner: str
    ) -> B | None:
        """A draw's or session's book; one that cannot be read (an altered ledger: the
        desk's report says so) is left off the screens rather than blanking them all."""
        try:
            book = await read(promotion_id, owner)
        except (BonusdError, ValueError) as exc:
            if (promotion_id, owner) not in self._unreadable:
                logger.error("push: %s.%s left off the screens: %s", promotion_id, owner, exc)
            self._unreadable.add((promotion_id, owner))
            return None
        self._unreadable.discard((promotion_id, owner))
        return book

    async def _names(self, cards: list[str]) -> dict[str, str]:
        if not cards:
            return {}
        async with self._redis.pipeline(transaction=False) as pipe:
            for card in cards:
                pipe.hget(self._keys.member(card), "name")
            names = cast(list[str | None], await pipe.execute())
        return {c: n for c, n in zip(cards, names, strict=True) if n}

    async def _places(self, cards: list[str]) -> dict[str, Place]:
        """Where the draw winners are carded in now, if they are (crew alerts)."""
        if not cards:
            return {}
        async with self._redis.pipeline(transaction=False) as pipe:
            for card in cards:
                pipe.hmget(self._keys.session(card), ["area", "device", "seat"])
            rows = cast(list[list[str | None]], await pipe.execute())
        found = {c: r for c, r in zip(cards, rows, strict=True) if r[1]}
        if not found:
            return {}
        async with self._redis.pipeline(transaction=False) as pipe:
            for _, device, _ in found.values():
                pipe.hget(self._keys.device(device or ""), "bank")
            banks = cast(list[str | None], await pipe.execute())
        return {
            card: Place(area or "", bank or "", device or "", int(seat) if seat else None)
            for (card, (area, device, seat)), bank in zip(found.items(), banks, strict=True)
        }
