"""The one place that makes the Redis client of the daemon and of the command line.

`BONUSD_REDIS_CLUSTER=false` (the default): one Redis at `BONUSD_REDIS_URL`. The daemon's
client waits for a free connection (a `BlockingConnectionPool` of
`BONUSD_REDIS_MAX_CONNECTIONS`) instead of failing a burst of requests.

`BONUSD_REDIS_CLUSTER=true`: `BONUSD_REDIS_URL` names any node of a Redis Cluster and the
client (`redis.asyncio.RedisCluster`) discovers the others and routes each command by
its key's hash slot. Every key of a site carries the site as its hash tag
(`bonusd.infra.keys`), so a site's scripts and transactions run on one shard. The cap is then
`BONUSD_REDIS_MAX_CONNECTIONS` per node, and a request beyond it fails with a
connection error (retried like an outage) rather than waiting. See docs/scaling.md.

Both clients decode replies to `str`. The cluster client has the same command API
without sharing the `Redis` class, so it is handed out under that type.
"""

from __future__ import annotations

from typing import cast
from urllib.parse import urlsplit

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.cluster import RedisCluster

from bonusd.errors import ConfigError
from bonusd.settings import Settings

SOCKET_TIMEOUT_S = 10
CONNECT_TIMEOUT_S = 5
HEALTH_CHECK_S = 15

# what an outage of Redis looks like to a client: wait and retry, never crash on it
REDIS_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


def redis_client(
    settings: Settings, *, daemon: bool = False, decode: bool = True
) -> aioredis.Redis:
    """A client for `settings.redis_url`; `daemon=True` for the long-running service
    (bounded pool, socket timeouts, health checks), else a command-line client, replying
    `bytes` with `decode=False` (a restore's DUMP payloads)."""
    if settings.redis_cluster:
        if urlsplit(settings.redis_url).scheme == "unix":
            raise ConfigError(
                "BONUSD_REDIS_CLUSTER=true needs a redis:// or rediss:// URL of one cluster "
                f"node, not {settings.redis_url!r}"
            )
        cluster = RedisCluster.from_url(
            settings.redis_url,
            decode_responses=decode,
            max_connections=settings.redis_max_connections,
            socket_timeout=SOCKET_TIMEOUT_S,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            health_check_interval=HEALTH_CHECK_S if daemon else 0,
        )
        return cast(aioredis.Redis, cluster)
    if not daemon:
        return aioredis.Redis.from_url(settings.redis_url, decode_responses=decode)
    # a burst of requests (2,000 screens reconnecting) waits for a connection instead
    # of failing: redis-py's default pool refuses beyond its cap
    pool = aioredis.BlockingConnectionPool.from_url(
        settings.redis_url,
        decode_responses=True,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        health_check_interval=HEALTH_CHECK_S,
        max_connections=settings.redis_max_connections,
        timeout=10,
    )
    # from_pool: the client owns the pool, so closing the service closes every
    # connection (a plain Redis(connection_pool=...) leaves them open)
    return aioredis.Redis.from_pool(pool)
