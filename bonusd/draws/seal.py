"""Seeds sealed under the site's key, held outside Redis (docs/fairness.md, "Where the seed
lives"): `SeedSeal` seals a round's secret seed with AES-256-GCM before it is stored, with
the Redis key's name as associated data, so a sealed value opens only under its own key
name and only with the site's key; anyone reading Redis (an operator, a backup, a replica)
learns nothing from which the picks could be computed. `load_seal` reads the key file
(`BONUSD_SEED_KEY_FILE`: 64 hex characters), creating it once when it does not exist."""

from __future__ import annotations

import base64
import binascii
import logging
import os
import secrets
import stat
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from bonusd.errors import SealError, SeedKeyError

logger = logging.getLogger(__name__)

PREFIX = "sealed1:"  # the format's version: a 12-byte nonce, then the ciphertext and tag
KEY_BYTES = 32
NONCE_BYTES = 12
SEED_BYTES = 32
SETTING = "BONUSD_SEED_KEY_FILE"


class SeedSeal:
    """Seals and opens seeds with one 32-byte AES-GCM key; `source` names the key (its
    file) in messages."""

    def __init__(self, key: bytes, source: str = "the seed key") -> None:
        if len(key) != KEY_BYTES:
            raise SeedKeyError(f"{source}: a seed key is {KEY_BYTES} bytes, not {len(key)}")
        self._aead = AESGCM(key)
        self.source = source

    def seal(self, name: str, seed: bytes) -> str:
        """`sealed1:` + base64(nonce + ciphertext), bound to the Redis key `name`."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, seed, name.encode())
        return PREFIX + base64.b64encode(nonce + sealed).decode("ascii")

    def open(self, name: str, text: str) -> bytes:
        """The seed sealed under `name`; `SealError` saying what the value is otherwise."""
        if not text.startswith(PREFIX):
            raise SealError(f"{name} {_not_sealed(text)}")
        try:
            raw = base64.b64decode(text[len(PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            raise SealError(f"{name} holds a damaged sealed value (not base64)") from None
        try:
            seed = self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], name.encode())
        except (InvalidTag, ValueError):
            raise SealError(
                f"{name} does not open with the key in {self.source}: it was sealed under "
                f"another key ({SETTING} must name the site's one key file, the same on every "
                "daemon), moved here from another seed key, or altered"
            ) from None
        if len(seed) != SEED_BYTES:
            raise SealError(f"{name} holds a sealed value of {len(seed)} bytes, not a seed")
        return seed


def _not_sealed(text: str) -> str:
    try:
        plain = len(text) == 2 * SEED_BYTES and bool(bytes.fromhex(text))
    except ValueError:
        plain = False
    if plain:
        return "holds a plain hex seed (stored before seeds were sealed, or put there by hand)"
    return "does not hold a sealed seed"


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
