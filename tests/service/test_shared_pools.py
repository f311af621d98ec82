"""One copy of each pool file in a daemon: the desk's draw runner, the RAPS runner and the
live push's runners read pool files through one cache, so a night's large pool is parsed
and held once, not once per runner that replays its book. /metrics says what each of the
desks' caches holds, the shared one once."""

from __future__ import annotations

import redis.asyncio as aioredis

from bonusd.draws.caches import pool_bytes
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


async def test_a_pool_file_that_is_not_its_keys_is_served_but_never_kept(
    settings: Settings, aredis: aioredis.Redis
) -> None:
    keys = Keys(settings.key_prefix, settings.site)
    pool = Pool.freeze("festa.draw-1", "main", {"C00001": 2, "C00002": 1})
    swapped = Pool.freeze("festa.draw-1", "main", {"C00001": 1, "C00003": 5})
    await aredis.set(keys.poolfile(pool.commitment), swapped.serialise().decode())
    async with Service(settings) as service:
        served = await service.draws.pool_file(pool.commitment)  # a replay refuses it
        assert served.commitment == swapped.commitment
        assert pool.commitment not in service.draws.pools
        await aredis.set(keys.poolfile(pool.commitment), pool.serialise().decode())  # put back
        for runner in (service.draws, service.jackpots._draws):  # no runner holds the swap
            assert (await runner.pool_file(pool.commitment)).commitment == pool.commitment


def _gauges(text: str, name: str) -> dict[str, float]:
    return {
        line.split("{", 1)[1].split("}", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{")
    }


async def test_metrics_say_what_each_desk_cache_holds(
    settings: Settings, aredis: aioredis.Redis
) -> None:
    keys = Keys(settings.key_prefix, settings.site)
    pool = Pool.freeze("festa.draw-2", "main", {f"C{n:05d}": 1 for n in range(3_000)})
    await aredis.set(keys.poolfile(pool.commitment), pool.serialise().decode())
    async with Service(settings) as service:
        before = _gauges(service.metrics.render().decode(), "bonusd_desk_cache_bytes")
        assert before == {
            f'cache="{cache}",runner="{runner}"': 0.0
            for runner, caches in {
                "draws": ("books", "pools"),
                "raps": ("books", "floors"),
                "push-draws": ("books",),
                "push-raps": ("books", "floors"),
            }.items()
            for cache in caches
        }
        loaded = await service.jackpots._draws.pool_file(pool.commitment)
        after = _gauges(service.metrics.render().decode(), "bonusd_desk_cache_bytes")
        assert after['cache="pools",runner="draws"'] == pool_bytes(loaded) > 0
        assert "bonusd_raps_floor_mirror_rows 0.0" in service.metrics.render().decode()
