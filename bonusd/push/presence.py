"""Which floor screens are connected now and when each was last seen, kept by the push hub
(`bonusd.push.hub` calls `beat` once a tick and `moved` for what it hears on the site's
channel); the desk reads them (`bonusd.access.machines`).

Each tick the hub's signage subscribers are looked at: a screen token newly connected to
this daemon gets its `online:{id}` marker at once, one whose last socket here closed loses
it, and every `BEAT_TICKS` ticks every held marker is written again. A marker expires
after `ONLINE_S` unless renewed (a wall-clock expiry, as the ticks are wall-clock: a
daemon that dies leaves no screen "connected" for long; a screen whose socket moved to
another daemon is marked again by that daemon's next full beat). On the full beat the
held tokens' last use goes to the `usage` hash (at most once a minute per token, as the
token check writes it: a screen connected for days is still "seen now"), and their areas
are read: a socket on a stream that is not its token's area (a move published while this
daemon was not listening, or racing the connection) is closed with `MOVED` (4410) and
reconnects to its new area. A move heard on the channel closes the token's sockets at
once (`moved`). Redis errors are logged at DEBUG and the beat is tried again next tick.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from redis.asyncio import Redis

from bonusd.access.machines import moved_token
from bonusd.clocks.clock import Clock
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.push.stream import Stream, Subscriber

logger = logging.getLogger(__name__)

ONLINE_S = 45  # a screen's marker lives this long unless renewed
BEAT_TICKS = 15  # every held marker renewed (and areas checked) this often
USAGE_TICKS = 60  # a connected screen's last use written at most this often
MOVED = 4410  # close code: the screen now shows another area; reconnect at once


class ScreenPresence:
    """The connection state of the screens whose sockets one daemon holds."""

    def __init__(self, redis: Redis, keys: Keys, clock: Clock) -> None:
        self._redis, self._keys, self._clock = redis, keys, clock
        self._held: set[str] = set()  # screen tokens with a socket here at the last beat
        self._used: dict[str, int] = {}  # token id -> the tick its last use was written

    @staticmethod
    def _screens(streams: Mapping[str, Stream]) -> list[Subscriber]:
        return [
            sub
            for stream in streams.values()
            if not stream.crew
            for sub in stream.subscribers
            if sub.token_id
        ]

    def moved(self, streams: Mapping[str, Stream], data: object) -> int:
        """Close the sockets of the screen a `token-moved:{id}` notification names (4410:
        they reconnect to the new area); how many there were (0 for any other message)."""
        token_id = moved_token(data)
        if token_id is None:
            return 0
        held = [sub for sub in self._screens(streams) if sub.token_id == token_id]
        for sub in held:
            sub.kick(MOVED, "this screen was moved to another area; reconnecting")
        if held:
            logger.info("push: screen %s moved; reconnecting its %d socket(s)", token_id, len(held))
        return len(held)

    async def beat(self, streams: Mapping[str, Stream], tick: int) -> None:
        """Mark the screens connected here (see the module's text); `tick` is the hub's."""
        subs = self._screens(streams)
        held = {sub.token_id for sub in subs}
        full = tick % BEAT_TICKS == 0
        arrived, left = held - self._held, self._held - held
        if not (arrived or left or (full and held)):
            return
        now = self._clock.now().isoformat()
        due = [t for t in held if tick - self._used.get(t, tick - USAGE_TICKS) >= USAGE_TICKS]
        due = due if full else []
        looked = sorted(held) if full else []
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for token_id in held if full else arrived:
                    pipe.set(self._keys.online(token_id), now, px=ONLINE_S * 1000)
                for token_id in left:
                    pipe.delete(self._keys.online(token_id))
                if due:
                    pipe.hset(self._keys.token_usage, mapping=dict.fromkeys(due, now))
                for token_id in looked:
                    pipe.hget(self._keys.token(token_id), "area")
                replies: list[Any] = await pipe.execute()
        except REDIS_ERRORS as exc:
            logger.debug("push: screens' presence not written (%s); again next tick", exc)
            return
        self._held = held
        self._used = {t: n for t, n in self._used.items() if t in held} | dict.fromkeys(due, tick)
        areas = dict(zip(looked, replies[len(replies) - len(looked) :], strict=True))
        for sub in subs:
            area = areas.get(sub.token_id)
            if area and area != sub.stream.area:  # moved while this daemon was not listening
                sub.kick(MOVED, "this screen was moved to another area; reconnecting")
