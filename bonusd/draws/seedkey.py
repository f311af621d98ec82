"""The site's seed key file (`BONUSD_SEED_KEY_FILE`: 64 hex characters, mode 0600, the
same file on every daemon of the site, never in Redis): read into a `SeedSeal`, and created
once when it does not exist (docs/fairness.md, "Where the seed lives"; the file's rules are
`bonusd.infra.keyfile`'s)."""

from __future__ import annotations

from pathlib import Path

from bonusd.draws.seal import SETTING, SeedSeal
from bonusd.errors import SeedKeyError
from bonusd.infra.keyfile import KeyFileRules, load_key_file

RULES = KeyFileRules(
    setting=SETTING,
    what="seed key",
    error=SeedKeyError,
    created=", and never in the same backup as Redis",
    keep="seeds sealed already open only with it",
)


def load_seal(path: Path) -> SeedSeal:
    """The seal of the site's key file; a missing file is created once and read back, so
    daemons starting together agree. `SeedKeyError` for a file readable by group or
    others or not holding 64 hex characters."""
    return SeedSeal(load_key_file(path, RULES), source=str(path))
