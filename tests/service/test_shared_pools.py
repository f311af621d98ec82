"""One copy of each pool file in a daemon: the desk's draw runner, the RAPS runner and the
live push's runners read pool files through one cache, so a night's large pool is parsed
and held once, not once per runner that replays its book."""

from __future__ import annotations

import redis.asyncio as aioredis

from bonusd.draws.fairness import Pool
from bonusd.draws.runner import DrawRunner
from bonusd.infra.keys import Keys
from bonusd.service.root import Service
from bonusd.settings import Settings


async def test_every_runner_of_the_daemon_reads_the_same_pool_file_object(
    settings: Settings, aredis: aioredis.Redis
) -> None:
    keys = Keys(settings.key_prefix, settings.site)
    pool = Pool.freeze("festa.draw-1", "main", {f"C{n:05d}": 1 + n % 3 for n in range(2_000)})
    await aredis.set(keys.poolfile(pool.commitment), pool.serialise().decode())
    async with Service(settings) as service:
        hub_draws = service.push._draw_book.__self__  # the live push's own draw runner
        hub_raps = service.push._session_book.__self__
        assert isinstance(hub_draws, DrawRunner)
        first = await service.draws.pool_file(pool.commitment)
        assert first.commitment == pool.commitment
        for runner in (hub_draws, service.jackpots._draws, hub_raps._draws):
            assert await runner.pool_file(pool.commitment) is first
        await aredis.delete(keys.poolfile(pool.commitment))  # held: not read from Redis again
        assert await hub_draws.pool_file(pool.commitment) is first
