"""Whether a Redis keeps bonusd's promises, checked by `bonusd run` before the daemon
starts and sampled while it runs (docs/deploy.md, "Redis").

The daemon acknowledges a telemetry message to the broker only after its effect is
committed in Redis, and the broker then forgets it; a draw's pick is announced on the
floor once its audit record is committed. Exactly once and the audit trail therefore
hold only if what Redis acknowledged survives whatever happens next. Refused (the
daemon will not start, `BONUSD_REDIS_CHECK=refuse`, the default):

- no AOF (`appendonly no`): RDB snapshots lose every write since the last one;
- `appendfsync` other than `always`: `everysec` loses up to ~2 s of acknowledged writes at
  a power cut or kernel crash (`no`: up to ~30 s), `no-appendfsync-on-rewrite yes` skips
  the fsync during every AOF rewrite;
- an AOF whose last write failed (a full disk): Redis refuses writes, then loses them;
- a `maxmemory-policy` other than `noeviction`: Redis would delete keys (event ids,
  standings, audit records) to make room; with `noeviction` a full Redis refuses writes,
  which bonusd treats as an outage (nothing acknowledged, the broker keeps the backlog).

`maxmemory 0` (no limit) is only a warning: nothing is evicted, but the kernel's OOM
killer is then the limit and the memory alert has nothing to compare with.
`BONUSD_REDIS_CHECK=warn` logs the same findings and runs; `off` skips the check (a
throwaway development Redis).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import redis.exceptions
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from bonusd.errors import ConfigError
from bonusd.infra.backoff import Backoff
from bonusd.infra.redisclient import REDIS_ERRORS, redis_client
from bonusd.settings import Settings

Answer = TypeVar("Answer")
logger = logging.getLogger(__name__)

FIX = "deploy/redis/bonusd.conf, docs/deploy.md"
# replies of a Redis that cannot answer right now (a script running, a failover)
_TRANSIENT = ("BUSY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN")


class RedisPolicyError(ConfigError):
    """Redis's persistence or eviction policy would break bonusd's promises; the daemon
    refuses to start (`problems` lists each finding with its fix)."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where, self.problems = where, problems
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"Redis at {where} would break bonusd's promises (exactly once, the audit "
            f"trail):\n{listed}\nFix Redis ({FIX}), or set BONUSD_REDIS_CHECK=warn to run "
            "anyway knowing what can be lost (off: a throwaway development Redis)."
        )


@dataclass(frozen=True)
class RedisFacts:
    """What one Redis (one primary of a cluster) says about its persistence and memory."""

    node: str
    aof_enabled: bool
    appendfsync: str  # "" when CONFIG GET was refused (see `config_error`)
    fsync_during_rewrite: bool  # not `no-appendfsync-on-rewrite yes`
    aof_write_ok: bool
    maxmemory: int
    maxmemory_policy: str
    used_memory: int
    config_error: str = ""

    def problems(self) -> list[str]:
        """What breaks the promises, each with its fix ([] when none)."""
        found = []
        if not self.aof_enabled:
            found.append(
                f"{self.node}: appendonly is no: a restart loses every write since the last "
                "RDB snapshot; set appendonly yes"
            )
        if self.config_error:
            found.append(
                f"{self.node}: appendfsync cannot be read ({self.config_error}); allow "
                "bonusd's Redis user CONFIG GET (+config|get)"
            )
        elif self.appendfsync != "always":
            found.append(
                f"{self.node}: appendfsync is {self.appendfsync}: a power cut or kernel crash "
                "loses writes Redis already acknowledged (events the broker then forgot, "
                "audit records of announced picks); set appendfsync always"
            )
        if not self.config_error and not self.fsync_during_rewrite:
            found.append(
                f"{self.node}: no-appendfsync-on-rewrite is yes: writes are not synced "
                "while the AOF is rewritten; set no-appendfsync-on-rewrite no"
            )
        if self.aof_enabled and not self.aof_write_ok:
            found.append(
                f"{self.node}: the last AOF write failed (a full or read-only disk?): Redis "
                "refuses writes until it succeeds; see Redis's log"
            )
        if self.maxmemory_policy != "noeviction":
            found.append(
                f"{self.node}: maxmemory-policy is {self.maxmemory_policy}: Redis deletes "
                "keys (event ids, standings, audit records) to make room; set "
                "maxmemory-policy noeviction"
            )
        return found

    def cautions(self) -> list[str]:
        """What weakens monitoring without breaking a promise."""
        if self.maxmemory == 0:
            return [
                f"{self.node}: maxmemory is 0 (no limit): the kernel's OOM killer is the "
                "limit and the memory alert cannot fire; set maxmemory below the host's RAM"
            ]
        return []


def masked(url: str) -> str:
    """`url` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


async def read_facts(client: Redis) -> list[RedisFacts]:
    """The facts of `client`'s Redis, or of every primary of a Redis Cluster."""
    if isinstance(client, RedisCluster):
        primaries = RedisCluster.PRIMARIES
        persistence = await client.info("persistence", target_nodes=primaries)
        memory = await client.info("memory", target_nodes=primaries)
        config = await _config(client, target_nodes=primaries)
        return [
            _facts(node, persistence[node], memory[node], _of(config, node))
            for node in sorted(persistence)
        ]
    address = _address(client)
    persistence = await client.info("persistence")
    memory = await client.info("memory")
    return [_facts(address, persistence, memory, await _config(client))]


async def _config(client: Redis, **options: Any) -> dict[str, Any] | str:
    """CONFIG GET of the fsync settings, or the refusal's text (an ACL, a renamed
    command: Redis answers, but will not say)."""
    try:
        # one pattern matches both names, and Redis 6 takes only one pattern
        return cast(dict[str, Any], await client.config_get("*appendfsync*", **options))
    except redis.exceptions.ResponseError as exc:
        return str(exc) or "refused"


def _of(config: dict[str, Any] | str, node: str) -> dict[str, str] | str:
    return config if isinstance(config, str) else cast(dict[str, str], config.get(node, {}))


def _facts(
    node: str, persistence: dict[str, Any], memory: dict[str, Any], config: dict[str, Any] | str
) -> RedisFacts:
    known = config if isinstance(config, dict) else {}
    return RedisFacts(
        node=node,
        aof_enabled=int(persistence.get("aof_enabled", 0)) == 1,
        appendfsync=str(known.get("appendfsync", "")),
        fsync_during_rewrite=known.get("no-appendfsync-on-rewrite", "no") == "no",
        aof_write_ok=str(persistence.get("aof_last_write_status", "ok")) == "ok",
        maxmemory=int(memory.get("maxmemory", 0)),
        maxmemory_policy=str(memory.get("maxmemory_policy", "")),
        used_memory=int(memory.get("used_memory", 0)),
        config_error=config if isinstance(config, str) else "",
    )


def _address(client: Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return str(kwargs["path"])
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"


async def check_redis(settings: Settings, client: Redis) -> list[RedisFacts]:
    """Read and judge the Redis of `client` as `settings.redis_check` says: refuse
    (`RedisPolicyError`) or warn (a WARNING per finding). Returns the facts read."""
    where = masked(settings.redis_url)
    try:
        facts = await read_facts(client)
    except redis.exceptions.ResponseError as exc:
        if str(exc).startswith(_TRANSIENT):  # a moment's state: waited out like an outage
            raise redis.exceptions.ConnectionError(str(exc)) from exc
        raise ConfigError(
            f"Redis at {where} will not say how it keeps data ({exc}): bonusd's Redis user "
            "needs INFO and CONFIG GET (+info +config|get)"
        ) from exc
    problems = [p for f in facts for p in f.problems()]
    if problems and settings.redis_check == "refuse":
        raise RedisPolicyError(where, problems)
    for problem in problems:
        logger.warning("Redis at %s breaks bonusd's promises: %s", where, problem)
    for caution in (c for f in facts for c in f.cautions()):
        logger.warning("Redis at %s: %s", where, caution)
    if not problems:
        logger.info("Redis at %s keeps what bonusd needs: AOF, fsync always, noeviction", where)
    return facts


async def redis_ready(settings: Settings, *, waiting: Callable[[str], None]) -> None:
    """For `bonusd run`: unless `BONUSD_REDIS_CHECK=off`, wait for Redis to answer
    (`waiting` is told why, each time) and check its policy before the daemon starts, so
    nothing is written to a Redis that could lose it."""
    if settings.redis_check == "off":
        return
    where = masked(settings.redis_url)
    await until_redis_answers(
        settings,
        lambda client: check_redis(settings, client),
        what=f"Redis at {where} to check its policy",
        waiting=waiting,
    )


async def until_redis_answers(
    settings: Settings,
    step: Callable[[Redis], Awaitable[Answer]],
    *,
    what: str,
    waiting: Callable[[str], None],
) -> Answer:
    """`step` with a client of its own, again after each Redis error (backing off, and
    `waiting` told "waiting for {what} (…)" each time) until Redis answers it."""
    backoff = Backoff(cap=settings.backoff_max_s)
    client = redis_client(settings)
    try:
        while True:
            try:
                return await step(client)
            except REDIS_ERRORS as exc:
                delay = backoff.next_delay()
                why = f"waiting for {what} ({exc or 'no answer'})"
                logger.warning("%s; again in %.1fs", why, delay)
                waiting(why)
                await asyncio.sleep(delay)
    finally:
        await client.aclose()
