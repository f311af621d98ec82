"""`bonusd backup`: a site's data as it was at one instant, in a folder that `bonusd
restore` (bonusd/service/restore.py) puts back (docs/deploy.md, "Backups and restores").

    {parent}/{site}-20261107T190512Z/
        manifest.json        what was taken, when, from where, with checksums
        redis.rdb            the Redis snapshot (every key of that Redis, of one instant)
        audit-archive/       the site's audit archive files, as this host had them
        audit-digests/       the site's daily digests, as this host had them

The snapshot is Redis's own (`bonusd.infra.snapshot`): a fork, so nothing pauses and every
key is of the same instant — its `ctime` is the backup's recovery point. The archive is
copied *before* the snapshot: the archive only ever copies the trail's records, so what is
copied is a prefix of the snapshot's trail and the two restore together. The folder is
written under a hidden name and renamed when complete; `keep` prunes the oldest complete
backups of the site.

The site's key files (`BONUSD_SEED_KEY_FILE`, `BONUSD_RECEIPT_KEY_FILE`) are deliberately
not in it: whoever holds both a sealed seed and its key computes a draw's winners before
it is run, and the receipt key forges receipts. The manifest records a fingerprint of each
(a hash that reveals nothing of the key), so a restore can tell whether the keys at hand
are the site's.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis.asyncio.connection import parse_url

from bonusd import __version__
from bonusd.audit.anchor import digest_folder
from bonusd.audit.archive import SEGMENT_GLOB, AuditArchive, site_archive
from bonusd.audit.store import AuditStore
from bonusd.errors import ConfigError
from bonusd.infra.keys import Keys
from bonusd.infra.redischeck import masked
from bonusd.infra.redisclient import redis_client
from bonusd.infra.snapshot import fetch_snapshot
from bonusd.settings import Settings

FORMAT = 1
MANIFEST = "manifest.json"
SNAPSHOT = "redis.rdb"
ARCHIVE = "audit-archive"
DIGESTS = "audit-digests"
DIGEST_GLOB = "digest-*.txt"

Progress = Callable[[str, int, int | None], None]  # stage, done, total (None: not known)


class BackupError(ConfigError):
    """A backup or a restore cannot be made as asked; the message says why and the fix."""


def quiet(stage: str, done: int, total: int | None) -> None:
    """No progress shown."""


def take_backup(
    settings: Settings, parent: Path, *, keep: int = 0, progress: Progress = quiet
) -> tuple[Path, dict[str, Any]]:
    """Back the site up into a new folder under `parent`; its path and manifest. `keep`
    > 0 then removes all but the newest `keep` complete backups of the site there."""
    if settings.redis_cluster:
        raise BackupError(
            "bonusd backup reads one Redis; with BONUSD_REDIS_CLUSTER back up each primary "
            "(redis-cli --rdb) and restore the site's node (docs/deploy.md)"
        )
    started = dt.datetime.now(dt.UTC)
    name = f"{settings.site}-{started:%Y%m%dT%H%M%SZ}"
    partial = parent / f".{name}.partial"
    parent.mkdir(parents=True, exist_ok=True)
    partial.mkdir(mode=0o700)  # members, cards, audit records: readable by the owner only
    try:
        archive = _copy_archive(settings, partial / ARCHIVE)  # before the snapshot: a prefix
        digests = _copy_files(
            digest_folder(settings.digest_dir, settings.key_prefix, settings.site),
            partial / DIGESTS,
            DIGEST_GLOB,
        )
        live = asyncio.run(_live_facts(settings))
        snapshot = fetch_snapshot(
            settings.redis_url,
            partial / SNAPSHOT,
            progress=lambda done, total: progress("snapshot", done, total),
        )
        manifest = {
            "format": FORMAT,
            "bonusd": __version__,
            "site": settings.site,
            "prefix": settings.key_prefix,
            "db": _db(settings.redis_url),
            "redis": {"url": masked(settings.redis_url), **live.pop("redis")},
            "started": started.isoformat(timespec="seconds"),
            "recovery_point": _utc(snapshot.taken_at),
            "snapshot": {
                "file": SNAPSHOT,
                "bytes": snapshot.size,
                "sha256": snapshot.sha256,
                "rdb_version": snapshot.rdb_version,
            },
            **live,
            "archive": archive,
            "digests": digests,
            "key_files": {
                "seed_key": key_fingerprint(settings.seed_key_file),
                "receipt_key": key_fingerprint(settings.receipt_key_file),
            },
            "seconds": round((dt.datetime.now(dt.UTC) - started).total_seconds(), 3),
        }
        _write_json(partial / MANIFEST, manifest)
        folder = parent / name
        partial.rename(folder)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if keep > 0:
        prune(parent, settings.site, keep)
    return folder, manifest


async def _live_facts(settings: Settings) -> dict[str, Any]:
    """Read from the live Redis before the snapshot: its version, the site's layout and
    its audit trail's head (the snapshot holds that record or later ones)."""
    keys = Keys(settings.key_prefix, settings.site)
    client = redis_client(settings)
    try:
        server = await client.info("server")
        layout = await client.get(keys.layout())
        length = int(await client.llen(keys.audit))
        head = await AuditStore(client, keys).records(length - 1, length - 1) if length else []
    finally:
        await client.aclose()
    return {
        "redis": {"version": str(server.get("redis_version", ""))},
        "layout": layout,
        "audit": {"records": length, "head": head[0].hash if head else ""},
    }


def _copy_archive(settings: Settings, into: Path) -> dict[str, Any]:
    source = site_archive(settings.retention_audit_archive, settings.key_prefix, settings.site)
    files = _copy_files(source, into, SEGMENT_GLOB, whole_lines=True)
    check = AuditArchive(into).verify()
    return {
        "source": str(source.resolve()),
        "files": files,
        "first_seq": check.first_seq,
        "last_seq": check.last_seq,
        "check": str(check),
        "ok": check.ok,
    }


def _copy_files(
    source: Path, into: Path, pattern: str, *, whole_lines: bool = False
) -> dict[str, dict[str, Any]]:
    """Copy `source`'s files matching `pattern` into `into`; their sizes and SHA-256. An
    archive file being appended to is cut after its last whole line."""
    into.mkdir(parents=True, exist_ok=True)
    copied: dict[str, dict[str, Any]] = {}
    for path in sorted(source.glob(pattern)) if source.is_dir() else []:
        data = path.read_bytes()
        if whole_lines and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]
        (into / path.name).write_bytes(data)
        copied[path.name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return copied


def key_fingerprint(path: Path) -> str | None:
    """A fingerprint of a key file's key (None: missing, unreadable or malformed); the
    hash reveals nothing of the key."""
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return hashlib.sha256(b"bonusd key fingerprint\0" + key).hexdigest()[:24] if key else None


def prune(parent: Path, site: str, keep: int) -> list[Path]:
    """Remove all but the newest `keep` complete backups of `site` in `parent`."""
    complete = sorted(p for p in parent.glob(f"{site}-*") if (p / MANIFEST).is_file())
    removed = complete[:-keep] if len(complete) > keep else []
    for folder in removed:
        shutil.rmtree(folder)
    return removed


def load_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of the backup in `folder`; `BackupError` if there is none to read."""
    try:
        manifest: dict[str, Any] = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError(f"{folder}: not a complete bonusd backup ({exc})") from exc
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{folder}: backup format {manifest.get('format')}, not {FORMAT}")
    return manifest


def _write_json(path: Path, value: dict[str, Any]) -> None:
    with path.open("w", encoding="utf-8") as out:
        json.dump(value, out, indent=2, sort_keys=True)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())


def _db(url: str) -> int:
    return int(parse_url(url).get("db", 0) or 0)


def _utc(unix: int) -> str:
    return dt.datetime.fromtimestamp(unix, dt.UTC).isoformat() if unix else ""
