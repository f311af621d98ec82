"""The archived floor snapshots a RAPS runner judged its jackpots from (`rapsfloor:` in
bonusd/infra/keys.py), kept in memory up to a bound, the least recently used dropped
first: each is as large as the floor it judged, so a daemon keeps a night's worth, not a
season's. A dropped snapshot is read again from Redis when it is next needed.

In Redis, `raps-floor:{jackpot}` holds each snapshot file under `file:{its SHA-256}`
(written ahead of the pick's commit: content-addressed) and, per attempt, that name
(written with the POOL record). A daemon before this layout stored the file itself under
the attempt: `archived_floor` reads both."""

from __future__ import annotations

from typing import cast

from cachetools import LRUCache
from redis.asyncio import Redis

from bonusd.errors import BonusdError
from bonusd.infra.keys import Keys
from bonusd.raps.snapshot import FloorSnapshot

FILE_REF = "file:"  # an attempt's field names the file's field: file:{sha256}


async def archived_floor(redis: Redis, keys: Keys, jid: str, attempt: int) -> str | None:
    """The archived snapshot file of attempt `attempt` of jackpot `jid`, or None."""
    key = keys.raps_floor(jid)
    raw = cast(str | None, await redis.hget(key, str(attempt)))
    if raw is not None and raw.startswith(FILE_REF):
        raw = cast(str | None, await redis.hget(key, raw))
    return raw


class FloorArchive(LRUCache[tuple[str, int], FloorSnapshot]):
    """(jackpot id, attempt) -> the floor snapshot it was judged from, at most `maxsize`."""

    def __init__(self, redis: Redis, keys: Keys, maxsize: int) -> None:
        super().__init__(maxsize=maxsize)
        self._redis, self._keys = redis, keys  # not `keys`: a mapping's own method

    async def load(self, jid: str, attempt: int) -> FloorSnapshot:
        """The snapshot attempt `attempt` of jackpot `jid` was judged from (read from Redis
        when not held)."""
        snap = self.get((jid, attempt))
        if snap is None:
            raw = await archived_floor(self._redis, self._keys, jid, attempt)
            if raw is None:
                raise BonusdError(
                    f"the floor snapshot of {jid} attempt {attempt} is missing from Redis; "
                    "restore it from the backup before running the session"
                )
            snap = self[(jid, attempt)] = FloorSnapshot.parse(raw.encode())
        return snap
