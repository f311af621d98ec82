"""The seed key of tests that build runners directly (a site's daemons share one key), and
the insider's attack: every seed-like text of the keyspace tried against a frozen pool."""

from __future__ import annotations

import re
from typing import cast

from redis.asyncio import Redis

from bonusd.draws.fairness import Pick, Pool, pick_sequence
from bonusd.draws.seal import SeedSeal

SEAL = SeedSeal(bytes(range(32)), source="the tests' fixed seed key")


async def opened_seed(redis: Redis, name: str) -> bytes:
    """The seed kept sealed (with `SEAL`) under the Redis key `name`."""
    sealed = await redis.get(name)
    assert isinstance(sealed, str), f"{name} holds {sealed!r}"
    return SEAL.open(name, sealed)


HEX64 = re.compile(r"(?=([0-9a-fA-F]{64}))")  # every 64-hex window, overlapping


async def everything_readable(redis: Redis, base: str) -> list[str]:
    """Every text an insider with read access to the site's keyspace sees: each key's name
    and, by type, its value, hash fields and values, list items, set and zset members,
    stream fields and values."""
    texts: list[str] = []
    for key in cast(list[str], await redis.keys(f"{base}*")):  # one pass, unlike SCAN
        texts.append(key)
        kind = await redis.type(key)
        if kind == "string":
            texts.append(await redis.get(key))
        elif kind == "hash":
            texts += [t for pair in (await redis.hgetall(key)).items() for t in pair]
        elif kind == "list":
            texts += await redis.lrange(key, 0, -1)
        elif kind == "set":
            texts += list(await redis.smembers(key))
        elif kind == "zset":
            texts += [m for m, _ in await redis.zrange(key, 0, -1, withscores=True)]
        elif kind == "stream":
            texts += [t for _, fields in await redis.xrange(key) for p in fields.items() for t in p]
        else:
            raise AssertionError(f"{key} is a {kind}: the scan does not read it")
    return texts


def candidate_seeds(texts: list[str]) -> set[bytes]:
    """What could be a seed in `texts`: each value of 32 bytes, and every 64-hex substring."""
    found = {t.encode() for t in texts if len(t.encode()) == 32}
    for text in texts:
        found |= {bytes.fromhex(m.group(1)) for m in HEX64.finditer(text)}
    return found


def seeds_giving(pool: Pool, picks: list[Pick], candidates: set[bytes]) -> list[bytes]:
    """The candidates from which `pick_sequence` over `pool` computes exactly `picks`."""
    return [c for c in candidates if pick_sequence(pool, c, len(picks)) == picks]
