"""The secret seeds of the draw and RAPS runners in Redis, sealed (`bonusd.draws.seal`):
made once per round or jackpot (`SET NX` of a sealed fresh seed, then read back, so racing
daemons agree), only for one with no commitment in its book yet; and, for every one
committed, opened and checked against its recorded commitment before anything is drawn
from it. A seed key found missing, unopenable or holding another seed is never made
again: the runner refuses (`SeedRefused`) and records one exception in the audit trail."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from cachetools import LRUCache
from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Entry, Kind
from bonusd.audit.store import AuditStore, StaleLedger
from bonusd.draws.book import SCHEDULER, DrawBook, actor_text
from bonusd.draws.evidence import round_ref
from bonusd.draws.fairness import SeedSource, commit_seed, new_seed
from bonusd.draws.rounds import RoundKey
from bonusd.draws.seal import SeedSeal
from bonusd.errors import SealError, SeedRefused
from bonusd.infra.keys import Keys

logger = logging.getLogger(__name__)
REFUSED = "seed_refused"  # the `event` of the exception record a refusal leaves
CHECKED_SEEDS = 1024  # (key, sealed value, commitment) found to hold: not opened again


@dataclass(frozen=True)
class Committed:
    """A round's or jackpot's seed as its ledger committed it: the Redis key it is kept
    under and the SHA-256 commitment recorded for it."""

    name: str
    commitment: str


class SeedVault:
    """The sealed seeds of one runner's rounds or jackpots."""

    def __init__(
        self, redis: Redis, seal: SeedSeal, source: SeedSource = secrets.token_bytes
    ) -> None:
        self.redis, self.seal, self._source = redis, seal, source
        # a sealed value read before and found to open to its commitment opens to the same
        # seed again: every step checks every seed of its session, without opening them
        self._checked = LRUCache[tuple[str, str, str], bytes](CHECKED_SEEDS)

    async def create(self, subject: str, names: Sequence[str]) -> dict[str, bytes]:
        """Fresh sealed seeds under `names` where none is (SET NX), then read back: only
        for rounds with no commitment yet (a committed one is never made again)."""
        if not names:
            return {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.set(name, self.seal.seal(name, new_seed(self._source)), nx=True)
            await pipe.execute()
        values = cast(list[str | None], await self.redis.mget(names))
        seeds: dict[str, bytes] = {}
        for name, value in zip(names, values, strict=True):
            if value is None:  # removed between the two calls: made again next time
                continue
            try:
                seeds[name] = self.seal.open(name, value)
            except SealError as exc:  # e.g. plain hex left from before seeds were sealed
                raise SeedRefused(subject, [(name, str(exc))]) from None
        return seeds

    async def committed(
        self, subject: str, seeds: Sequence[Committed], values: Sequence[str | None] | None = None
    ) -> dict[str, bytes]:
        """The committed seeds, each opened and checked against its commitment;
        `SeedRefused` naming every one missing, unopenable or not the committed seed.
        `values`: the seeds' keys as just read with something else (else read here)."""
        if not seeds:
            return {}
        if values is None:
            values = cast(list[str | None], await self.redis.mget([c.name for c in seeds]))
        found: dict[str, bytes] = {}
        problems: list[tuple[str, str]] = []
        for want, value in zip(seeds, values, strict=True):
            if value is None:
                problems.append((want.name, "the committed seed's key is missing from Redis"))
                continue
            known = self._checked.get((want.name, value, want.commitment))
            if known is not None:
                found[want.name] = known
                continue
            try:
                seed = self.seal.open(want.name, value)
            except SealError as exc:
                problems.append((want.name, str(exc)))
                continue
            if commit_seed(seed) != want.commitment:
                problems.append(
                    (want.name, f"holds a seed that is not the one committed ({want.commitment})")
                )
                continue
            found[want.name] = self._checked[(want.name, value, want.commitment)] = seed
        if problems:
            raise SeedRefused(subject, problems)
        return found


# a value still equal to the one read is replaced, atomically (another writer wins)
_REPLACE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


async def seal_plain_seeds(redis: Redis, seal: SeedSeal, keys: Keys) -> int:
    """Seal in place every seed of the site stored in plain hex by a version from before
    seeds were sealed: the same seed, so its commitment still holds. Run by the leader
    when it takes over; returns how many it sealed (and logs it)."""
    sealed = 0
    async for name in redis.scan_iter(match=keys.seed_pattern(), count=1000):
        value = cast(str | None, await redis.get(name))
        if value is None or not _is_plain(value):
            continue
        text = seal.seal(name, bytes.fromhex(value))
        sealed += int(await redis.eval(_REPLACE, 1, name, value, text))
    if sealed:
        logger.warning("sealed %d seed(s) of %s kept in plain hex until now", sealed, keys.site)
    return sealed


def _is_plain(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


async def record_refusal(
    audit: AuditStore, subject: str, entries: Mapping[str, Entry], attempts: int = 4
) -> None:
    """Commit the exception records of a refusal (one per seed key in `entries`), leaving
    out any the subject's ledger holds already: a refusal repeated is recorded once."""
    for _ in range(attempts):
        ledger = await audit.ledger(subject)
        have = [dict(r.payload) for r in ledger if r.payload.get("event") == REFUSED]
        todo = [e for e in entries.values() if dict(e.payload) not in have]
        if not todo:
            return
        try:
            await audit.commit(todo, subject=subject, expect=len(ledger))
            return
        except StaleLedger:
            continue  # another writer got there first: look again


def refusal_entry(ref: tuple[str, str, int], name: str, problem: str, at: dt.datetime) -> Entry:
    """The exception record of the refused seed under key `name`, of the round `ref`
    (draw or jackpot id, tombola, round)."""
    draw_id, tombola, number = ref
    note = f"{tombola} round {number}: seed refused, nothing drawn: {problem}"
    payload = round_ref(draw_id, tombola, number) | {"event": REFUSED, "note": note, "key": name}
    return Entry(at, actor_text(SCHEDULER), Kind.EXCEPTION, payload)


async def draw_seeds(
    vault: SeedVault, book: DrawBook, names: dict[RoundKey, str], records: list[AuditRecord]
) -> dict[RoundKey, bytes]:
    """The seeds of every round the book or `records` commit, each checked (`committed`);
    `names`: each round's seed key."""
    want = {key: rnd.seed_commitment for key, rnd in book.draw.rounds.items()}
    for rec in records:
        if rec.kind == Kind.COMMITMENT:
            want[(rec.payload["tombola"], rec.payload["round"])] = rec.payload["seed_commitment"]
    committed = {key: Committed(names[key], sealed) for key, sealed in want.items()}
    opened = await vault.committed(book.subject, list(committed.values()))
    return {key: opened[c.name] for key, c in committed.items()}
