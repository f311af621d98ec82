"""The archived floor snapshots a RAPS runner judged its jackpots from (`rapsfloor:` in
bonusd/infra/keys.py), kept in memory up to a bound, the least recently used dropped
first: each is as large as the floor it judged, so a daemon keeps a night's worth, not a
season's. A dropped snapshot is read again from Redis when it is next needed.

In Redis, `raps-floor:{jackpot}` holds each snapshot file under `file:{its SHA-256}`
(written ahead of the pick's commit: content-addressed) and, per attempt, that name
(written with the POOL record). A file that is a difference (form 2, `floordelta`) names its
base, a whole snapshot archived in the same hash a moment before the jackpot. A daemon
before this layout stored the file itself under the attempt: `archived_floor` reads both."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import cast

from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Kind
from bonusd.draws.caches import SizedLRU, snapshot_bytes
from bonusd.draws.evidence import evidence
from bonusd.draws.fairness import Pool
from bonusd.draws.poolfile import parse_pool
from bonusd.draws.rounds import RoundKey
from bonusd.draws.verify import Mismatch, Verification
from bonusd.errors import AuditFormatError, BonusdError
from bonusd.infra.keys import Keys
from bonusd.raps.floordelta import DeltaError, base_named, is_delta
from bonusd.raps.rules import RapsRules
from bonusd.raps.snapshot import FloorSnapshot, check_floor

logger = logging.getLogger(__name__)
FILE_REF = "file:"  # an attempt's field names the file's field: file:{sha256}


ArchivedFloor = tuple[bytes, bytes | None]  # the file, and the base it names (a difference)


async def archived_floor(redis: Redis, keys: Keys, jid: str, attempt: int) -> ArchivedFloor | None:
    """The archived snapshot file of attempt `attempt` of jackpot `jid` with its base when
    it is a difference (None when the base is missing), or None."""
    key = keys.raps_floor(jid)
    raw = cast(str | None, await redis.hget(key, str(attempt)))
    if raw is not None and raw.startswith(FILE_REF):
        raw = cast(str | None, await redis.hget(key, raw))
    if raw is None:
        return None
    found = raw.encode()
    if not is_delta(found):
        return found, None
    try:
        base = cast(str | None, await redis.hget(key, FILE_REF + base_named(found)))
    except DeltaError:
        return found, None  # the reader refuses the file itself
    return found, None if base is None else base.encode()


class FloorArchive(SizedLRU[tuple[str, int], FloorSnapshot]):
    """(jackpot id, attempt) -> the floor snapshot it was judged from, at most `maxsize`."""

    def __init__(self, redis: Redis, keys: Keys, maxsize: int, budget: float) -> None:
        super().__init__(maxsize, budget, snapshot_bytes)
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
            snap = self[(jid, attempt)] = FloorSnapshot.parse(*raw)
        # a copy: the field table a judgement makes (4x the lines) is not kept in the cache
        return FloorSnapshot(snap.at_ms, snap.source, snap.checked, snap.delta, snap.index)


async def floor_mismatches(
    redis: Redis,
    keys: Keys,
    records: list[AuditRecord],
    jackpot_ref: str,
    *,
    pools: dict[str, Pool],
    rules: RapsRules,
) -> dict[RoundKey, Mismatch]:
    """Each attempt of jackpot `jackpot_ref` (its POOL records among `records`) whose
    archived floor snapshot does not give its recorded pool, and where."""
    out: dict[RoundKey, Mismatch] = {}
    for rec in records:
        if rec.kind != Kind.POOL or rec.payload.get("draw_id") != jackpot_ref:
            continue
        raw = await archived_floor(redis, keys, jackpot_ref, rec.payload["round"])
        file, base = (None, None) if raw is None else raw
        pool = pools.get(rec.payload["pool_commitment"])
        wrong = check_floor(rec.payload, file, pool, rules, base)
        if wrong is not None:
            out[(rec.payload["tombola"], rec.payload["round"])] = wrong
    return out


async def verified_jackpot(
    redis: Redis, keys: Keys, records: list[AuditRecord], jackpot_ref: str, rules: RapsRules
) -> dict[RoundKey, Verification]:
    """The picks of jackpot `jackpot_ref` (its `records`) recomputed from its revealed
    seed and archived pool files (one missing or not in canonical form fails the check),
    each pool held to its archived floor under `rules` (`floor_mismatches`)."""
    pools: dict[str, Pool] = {}
    for rec in records:
        if rec.kind == Kind.POOL and rec.payload.get("draw_id") == jackpot_ref:
            commitment = rec.payload["pool_commitment"]
            raw = await redis.get(keys.poolfile(commitment))
            try:
                if raw is not None:
                    pools[commitment] = parse_pool(cast(str, raw).encode())
            except AuditFormatError as exc:
                logger.warning("jackpot %s: pool file %s: %s", jackpot_ref, commitment, exc)
    checked = evidence(records, jackpot_ref, pools).verify()
    wrong = await floor_mismatches(redis, keys, records, jackpot_ref, pools=pools, rules=rules)
    for key, mismatch in wrong.items():
        if key in checked:
            checked[key] = replace(checked[key], mismatches=(mismatch, *checked[key].mismatches))
    return checked
