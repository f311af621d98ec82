"""The seal of the draw seeds (`bonusd.draws.seal`) and the site's key file: a sealed seed
opens only under its own key name with its own key; the key file is made once, 0600, and
a malformed or group-readable one refuses the start."""

from __future__ import annotations

import base64
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bonusd.draws.seal import PREFIX, SeedSeal
from bonusd.draws.seedkey import load_seal
from bonusd.errors import SealError, SeedKeyError
from bonusd.service.root import Service
from bonusd.settings import Settings

NAME = "bonusd:{site}:seed:gh.halfway:pooled:1"
SEED = bytes(range(32))


def test_a_sealed_seed_round_trips_and_is_never_the_same_text() -> None:
    seal = SeedSeal(os.urandom(32))
    first, second = seal.seal(NAME, SEED), seal.seal(NAME, SEED)
    assert first.startswith(PREFIX) and first != second  # a fresh nonce each time
    assert seal.open(NAME, first) == seal.open(NAME, second) == SEED
    assert SEED.hex() not in first


def test_any_flipped_byte_another_name_another_key_or_plain_hex_is_refused() -> None:
    seal = SeedSeal(os.urandom(32), source="/etc/bonusd/seed-key")
    sealed = seal.seal(NAME, SEED)
    raw = base64.b64decode(sealed[len(PREFIX) :])
    for at in range(len(raw)):
        flipped = bytearray(raw)
        flipped[at] ^= 0x01
        with pytest.raises(SealError, match="does not open with the key in /etc/bonusd/seed-key"):
            seal.open(NAME, PREFIX + base64.b64encode(bytes(flipped)).decode())
    with pytest.raises(SealError, match="moved here from another seed key"):
        seal.open(NAME.replace("pooled:1", "pooled:2"), sealed)
    with pytest.raises(SealError, match="sealed under another key"):
        SeedSeal(os.urandom(32)).open(NAME, sealed)
    with pytest.raises(SealError, match="holds a plain hex seed"):
        seal.open(NAME, SEED.hex())
    with pytest.raises(SealError, match="damaged"):
        seal.open(NAME, PREFIX + "not base64!")
    with pytest.raises(SealError, match="does not hold a sealed seed"):
        seal.open(NAME, "")


def test_a_missing_key_file_is_made_once_0600_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "keys" / "seed-key"
    with caplog.at_level(logging.WARNING, logger="bonusd.draws.seal"):
        seal = load_seal(path)
    assert (path.stat().st_mode & 0o777) == 0o600
    assert len(path.read_text().strip()) == 64
    warning = caplog.records[-1].getMessage()
    assert str(path) in warning and "production" in warning and "backup" in warning
    caplog.clear()
    again = load_seal(path)  # the same key, no warning
    assert again.open(NAME, seal.seal(NAME, SEED)) == SEED
    assert not caplog.records
    assert [p.name for p in path.parent.iterdir()] == ["seed-key"]


def test_two_starts_at_once_make_one_key(tmp_path: Path) -> None:
    path = tmp_path / "seed-key"
    with ThreadPoolExecutor(max_workers=16) as pool:
        seals = list(pool.map(lambda _: load_seal(path), range(16)))
    sealed = seals[0].seal(NAME, SEED)
    assert all(one.open(NAME, sealed) == SEED for one in seals)
    assert [p.name for p in tmp_path.iterdir()] == ["seed-key"]


@pytest.mark.parametrize(
    "text",
    ["", "abc", "zz" * 32, "00" * 31, "00" * 33],
    ids=["empty", "short", "nothex", "31", "33"],
)
def test_a_malformed_key_file_refuses_the_start(tmp_path: Path, text: str) -> None:
    path = tmp_path / "seed-key"
    path.write_text(text)
    path.chmod(0o600)
    with pytest.raises(SeedKeyError, match="must hold the key as 64 hex characters") as refused:
        load_seal(path)
    assert f"BONUSD_SEED_KEY_FILE={path}" in str(refused.value)


def test_a_group_readable_key_file_refuses_the_start(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "open-seed-key"
    path.write_text(os.urandom(32).hex())
    path.chmod(0o640)
    with pytest.raises(SeedKeyError, match="open to group or others") as refused:
        Service(settings.model_copy(update={"seed_key_file": path}), serve_http=False)
    assert f"chmod 600 {path}" in str(refused.value)
