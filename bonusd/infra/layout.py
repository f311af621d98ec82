"""The layout version of a site's data: which version of the key layout (`bonusd.infra.keys`)
the data in Redis is in, so that a daemon never runs on data it would misread
(docs/deploy.md, "Upgrades").

`{base}layout` holds an integer. Each daemon checks it as it starts (`Service.__aenter__`;
`bonusd run` waits for Redis first, `layout_ready`):

- the version this release writes (`LAYOUT.version`): it runs;
- a greater one: refused (`LayoutError`, exit status 2): a newer bonusd wrote or migrated
  the data. Upgrade this daemon; a site's data is never downgraded;
- a smaller one, or none (data from before versions were stored, or an empty site: both
  are layout 1): the release's migrations run in order, one daemon at a time (a lock), each
  raising the stored version once it is done. A migration marked `rolling` is additive:
  daemons of the release before keep running beside the migrated data, so the site's
  daemons are upgraded one at a time. One that is not waits for the lease of a leading
  daemon to lapse and refuses to run while any daemon of the site leads (stop them all);
- `restoring …`: `bonusd restore` has not finished (bonusd/service/backup.py): refused.

Every migration must be idempotent: one cut short (a crash, the lock's time running out)
is run again whole by the next daemon that starts.

Versions:
    1  the layout of keys.py when versions were first stored; nothing to migrate, recorded
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from redis.asyncio import Redis

from bonusd.errors import ConfigError
from bonusd.infra.keys import Keys
from bonusd.infra.redischeck import until_redis_answers
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.settings import Settings

logger = logging.getLogger(__name__)

UNVERSIONED = 1  # data written before the version was stored is in layout 1
RESTORING = "restoring"  # the value `bonusd restore` holds while it writes
LOCK_MS = 600_000  # a migration's lock; one running longer is taken over and run again
LEASE_WAIT_S = 65.0  # the longest a leader lease (BONUSD_LEADER_TTL_S <= 60) can outlive its holder
FIX = 'docs/deploy.md, "Upgrades"'

Step = Callable[[Redis, Keys], Awaitable[None]]


@dataclass(frozen=True)
class Migration:
    """What turns layout `version - 1` into `version`."""

    version: int
    summary: str  # for the log and the refusals: what changes
    rolling: bool  # the release before keeps running correctly on the migrated data
    step: Step  # idempotent


@dataclass(frozen=True)
class LayoutPlan:
    """The layout a release writes and the migrations that lead to it from layout 1."""

    version: int
    migrations: tuple[Migration, ...] = ()

    def __post_init__(self) -> None:
        if [m.version for m in self.migrations] != list(range(2, self.version + 1)):
            raise ValueError(f"layout {self.version}: one migration to each of 2..{self.version}")


LAYOUT = LayoutPlan(version=1)  # this release's


class LayoutError(ConfigError):
    """The site's data is in a layout this daemon must not run on; the message says why
    and what to do."""


def parse_layout(value: str | None, site: str) -> int | None:
    """The stored version (None: none stored); `LayoutError` for an unfinished restore or
    a value no bonusd writes."""
    if value is None:
        return None
    if value.startswith(RESTORING):
        raise LayoutError(
            f"site {site}: a restore into this Redis has not finished ({value}): run the same "
            '`bonusd restore` again to completion (docs/deploy.md, "Backups and restores")'
        )
    if not value.isdigit() or int(value) < 1:
        raise LayoutError(f"site {site}: the layout version in Redis is {value!r}, not a version")
    return int(value)


async def ensure_layout(
    redis: Redis, keys: Keys, *, holder: str = "", plan: LayoutPlan | None = None
) -> int:
    """Check the site's layout against `plan` (this release's by default) and migrate an
    older one; returns the version the data is in now. `LayoutError` when this daemon must
    not run on it."""
    plan = plan or LAYOUT
    holder = holder or f"bonusd#{secrets.token_hex(6)}"
    waited = False
    while True:
        stored = _not_newer(parse_layout(await _get(redis, keys.layout()), keys.site), plan, keys)
        if stored == plan.version:
            return stored
        if stored is None and plan.version == UNVERSIONED:
            await redis.set(keys.layout(), str(UNVERSIONED), nx=True)
            continue  # read back: another daemon may have written first
        if await redis.set(keys.layout("lock"), holder, nx=True, px=LOCK_MS):
            try:
                return await _migrate(redis, keys, plan, stored or UNVERSIONED)
            finally:
                await _unlock(redis, keys, holder)
        if not waited:
            logger.warning("site %s: waiting for another daemon's layout migration", keys.site)
            waited = True
        await asyncio.sleep(0.2)


def _not_newer(stored: int | None, plan: LayoutPlan, keys: Keys) -> int | None:
    if stored is not None and stored > plan.version:
        raise LayoutError(
            f"site {keys.site}: Redis holds its data in layout {stored}, written by a newer "
            f"bonusd; this one knows layouts up to {plan.version} and would misread it. "
            f"Run the release the site's other daemons run ({FIX}); data is never "
            "migrated back"
        )
    return stored


async def _migrate(redis: Redis, keys: Keys, plan: LayoutPlan, stored: int) -> int:
    read = parse_layout(await _get(redis, keys.layout()), keys.site)  # under the lock now
    current = _not_newer(read, plan, keys) or stored
    for migration in plan.migrations:
        if migration.version <= current:
            continue
        if not migration.rolling:
            await _no_daemon_leads(redis, keys, migration)
        logger.warning(
            "site %s: migrating the data from layout %d to %d: %s",
            keys.site,
            migration.version - 1,
            migration.version,
            migration.summary,
        )
        await migration.step(redis, keys)
        await redis.set(keys.layout(), str(migration.version))
        current = migration.version
    if current < plan.version:  # none stored and nothing to migrate: record it
        await redis.set(keys.layout(), str(plan.version))
    logger.warning("site %s: the data is in layout %d now", keys.site, plan.version)
    return plan.version


async def _no_daemon_leads(redis: Redis, keys: Keys, migration: Migration) -> None:
    """Refuse a migration the release before cannot run beside while a daemon of the site
    leads; a lease left by a daemon that died is waited out (it lapses within its TTL)."""
    lease = await _get(redis, keys.leader)
    if lease is not None:
        ttl_ms = max(int(await redis.pttl(keys.leader)), 0)
        await asyncio.sleep(min(ttl_ms / 1000 + 0.5, LEASE_WAIT_S))
        lease = await _get(redis, keys.leader)
    if lease is not None:
        raise LayoutError(
            f"site {keys.site}: layout {migration.version - 1} -> {migration.version} "
            f"({migration.summary}) cannot run beside daemons of the release before, and a "
            f"daemon of the site is running ({lease.split(':', 1)[-1]} leads): stop every "
            f"daemon of the site, then start the upgraded ones ({FIX})"
        )


async def _get(redis: Redis, key: str) -> str | None:
    return cast(str | None, await redis.get(key))


_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


async def _unlock(redis: Redis, keys: Keys, holder: str) -> None:
    with contextlib.suppress(*REDIS_ERRORS):  # a lock left behind lapses by itself
        await redis.eval(_UNLOCK, 1, keys.layout("lock"), holder)


async def layout_ready(settings: Settings, *, waiting: Callable[[str], None]) -> int:
    """For `bonusd run`: wait for Redis (`waiting` is told why, each time), then
    `ensure_layout`, so a daemon never starts on data it would misread, also when Redis
    answers only later."""
    keys = Keys(settings.key_prefix, settings.site)
    holder = f"{settings.client_id}#{os.getpid()}"
    return await until_redis_answers(
        settings,
        lambda client: ensure_layout(client, keys, holder=holder),
        what="Redis to check the layout of the site's data",
        waiting=waiting,
    )
