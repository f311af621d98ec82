"""Copy one site's keys from one Redis to another, in bounded batches (`bonusd restore`
from a snapshot's scratch server, docs/deploy.md "Backups and restores").

A SCAN batch of the source's keys under the site's base (their types, times to live and
sizes asked in one script call) is read as Redis's own serialisation (`DUMP`) and written
with `RESTORE` and the key's remaining time to live, groups of at most `GROUP_BYTES` at a
time. A set, hash, sorted set or list larger than `LARGE_BYTES` (the event ids of an hour
of play: hundreds of MB) is copied in parts (`SSCAN`/`HSCAN`/`ZSCAN`/`LRANGE`, `CHUNK`
members a call) instead, so neither side holds it whole and the target never blocks on
one large `RESTORE`. Memory is therefore bounded by a group, except for a string or
stream larger than `LARGE_BYTES`, which is copied whole. A key SCAN returns twice is
written twice, the second copy replacing the first: the caller makes sure the target
holds no key of the site beforehand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from bonusd.errors import BonusdError

SCAN_COUNT = 1000
GROUP_BYTES = 8 << 20
LARGE_BYTES = 4 << 20
CHUNK = 2000
_IN_PARTS = (b"set", b"hash", b"zset", b"list")


class SiteCopyError(BonusdError):
    """The target refused a key (out of memory, a payload of a newer Redis, ...)."""


@dataclass
class CopyCounts:
    keys: int = 0  # copied
    in_parts: int = 0  # of them, copied member by member
    dumped_bytes: int = 0  # the size of what went through DUMP/RESTORE


async def count_keys(source: Redis, pattern: str) -> int:
    """How many keys match `pattern` (names only: memory stays flat)."""
    total, cursor = 0, 0
    while True:
        cursor, names = await source.scan(cursor, match=pattern, count=SCAN_COUNT)
        total += len(names)
        if cursor == 0:
            return total


async def any_key(redis: Redis, pattern: str) -> bytes | str | None:
    """One key matching `pattern`, or None (scans until it finds one)."""
    cursor = 0
    while True:
        cursor, names = await redis.scan(cursor, match=pattern, count=SCAN_COUNT)
        if names:
            return names[0]
        if cursor == 0:
            return None


async def copy_keys(
    source: Redis,
    target: Redis,
    *,
    pattern: str,
    skip: frozenset[bytes | str] = frozenset(),
    progress: Callable[[int], None] | None = None,
) -> CopyCounts:
    """Copy every key of `source` matching `pattern` but `skip` into `target` (both
    clients without decoding); `progress` is told how many keys each batch handled."""
    counts = CopyCounts()
    cursor = 0
    while True:
        cursor, found = await source.scan(cursor, match=pattern, count=SCAN_COUNT)
        names = [n for n in found if n not in skip]
        if names:
            await _copy_batch(source, target, names, counts)
        if progress:
            progress(len(found))
        if cursor == 0:
            return counts


# KEYS: a batch of names. Returns type, remaining ms to live and memory (bytes) of each,
# in one call: a copy's speed is set by the calls it makes
_FACTS = """
local out = {}
for _, name in ipairs(KEYS) do
  out[#out + 1] = redis.call('TYPE', name)['ok']
  out[#out + 1] = redis.call('PTTL', name)
  out[#out + 1] = redis.call('MEMORY', 'USAGE', name) or 0
end
return out
"""


async def _copy_batch(
    source: Redis, target: Redis, names: Sequence[bytes | str], counts: CopyCounts
) -> None:
    answers = await source.eval(_FACTS, len(names), *names)
    group: list[tuple[bytes | str, int]] = []
    size = 0
    for index, name in enumerate(names):
        kind, ttl, used = answers[3 * index : 3 * index + 3]
        if kind == b"none":  # expired since the scan
            continue
        if kind in _IN_PARTS and (used or 0) > LARGE_BYTES:
            await _copy_in_parts(source, target, name, kind, ttl)
            counts.keys += 1
            counts.in_parts += 1
            continue
        group.append((name, ttl))
        size += used or 0
        if size >= GROUP_BYTES:
            await _dump_restore(source, target, group, counts)
            group, size = [], 0
    if group:
        await _dump_restore(source, target, group, counts)


async def _dump_restore(
    source: Redis, target: Redis, group: Sequence[tuple[bytes | str, int]], counts: CopyCounts
) -> None:
    dumps = source.pipeline(transaction=False)
    for name, _ in group:
        dumps.dump(name)
    payloads = await dumps.execute()
    writes = target.pipeline(transaction=False)
    for (name, ttl), payload in zip(group, payloads, strict=True):
        if payload is None:  # expired since the scan
            continue
        writes.restore(name, max(ttl, 0), payload, replace=True)
        counts.dumped_bytes += len(payload)
        counts.keys += 1
    answers = await writes.execute(raise_on_error=False)
    _raise_first(answers, "RESTORE")


async def _copy_in_parts(
    source: Redis, target: Redis, name: bytes | str, kind: bytes, ttl: int
) -> None:
    await target.delete(name)  # a key SCAN returned twice: copied again whole
    if kind == b"list":
        start = 0
        while items := await source.lrange(name, start, start + CHUNK - 1):
            await target.rpush(name, *items)
            start += len(items)
    else:
        cursor = 0
        while True:
            cursor, part = await _scan_members(source, name, kind, cursor)
            if part:
                await _add_members(target, name, kind, part)
            if cursor == 0:
                break
    if ttl > 0:
        await target.pexpire(name, ttl)


async def _scan_members(
    source: Redis, name: bytes | str, kind: bytes, cursor: int
) -> tuple[int, Any]:
    if kind == b"set":
        return await source.sscan(name, cursor, count=CHUNK)
    if kind == b"hash":
        return await source.hscan(name, cursor, count=CHUNK)
    return await source.zscan(name, cursor, count=CHUNK)


async def _add_members(target: Redis, name: bytes | str, kind: bytes, part: Any) -> None:
    if kind == b"set":
        await target.sadd(name, *part)
    elif kind == b"hash":
        await target.hset(name, mapping=part)
    else:
        await target.zadd(name, dict(part))


def _raise_first(answers: list[Any], what: str) -> None:
    for answer in answers:
        if isinstance(answer, Exception):
            raise SiteCopyError(f"the target refused {what}: {answer}")
