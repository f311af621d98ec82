"""`bonusd audit export`: the site's audit trail as JSON Lines, and with `--pools` every
archived pool file and RAPS floor snapshot its POOL records name, each written as the
trail is read a batch at a time (`AuditStore.batches`), so a season's trail and its pool
files are never held in memory together. The trail's file is written whole or not at all
(`bonusd.infra.wholefile`): a failed export leaves no half file under the name asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Kind, to_jsonl
from bonusd.audit.store import AuditStore
from bonusd.cli.draws import FLOOR_SUFFIX, POOL_SUFFIX, floor_files, read_pool
from bonusd.draws.fairness import Pool
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.settings import Settings


@dataclass
class Exported:
    """What an export wrote: records, files beside them, and one line per pool file that
    could not be read (not exported; the auditor's verify-draw reports its round)."""

    records: int = 0
    files: set[str] = field(default_factory=set)
    unreadable: list[str] = field(default_factory=list)


async def export_trail(
    settings: Settings, write: Callable[[str], object], pools_dir: Path | None
) -> Exported:
    """Each batch of the site's trail given to `write` as JSON Lines; with `pools_dir`,
    each pool file and floor snapshot its POOL records name written there as it comes."""
    redis = redis_client(settings)
    keys = Keys(settings.key_prefix, settings.site)
    done = Exported()
    try:
        async for batch in AuditStore(redis, keys).batches():
            write(to_jsonl(batch))
            done.records += len(batch)
            if pools_dir is not None:
                for rec in (r for r in batch if r.kind == Kind.POOL):
                    await _export_pool(redis, keys, rec, pools_dir, done)
        return done
    finally:
        await redis.aclose()


async def _export_pool(
    redis: Redis, keys: Keys, rec: AuditRecord, folder: Path, done: Exported
) -> None:
    """The pool file a POOL record names (by its own commitment, as verify-draw reads it)
    and, for a RAPS jackpot's, its floor snapshot and that snapshot's base."""
    name = keys.poolfile(rec.payload["pool_commitment"])
    raw = await redis.get(name)
    read: dict[str, Pool] = {}
    if raw is not None:
        read_pool(cast(str, raw).encode(), f"pool file {name}", read, done.unreadable)
    for commitment, pool in read.items():
        _write(folder, f"{commitment}{POOL_SUFFIX}", pool.serialise(), done)
    if "floor_sha256" in rec.payload:
        for floor, data in (await floor_files(redis, keys, rec.payload)).items():
            _write(folder, f"{floor}{FLOOR_SUFFIX}", data, done)


def _write(folder: Path, name: str, data: bytes, done: Exported) -> None:
    if name not in done.files:  # a pool file two records name is written once
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        done.files.add(name)
