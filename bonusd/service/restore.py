"""`bonusd restore`: put a site back from a `bonusd backup` folder (bonusd/service/backup.py)
into the Redis of the settings, which must hold no key of the site (docs/deploy.md,
"Backups and restores").

1. The files: the manifest names this site and key prefix (a sealed seed is bound to its
   key's name, so the data is restored under the names it was made with), every file's
   SHA-256 matches, the key files at hand are the site's (their fingerprints).
2. The snapshot is loaded into a throwaway redis-server (`bonusd.infra.snapshot`) and
   checked before anything is written: the site's keys are there, its layout is one this
   release runs, its audit chain is intact and holds the head the manifest recorded, the
   seed key opens its sealed seeds, and this host's audit archive (if any) is a prefix of
   its trail — an archive that goes further holds the record of what a restore to this
   point would lose, and is never mixed with it.
3. The site's keys are copied (`bonusd.infra.sitecopy`); the layout key says `restoring …`
   throughout, so no daemon starts on a half-restored site, and gets its version last. A
   restore cut short is run again whole, over what it wrote (the marker names it).
   The leader's lease is not restored. Then the keys are counted and the chain verified
   again, in the target; the archive and digests are put back where this host has none.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.audit.anchor import digest_folder
from bonusd.audit.archive import AuditArchive, site_archive
from bonusd.audit.chain import AuditRecord, verify_chain
from bonusd.audit.store import AuditStore
from bonusd.draws.seal import PREFIX as SEALED
from bonusd.draws.seedkey import load_seal
from bonusd.errors import SealError
from bonusd.infra.keys import Keys
from bonusd.infra.layout import LAYOUT, RESTORING, parse_layout
from bonusd.infra.redischeck import masked
from bonusd.infra.redisclient import redis_client
from bonusd.infra.sitecopy import any_key, copy_keys, count_keys
from bonusd.infra.snapshot import ScratchRedis
from bonusd.service.backup import (
    ARCHIVE,
    DIGESTS,
    SNAPSHOT,
    BackupError,
    Progress,
    key_fingerprint,
    load_manifest,
    quiet,
)
from bonusd.settings import Settings

SEEDS_TRIED = 3
HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class Restored:
    """What `restore_backup` did."""

    keys: int
    dumped_bytes: int
    audit_records: int
    layout: int | None
    seconds: float
    archive: str  # what happened to this host's audit archive


def restore_backup(
    settings: Settings,
    folder: Path,
    *,
    redis_server: str = "redis-server",
    without_key_files: bool = False,
    progress: Progress = quiet,
) -> Restored:
    """Restore the backup in `folder` into the site of `settings`; `BackupError` (nothing
    written) when a check fails."""
    started = time.monotonic()
    manifest = load_manifest(folder)
    if (manifest["site"], manifest["prefix"]) != (settings.site, settings.key_prefix):
        raise BackupError(
            f"{folder} is a backup of site {manifest['site']} under key prefix "
            f"{manifest['prefix']}; BONUSD_SITE and BONUSD_KEY_PREFIX say {settings.site} and "
            f"{settings.key_prefix}. A site is restored under the names it was made with: its "
            "sealed seeds are bound to their keys' names"
        )
    if settings.redis_cluster:
        raise BackupError("bonusd restore writes one Redis, not a Redis Cluster (docs/deploy.md)")
    _check_files(folder, manifest, progress)
    if not without_key_files:
        _check_key_files(settings, manifest)
    copied = asyncio.run(
        _restore_redis(
            settings,
            folder,
            manifest,
            redis_server=redis_server,
            without_key_files=without_key_files,
            progress=progress,
        )
    )
    keys, dumped, records, layout = copied
    archive = _put_back_archive(settings, folder)
    return Restored(keys, dumped, records, layout, round(time.monotonic() - started, 3), archive)


def _check_files(folder: Path, manifest: dict[str, Any], progress: Progress) -> None:
    expected = [(folder / SNAPSHOT, manifest["snapshot"]["sha256"])]
    expected += [
        (folder / ARCHIVE / name, file["sha256"])
        for name, file in manifest["archive"]["files"].items()
    ]
    expected += [
        (folder / DIGESTS / name, file["sha256"]) for name, file in manifest["digests"].items()
    ]
    for path, sha256 in expected:
        digest, done = hashlib.sha256(), 0
        total = path.stat().st_size if path.is_file() else None
        try:
            with path.open("rb") as stream:
                while chunk := stream.read(HASH_CHUNK):
                    digest.update(chunk)
                    done += len(chunk)
                    progress("check", done, total)
        except OSError as exc:
            raise BackupError(f"{path}: cannot be read ({exc})") from exc
        if digest.hexdigest() != sha256:
            raise BackupError(f"{path} is not the file the backup wrote (its SHA-256 differs)")


def _check_key_files(settings: Settings, manifest: dict[str, Any]) -> None:
    """The key files at hand must be the ones the backup's host had."""
    recorded = manifest["key_files"]
    for label, path, setting in (
        ("seed_key", settings.seed_key_file, "BONUSD_SEED_KEY_FILE"),
        ("receipt_key", settings.receipt_key_file, "BONUSD_RECEIPT_KEY_FILE"),
    ):
        have = key_fingerprint(path)
        if have is None:
            raise BackupError(
                f"{setting}={path}: no key file there. Put the site's key file there first "
                "(from the other server or its escrowed copy, mode 0600, owner bonusd): a "
                "daemon without it would make a new key, and the site's sealed seeds (seed "
                "key) or printed receipts (receipt key) would never check again. "
                "--without-key-files restores anyway"
            )
        if recorded.get(label) not in (None, have):
            raise BackupError(
                f"{setting}={path} is not the key file of the backed-up site (fingerprint "
                f"{have}, the backup's host had {recorded[label]}): use the site's own"
            )


async def _restore_redis(
    settings: Settings,
    folder: Path,
    manifest: dict[str, Any],
    *,
    redis_server: str,
    without_key_files: bool,
    progress: Progress,
) -> tuple[int, int, int, int | None]:
    keys = Keys(settings.key_prefix, settings.site)
    pattern = keys.absolute("*")
    async with ScratchRedis(folder / SNAPSHOT, binary=redis_server) as scratch:
        raw = scratch.client(int(manifest["db"]))
        source = scratch.client(int(manifest["db"]), decode=True)
        total = await count_keys(raw, pattern)
        if total == 0:
            raise BackupError(f"{folder}: the snapshot holds no key of site {settings.site}")
        layout = parse_layout(cast(str | None, await source.get(keys.layout())), settings.site)
        if layout is not None and layout > LAYOUT.version:
            raise BackupError(
                f"{folder}: the site's data is in layout {layout}; this bonusd runs layout "
                f"{LAYOUT.version}: restore with the release that made the backup, or a newer one"
            )
        trail = await _check_trail(source, keys, manifest)
        _check_host_archive(settings, trail)
        if not without_key_files:
            await _check_seeds(source, keys, settings)
        target, checker = redis_client(settings, decode=False), redis_client(settings)
        try:
            marker = f"{RESTORING} {folder.name}"
            resumed = await target.get(keys.layout()) == marker.encode()  # cut short before
            if not resumed and await any_key(target, pattern) is not None:
                raise BackupError(
                    f"Redis at {masked(settings.redis_url)} holds keys of site {settings.site} "
                    "already: restore only into an empty site. Stop the site's daemons, then "
                    f"delete its keys: redis-cli --scan --pattern '{pattern}' | xargs -r "
                    "redis-cli unlink"
                )
            copied, dumped = await _copy(
                raw,
                target,
                keys,
                marker=marker,
                layout=layout,
                total=total,
                progress=progress,
            )
            restored = verify_chain(await AuditStore(checker, keys).records())
            if not restored.ok or restored.checked != len(trail):
                raise BackupError(f"the restored audit trail is not the backup's: {restored}")
            return copied, dumped, len(trail), layout
        finally:
            await target.aclose()
            await checker.aclose()


async def _check_trail(source: Redis, keys: Keys, manifest: dict[str, Any]) -> list[AuditRecord]:
    trail = await AuditStore(source, keys).records()
    check = verify_chain(trail)
    if not check.ok:
        raise BackupError(f"the snapshot's audit trail is broken: {check}")
    head = manifest["audit"]
    if head["records"] and (
        len(trail) < head["records"] or trail[head["records"] - 1].hash != head["head"]
    ):
        raise BackupError(
            f"the snapshot's audit trail does not hold record {head['records']} as the "
            "backup recorded it before the snapshot: the snapshot is not of this site's trail"
        )
    return trail


def _check_host_archive(settings: Settings, trail: list[AuditRecord]) -> None:
    folder = site_archive(settings.retention_audit_archive, settings.key_prefix, settings.site)
    tail = AuditArchive(folder).tail()
    if tail is None:
        return
    if tail.seq <= len(trail) and trail[tail.seq - 1].hash == tail.hash:
        return  # a prefix of the restored trail: the retention sweeper extends it
    raise BackupError(
        f"the audit archive at {folder} goes to record {tail.seq}, which the backup's trail "
        f"({len(trail)} records) does not hold: it records what happened after the backup, "
        f"which this restore would lose. Keep it: move it aside (mv {folder} "
        f"{folder}.before-restore), then restore again"
    )


async def _check_seeds(source: Redis, keys: Keys, settings: Settings) -> None:
    """The seed key at hand opens the snapshot's sealed seeds (a few of them)."""
    seal = load_seal(settings.seed_key_file)  # present: checked with the fingerprints
    tried = 0
    async for name in source.scan_iter(match=keys.seed_pattern(), count=1000):
        value = cast(str | None, await source.get(name))
        if value is None or not value.startswith(SEALED):
            continue
        try:
            seal.open(name, value)
        except SealError as exc:
            raise BackupError(f"the backup's sealed seeds do not open: {exc}") from exc
        tried += 1
        if tried == SEEDS_TRIED:
            return


async def _copy(
    raw: Redis,
    target: Redis,
    keys: Keys,
    *,
    marker: str,
    layout: int | None,
    total: int,
    progress: Progress,
) -> tuple[int, int]:
    skip = frozenset({keys.layout().encode(), keys.leader.encode()})  # the lease stays behind
    skipped = sum([int(await raw.exists(name)) for name in skip])
    await target.set(keys.layout(), marker)  # no daemon starts on a half-restored site
    done = 0

    def step(count: int) -> None:
        nonlocal done
        done += count
        progress("restore", done, total)

    counts = await copy_keys(raw, target, pattern=keys.absolute("*"), skip=skip, progress=step)
    if layout is None:
        await target.delete(keys.layout())
    else:
        await target.set(keys.layout(), str(layout))
    expected = total - skipped + (layout is not None)
    written = await count_keys(target, keys.absolute("*"))
    if written != expected:
        raise BackupError(f"the target holds {written} keys of the site, not {expected}")
    return counts.keys, counts.dumped_bytes


def _put_back_archive(settings: Settings, folder: Path) -> str:
    """Copy the backup's archive and digests where this host has none; never over any."""
    archive = site_archive(settings.retention_audit_archive, settings.key_prefix, settings.site)
    if AuditArchive(archive).segments():
        note = f"kept this host's audit archive at {archive} (a prefix of the restored trail)"
    else:
        _copy_missing(folder / ARCHIVE, archive)
        note = f"audit archive put back at {archive}"
    _copy_missing(
        folder / DIGESTS, digest_folder(settings.digest_dir, settings.key_prefix, settings.site)
    )
    return note


def _copy_missing(source: Path, into: Path) -> None:
    for path in sorted(source.iterdir()) if source.is_dir() else []:
        if not (into / path.name).exists():
            into.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into / path.name)
