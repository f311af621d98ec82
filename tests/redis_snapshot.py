"""A snapshot of every key under a prefix (value and TTL) and the differences between two,
for tests that show an action wrote nothing (GET purity, a refused close-bin)."""

from __future__ import annotations

from typing import cast

import redis.asyncio as aioredis


async def snapshot(r: aioredis.Redis, base: str) -> dict[bytes, tuple[bytes | None, bool]]:
    """Every key of the site but the access accounting: the rate limiter's counters
    (`rate:`), the machine tokens' last use (`usage`, written by the token check at
    most once a minute per token) and the screens' connection markers (`online:`, kept by
    the push hub while a screen's socket is open); for each, its DUMP and whether it
    expires."""
    rate, usage = f"{base}rate:".encode(), f"{base}usage".encode()
    online = f"{base}online:".encode()
    # KEYS: one pass over the shared Redis, not a round trip per 1000 keys (SCAN); and
    # the site's key names at one instant
    every = cast(list[bytes], await r.keys(f"{base}*"))
    keys = [k for k in every if not k.startswith((rate, online)) and k != usage]
    async with r.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.dump(key)
            pipe.pttl(key)
        replies = await pipe.execute()
    return {
        key: (dump, ttl >= 0)
        for key, dump, ttl in zip(keys, replies[0::2], replies[1::2], strict=True)
    }


def differences(
    before: dict[bytes, tuple[bytes | None, bool]], after: dict[bytes, tuple[bytes | None, bool]]
) -> list[str]:
    out = [f"created {k.decode()}" for k in sorted(after.keys() - before.keys())]
    out += [f"deleted {k.decode()}" for k in sorted(before.keys() - after.keys())]
    out += [
        f"changed {k.decode()}"
        for k in sorted(before.keys() & after.keys())
        if before[k] != after[k]
    ]
    return out
