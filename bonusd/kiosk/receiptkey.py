"""The site's receipt key file (`BONUSD_RECEIPT_KEY_FILE`: 64 hex characters, mode 0600,
the same file on every daemon of the site, never in Redis): the key of the receipts' MAC
(`bonusd.kiosk.receipt`), created once when it does not exist (docs/kiosk.md, "The
receipt key"; the file's rules are `bonusd.infra.keyfile`'s)."""

from __future__ import annotations

from pathlib import Path

from bonusd.errors import ReceiptKeyError
from bonusd.infra.keyfile import KEY_BYTES, KeyFileRules, load_key_file

SETTING = "BONUSD_RECEIPT_KEY_FILE"
RULES = KeyFileRules(
    setting=SETTING,
    what="receipt key",
    error=ReceiptKeyError,
    created="; receipts printed under another key will not check",
    keep="receipts already printed check only with it",
)

__all__ = ["KEY_BYTES", "SETTING", "load_receipt_key"]


def load_receipt_key(path: Path) -> bytes:
    """The 32-byte key in the site's key file; a missing file is created once and read
    back, so daemons starting together agree. `ReceiptKeyError` for a file readable by
    group or others or not holding 64 hex characters."""
    return load_key_file(path, RULES)
