"""The site's receipt key file (`BONUSD_RECEIPT_KEY_FILE`: 64 hex characters, mode 0600,
the same file on every daemon of the site, never in Redis): the key of the receipts' MAC
(`bonusd.kiosk.receipt`), created once when it does not exist (docs/kiosk.md, "The
receipt key")."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from bonusd.errors import ReceiptKeyError

logger = logging.getLogger(__name__)

KEY_BYTES = 32
SETTING = "BONUSD_RECEIPT_KEY_FILE"


def load_receipt_key(path: Path) -> bytes:
    """The 32-byte key in the site's key file; a missing file is created once (0600,
    whole, then linked in place) and read back, so daemons starting together agree.
    `ReceiptKeyError` for a file readable by group or others or not holding 64 hex
    characters."""
    try:
        created = _create(path)
    except OSError as exc:
        raise ReceiptKeyError(
            f"{SETTING}={path}: cannot create the receipt key file: {exc}"
        ) from None
    if created:
        logger.warning(
            "created a new receipt key in %s (%s): in production provision it instead, the "
            "same file on every daemon of the site, readable only by the daemon's user; "
            "receipts printed under another key will not check",
            path.resolve(),
            SETTING,
        )
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReceiptKeyError(
            f"{SETTING}={path}: cannot read the receipt key file: {exc}"
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ReceiptKeyError(
            f"{SETTING}={path}: the receipt key file is open to group or others "
            f"(mode {stat.filemode(mode)}); make it readable only by the daemon's user: "
            f"chmod 600 {path}"
        )
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES or len(text) != 2 * KEY_BYTES:
        raise ReceiptKeyError(
            f"{SETTING}={path}: the receipt key file must hold the key as {2 * KEY_BYTES} hex "
            f"characters (it holds {len(text)} characters); restore the site's key file "
            "(every daemon's is the same), never a new one: receipts already printed check "
            "only with it"
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
