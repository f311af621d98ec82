"""`bonusd members hash-pin`: the argon2id hash of a member's kiosk PIN, for the member
file's `pin_hash` column (docs/kiosk.md); `bonusd members unlock-pin`: a card's kiosk PIN
lock lifted after the desk checked the member's ID, recorded in the audit trail.

At a terminal the PIN is asked twice without echo; from a pipe every line is a PIN and
each gets its hash on a line of its own, in order (a blank line stays blank: no PIN), so a
casino's export can fill the column in one run. Every line is checked before any is
hashed, and a bad one is named by its line number, never shown. Hashing needs no settings, Redis
or daemon.
"""

from __future__ import annotations

import asyncio
import getpass
import sys
from collections.abc import Callable
from typing import Annotated, TextIO

import typer

from bonusd.access.lockout import KIOSK_PIN, Lockout
from bonusd.access.pins import PinError, hash_pin, valid_pin
from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.cli.clock import settings_clock
from bonusd.cli.staff import operator_name
from bonusd.errors import NotFoundError
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.settings import Settings

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


async def unlock_pin(conf: Settings, card: str, reason: str) -> bool:
    """Lift `card`'s kiosk PIN lock and forget its wrong PINs, recorded in the audit trail
    with who ran the command and why; whether it was locked."""
    redis = redis_client(conf)
    try:
        keys = Keys(conf.key_prefix, conf.site)
        if not await redis.hexists(keys.member_index, card):
            raise NotFoundError(f"card {card} is not a registered member; check the card")
        clock = await settings_clock(conf, redis)
        lockout = Lockout(
            redis, keys, KIOSK_PIN, attempts=conf.kiosk_pin_attempts, lock_s=conf.kiosk_pin_lock_s
        )
        now = clock.now()
        was = (await lockout.state(card, now)).locked
        await lockout.cleared(card)
        await AuditStore(redis, keys).append(
            at=now,
            actor=operator_name(),
            kind=Kind.PIN_UNLOCK,
            payload={"card": card, "was_locked": was, "reason": reason},
        )
        return was
    finally:
        await redis.aclose()


def add_pin_commands(members_app: typer.Typer, settings: Callable[[], Settings]) -> None:
    @members_app.command("hash-pin")
    def hash_pin_command() -> None:
        """Print the argon2id hash of a kiosk PIN (4 to 8 digits) read from stdin, for the
        member file's pin_hash column. At a terminal: asked twice, not echoed. From a pipe:
        one PIN a line, one hash a line (blank stays blank). Quote the hash in a CSV file:
        it holds commas. ~30 ms a PIN."""
        for line in hash_pins(sys.stdin, interactive=sys.stdin.isatty()):
            typer.echo(line)

    @members_app.command("unlock-pin")
    def unlock_pin_command(
        card: Annotated[str, typer.Argument(help="The member's card number.")],
        reason: Annotated[
            str, typer.Option(help="What you checked (10 to 200 characters), for the trail.")
        ],
    ) -> None:
        """Lift a card's kiosk PIN lock (after wrong PINs) once the member's ID is checked;
        recorded in the audit trail with your login and the reason."""
        if not 10 <= len(reason) <= 200 or not reason.isprintable():
            raise typer.BadParameter("10 to 200 printable characters", param_hint="--reason")
        was = asyncio.run(unlock_pin(settings(), card, reason))
        typer.echo(f"card {card}: " + ("PIN lock lifted" if was else "was not locked (recorded)"))
