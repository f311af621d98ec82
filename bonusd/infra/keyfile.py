"""A site's secret key file, as the seed key and the receipt key keep theirs: 64 hex
characters (32 bytes), mode 0600, the same file on every daemon of the site, never in
Redis. A missing file is created once (written whole to a file of its own, then linked in
place, so daemons starting together agree); a file open to group or others, or not holding
exactly the key, is refused with a message saying what to fix."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from bonusd.errors import ConfigError

logger = logging.getLogger(__name__)
KEY_BYTES = 32


@dataclass(frozen=True, slots=True)
class KeyFileRules:
    """What one kind of key file is called and what its refusals say."""

    setting: str  # e.g. BONUSD_SEED_KEY_FILE
    what: str  # e.g. "seed key"
    error: type[ConfigError]  # raised for an unusable file
    created: str  # the WARNING's tail when a new key is made
    keep: str  # why a lost file is restored, never replaced


def load_key_file(path: Path, rules: KeyFileRules) -> bytes:
    """The 32-byte key in `path`, made first if there is no file (with a WARNING)."""
    where = f"{rules.setting}={path}"
    try:
        created = _create(path)
    except OSError as exc:
        raise rules.error(f"{where}: cannot create the {rules.what} file: {exc}") from None
    if created:
        logger.warning(
            "created a new %s in %s (%s): in production provision it instead, the same file "
            "on every daemon of the site, readable only by the daemon's user%s",
            rules.what,
            path.resolve(),
            rules.setting,
            rules.created,
        )
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise rules.error(f"{where}: cannot read the {rules.what} file: {exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise rules.error(
            f"{where}: the {rules.what} file is open to group or others "
            f"(mode {stat.filemode(mode)}); make it readable only by the daemon's user: "
            f"chmod 600 {path}"
        )
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES or len(text) != 2 * KEY_BYTES:
        raise rules.error(
            f"{where}: the {rules.what} file must hold the key as {2 * KEY_BYTES} hex "
            f"characters (it holds {len(text)} characters); restore the site's key file "
            f"(every daemon's is the same), never a new one: {rules.keep}"
        )
    return key


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
