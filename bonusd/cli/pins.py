"""`bonusd members hash-pin`: the argon2id hash of a member's kiosk PIN, for the member
file's `pin_hash` column (docs/kiosk.md).

At a terminal the PIN is asked twice without echo; from a pipe every line is a PIN and
each gets its hash on a line of its own, in order (a blank line stays blank: no PIN), so a
casino's export can fill the column in one run. Every line is checked before any is
hashed, and a bad one is named by its line number, never shown. Needs no settings, Redis
or daemon.
"""

from __future__ import annotations

import getpass
import sys
from typing import TextIO

import typer

from bonusd.access.pins import PinError, hash_pin, valid_pin

_RULE = "a PIN is 4 to 8 digits (0-9)"


def _asked() -> list[str]:
    """One PIN from the terminal, typed twice, never echoed."""
    pin = getpass.getpass("PIN (4 to 8 digits, not shown): ")
    if not valid_pin(pin):
        raise PinError(f"{_RULE}; nothing was hashed")
    if getpass.getpass("the same PIN again: ") != pin:
        raise PinError("the two PINs differ; nothing was hashed")
    return [pin]


def _piped(stream: TextIO) -> list[str]:
    """Every line of `stream` a PIN (or blank); all checked before any is hashed."""
    pins = [line.strip() for line in stream]
    bad = [n for n, pin in enumerate(pins, start=1) if pin and not valid_pin(pin)]
    if bad:
        shown = ", ".join(str(n) for n in bad[:20]) + (", ..." if len(bad) > 20 else "")
        raise PinError(f"line(s) {shown} of the input: {_RULE}; nothing was hashed")
    if not any(pins):
        raise PinError("no PIN on the input (one PIN a line); nothing was hashed")
    return pins


def hash_pins(stream: TextIO, *, interactive: bool) -> list[str]:
    """The hashes of the PINs from `stream` (or the terminal), in order; "" for a blank."""
    pins = _asked() if interactive else _piped(stream)
    return [hash_pin(pin) if pin else "" for pin in pins]


def add_pin_commands(members_app: typer.Typer) -> None:
    @members_app.command("hash-pin")
    def hash_pin_command() -> None:
        """Print the argon2id hash of a kiosk PIN (4 to 8 digits) read from stdin, for the
        member file's pin_hash column. At a terminal: asked twice, not echoed. From a pipe:
        one PIN a line, one hash a line (blank stays blank). Quote the hash in a CSV file:
        it holds commas. ~30 ms a PIN."""
        for line in hash_pins(sys.stdin, interactive=sys.stdin.isatty()):
            typer.echo(line)
