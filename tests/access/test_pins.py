"""Member PINs (bonusd/access/pins.py) and `bonusd members hash-pin` (bonusd/cli/pins.py):
the PIN rule, argon2id hashes that verify only their own PIN, a verify that never raises,
hashes whose cost is bounded, and a command that never shows a PIN; `bonusd members
unlock-pin` lifting a card's lock with who and why in the audit trail."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import re
import subprocess
import sys
import time

import pytest
from argon2 import PasswordHasher, Type, extract_parameters
from click.testing import Result
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis
from typer.testing import CliRunner

from bonusd.access.lockout import KIOSK_PIN, Lockout
from bonusd.access.pins import (
    PIN_PATTERN,
    PinError,
    hash_pin,
    valid_pin,
    valid_pin_hash,
    verify_pin,
)
from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.cli.main import app
from bonusd.cli.pins import hash_pins
from bonusd.errors import NotFoundError
from bonusd.infra.keys import Keys
from tests.daemon_helpers import PROJECT

PIN = "4821"
HASH = hash_pin(PIN)  # one hash for the module: each costs ~30 ms


def test_the_pin_rule_is_four_to_eight_ascii_digits() -> None:
    for pin in ("0000", "1234", "12345678", "0123456"):
        assert valid_pin(pin) and re.fullmatch(PIN_PATTERN, pin)
    for pin in ("", "123", "123456789", "12a4", " 1234", "1234\n", "١٢٣٤", "１２３４", "12.4"):
        assert not valid_pin(pin), pin


def test_a_hash_is_argon2id_with_the_chosen_costs_and_verifies_its_pin() -> None:
    params = extract_parameters(HASH)
    assert HASH.startswith("$argon2id$v=19$")
    assert (params.type, params.memory_cost, params.time_cost, params.parallelism) == (
        Type.ID,
        24 * 1024,
        3,
        1,
    )
    assert valid_pin_hash(HASH)
    assert verify_pin(HASH, PIN)
    assert not verify_pin(HASH, "4822")
    assert not verify_pin(HASH, PIN + "0")


def test_two_hashes_of_one_pin_differ_and_both_verify() -> None:
    again = hash_pin(PIN)
    assert again != HASH
    assert verify_pin(again, PIN) and verify_pin(HASH, PIN)


def test_hash_pin_refuses_a_pin_off_the_rule_without_repeating_it() -> None:
    with pytest.raises(PinError, match="4 to 8 digits") as caught:
        hash_pin("98x76")
    assert "98x76" not in str(caught.value)


def test_hashes_made_with_other_bounded_costs_still_verify() -> None:
    """A casino may hash with its own tool: the hash names its costs."""
    other = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1).hash(PIN)
    assert valid_pin_hash(other) and verify_pin(other, PIN)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1234",
        "$argon2id$",
        "$argon2i$v=19$m=24576,t=3,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        "$argon2d$v=19$m=24576,t=3,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        "$argon2id$v=16$m=24576,t=3,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        # a cost no kiosk should pay on every visit: 4 GiB, 100 passes, 64 lanes
        "$argon2id$v=19$m=4194304,t=3,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        "$argon2id$v=19$m=24576,t=100,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        "$argon2id$v=19$m=24576,t=3,p=64$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        "$argon2id$v=19$m=24576,t=0,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        # too short a salt or hash, characters off base64, a space in the numbers
        "$argon2id$v=19$m=24576,t=3,p=1$c2Fs$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        "$argon2id$v=19$m=24576,t=3,p=1$c2FsdHNhbHRzYWx0$aGFzaA",
        "$argon2id$v=19$m=24576,t=3,p=1$c2FsdHNh!HRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        "$argon2id$v=19$m= 24576,t=3,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
        HASH + "$extra",
        HASH + "A" * 300,
    ],
)
def test_anything_but_a_bounded_argon2id_hash_is_not_a_pin_hash(text: str) -> None:
    started = time.perf_counter()
    assert not valid_pin_hash(text)
    assert not verify_pin(text, PIN)
    assert time.perf_counter() - started < 0.5  # refused before any hashing work


@given(st.text(max_size=300), st.text(max_size=20))
def test_verify_never_raises(text: str, pin: str) -> None:
    assert verify_pin(text, pin) is False or (text == HASH and pin == PIN)


@given(st.text(max_size=20).filter(lambda pin: not re.fullmatch(r"[0-9]{4,8}", pin)))
def test_no_pin_off_the_rule_is_hashed_or_verified(pin: str) -> None:
    with pytest.raises(PinError):
        hash_pin(pin)
    assert not verify_pin(HASH, pin)


def test_one_verify_costs_tens_of_milliseconds() -> None:
    """The cost is what slows an offline search of a stolen file; it must not vanish (a
    cheap hash) nor stall a kiosk. Loose bounds: the machine is shared."""
    costs = []
    for _ in range(5):
        started = time.perf_counter()
        assert verify_pin(HASH, PIN)
        costs.append(time.perf_counter() - started)
    assert 0.005 < sorted(costs)[2] < 0.5


# -- bonusd members hash-pin ---------------------------------------------------------------


def test_piped_pins_give_one_hash_a_line_in_order_with_blanks_kept() -> None:
    hashes = hash_pins(io.StringIO("1234\n\n 98765432 \r\n"), interactive=False)
    assert len(hashes) == 3 and hashes[1] == ""
    assert verify_pin(hashes[0], "1234") and verify_pin(hashes[2], "98765432")


def test_bad_piped_pins_are_named_by_line_and_nothing_is_hashed() -> None:
    with pytest.raises(PinError) as caught:
        hash_pins(io.StringIO("1234\n12a4\n123\n5678\n"), interactive=False)
    message = str(caught.value)
    assert "line(s) 2, 3 of the input" in message and "nothing was hashed" in message
    assert "12a4" not in message and "123\n" not in message
    with pytest.raises(PinError, match="no PIN"):
        hash_pins(io.StringIO("\n\n"), interactive=False)


def test_at_a_terminal_the_pin_is_asked_twice_without_echo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter(["2580", "2580"])
    monkeypatch.setattr("getpass.getpass", lambda prompt: next(answers))
    [hashed] = hash_pins(io.StringIO(), interactive=True)
    assert verify_pin(hashed, "2580")
    answers = iter(["2580", "2581"])
    with pytest.raises(PinError, match="differ"):
        hash_pins(io.StringIO(), interactive=True)


def test_the_command_prints_the_hash_of_the_pin_on_stdin() -> None:
    result = CliRunner().invoke(app, ["members", "hash-pin"], input="7391\n")
    assert result.exit_code == 0, result.output
    [line] = result.stdout.splitlines()
    assert valid_pin_hash(line) and verify_pin(line, "7391")
    assert "7391" not in result.stdout


def test_the_command_refuses_a_bad_pin_with_status_2_and_never_shows_it() -> None:
    command = [sys.executable, "-c", "from bonusd.cli.main import main; main()"]
    done = subprocess.run(
        [*command, "members", "hash-pin"],
        input="31x7\n",
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=False,
    )
    assert done.returncode == 2
    assert "line(s) 1 of the input: a PIN is 4 to 8 digits" in done.stderr
    assert "31x7" not in done.stderr + done.stdout


async def test_unlock_pin_lifts_a_cards_kiosk_lock_and_records_who_and_why(
    monkeypatch: pytest.MonkeyPatch, site: str, redis_url: str, aredis: Redis
) -> None:
    monkeypatch.setenv("BONUSD_SITE", site)
    monkeypatch.setenv("BONUSD_REDIS_URL", redis_url)
    for name in ("BONUSD_CLOCK", "BONUSD_CLOCK_START"):  # the wall clock, as the lock's
        monkeypatch.delenv(name, raising=False)
    keys = Keys("bonusd", site)
    await aredis.hset(keys.member_index, "1001", "x")  # a registered card (the index row)
    lockout = Lockout(aredis, keys, KIOSK_PIN, attempts=5, lock_s=900)
    now = dt.datetime.now(dt.UTC)
    for _ in range(5):
        await lockout.failed("1001", now)
    assert (await lockout.state("1001", now)).locked

    def unlock(*args: str) -> Result:
        return CliRunner().invoke(app, ["members", "unlock-pin", *args])

    refused = await asyncio.to_thread(unlock, "1001", "--reason", "short")
    assert refused.exit_code == 2 and (await lockout.state("1001", now)).locked
    unknown = await asyncio.to_thread(unlock, "9999", "--reason", "ID book checked here")
    assert isinstance(unknown.exception, NotFoundError)
    lifted = await asyncio.to_thread(unlock, "1001", "--reason", "ID book checked here")
    assert lifted.exit_code == 0 and "PIN lock lifted" in lifted.output, lifted.output
    assert not (await lockout.state("1001", now)).locked
    (record,) = [r for r in await AuditStore(aredis, keys).records() if r.kind == Kind.PIN_UNLOCK]
    assert record.payload == {"card": "1001", "was_locked": True, "reason": "ID book checked here"}
    assert record.actor.endswith("(command line)")
