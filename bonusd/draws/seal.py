"""Seeds sealed under the site's key, held outside Redis (docs/fairness.md, "Where the seed
lives"): `SeedSeal` seals a round's secret seed with AES-256-GCM before it is stored, with
the Redis key's name as associated data, so a sealed value opens only under its own key
name and only with the site's key; anyone reading Redis (an operator, a backup, a replica)
learns nothing from which the picks could be computed. Pure: the key file is read by
`bonusd.draws.seedkey`."""

from __future__ import annotations

import base64
import binascii
import logging
import secrets

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
