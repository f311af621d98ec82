"""The site's seed key file (`BONUSD_SEED_KEY_FILE`: 64 hex characters, mode 0600, the
same file on every daemon of the site, never in Redis): read into a `SeedSeal`, and created
once when it does not exist (docs/fairness.md, "Where the seed lives")."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from bonusd.draws.seal import KEY_BYTES, SETTING, SeedSeal
from bonusd.errors import SeedKeyError

logger = logging.getLogger(__name__)


def load_seal(path: Path) -> SeedSeal:
    """The seal of the site's key file; a missing file is created once (0600, whole, then
    linked in place) and read back, so daemons starting together agree. `SeedKeyError`
    for a file readable by group or others or not holding 64 hex characters."""
    try:
        created = _create(path)
    except OSError as exc:
        raise SeedKeyError(f"{SETTING}={path}: cannot create the seed key file: {exc}") from None
    if created:
        logger.warning(
            "created a new seed key in %s (%s): in production provision it instead, the same "
            "file on every daemon of the site, readable only by the daemon's user, and never "
            "in the same backup as Redis",
            path.resolve(),
            SETTING,
        )
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedKeyError(f"{SETTING}={path}: cannot read the seed key file: {exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SeedKeyError(
            f"{SETTING}={path}: the seed key file is open to group or others "
            f"(mode {stat.filemode(mode)}); make it readable only by the daemon's user: "
            f"chmod 600 {path}"
        )
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES or len(text) != 2 * KEY_BYTES:
        raise SeedKeyError(
            f"{SETTING}={path}: the seed key file must hold the key as {2 * KEY_BYTES} hex "
            f"characters (it holds {len(text)} characters); restore the site's key file "
            "(every daemon's is the same), never a new one: seeds sealed already open only "
            "with it"
        )
    return SeedSeal(key, source=str(path))


def _create(path: Path) -> bool:
    """Put a fresh key at `path` unless a file is there; True when this call made it. The
    key is written whole (O_CREAT|O_EXCL, 0600) to a file of its own, then linked in
    place: a daemon starting at the same instant sees no file or the whole key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return False
    fresh = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_bytes(KEY_BYTES).hex() + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.link(fresh, path)  # fails if another daemon's key landed first
    except FileExistsError:
        return False
    finally:
        fresh.unlink(missing_ok=True)
    return True
