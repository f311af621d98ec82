"""Member PINs for the kiosks: the PIN rule, and argon2id hashes of PINs (argon2-cffi).

A casino's member file carries each PIN only as its hash (`Member.pin_hash`, made with
`bonusd members hash-pin`); the kiosk checks a typed PIN against it. A 4-digit PIN has
10,000 values, so no hash makes a stolen member file safe: what stops guessing at the
kiosk is the lockout (`bonusd.access.lockout`), and the hashes are to be kept as secret as
the file. The hash's cost only has to make a bulk offline search slow, and one check cheap
enough for the kiosk: with the parameters below one check costs ~33-37 ms on the target
machine (2 cores; docs/kiosk.md). It is CPU work: callers run `verify_pin` in
`asyncio.to_thread`, never on the event loop.

A hash names its own parameters, so hashes made with other (bounded) costs still verify;
`bonusd.registry.records.valid_pin_hash` says which hashes are accepted.
"""

from __future__ import annotations

import re

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

from bonusd.errors import BonusdError
from bonusd.registry.records import valid_pin_hash

__all__ = ["PIN_PATTERN", "PinError", "hash_pin", "valid_pin", "valid_pin_hash", "verify_pin"]

PIN_PATTERN = r"^[0-9]{4,8}$"  # a member's kiosk PIN: 4 to 8 digits
_PIN = re.compile(PIN_PATTERN)

# argon2id, 24 MiB, 3 passes, 1 lane: ~35 ms a check here (RFC 9106's second choice
# scaled down; OWASP's floor is 19 MiB with 2 passes). Six checks at once (the default
# thread pool on 2 cores) hold 144 MiB.
_HASHER = PasswordHasher(
    time_cost=3, memory_cost=24 * 1024, parallelism=1, hash_len=32, salt_len=16, type=Type.ID
)


class PinError(BonusdError):
    """A PIN does not follow the rule (4 to 8 digits); the PIN itself is never repeated."""


def valid_pin(pin: str) -> bool:
    """Whether `pin` follows the PIN rule (ASCII digits only: no other script's digits)."""
    return _PIN.fullmatch(pin) is not None


def hash_pin(pin: str) -> str:
    """The argon2id hash of `pin`, salted afresh (two hashes of one PIN differ)."""
    if not valid_pin(pin):
        raise PinError("a PIN is 4 to 8 digits (0-9), nothing else")
    return _HASHER.hash(pin)


def verify_pin(pin_hash: str, pin: str) -> bool:
    """Whether `pin` is the PIN of `pin_hash`. False, never an exception, for a wrong PIN,
    a PIN that breaks the rule, or a hash that is not a valid PIN hash. Takes ~35 ms of CPU:
    call it through `asyncio.to_thread`."""
    if not valid_pin(pin) or not valid_pin_hash(pin_hash):
        return False
    try:
        return _HASHER.verify(pin_hash, pin)
    except (VerificationError, InvalidHashError):
        return False
