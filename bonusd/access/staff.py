"""Staff accounts: the people who sign in to the crew handhelds and the promotions desk.

An account holds a staff number (`^[0-9A-Za-z]{1,16}$`, what a badge reader types), a
name, one role (crew, desk or admin), the argon2id hash of a PIN of 6 to 8 digits
(`bonusd.access.pins`: the same hasher as the kiosk's member PINs) and a disabled flag.
Accounts live in Redis under the site's keys (`staff:{number}`, indexed in
`staff-numbers`); the PIN itself is never stored, logged or shown. Signing in and the
sessions that follow are `bonusd.access.sessions`.

Names and numbers are checked here, for every way in (the CLI, the desk, the API): a name
with a control or text-direction character would read differently on the desk, in the
audit trail and in a terminal than it was typed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import WatchError

from bonusd.access.auth import Role
from bonusd.access.pins import hash_pin, valid_pin
from bonusd.errors import BonusdError, ConflictError, NotFoundError
from bonusd.infra.keys import Keys

STAFF_NUMBER_PATTERN = r"^[0-9A-Za-z]{1,16}$"
STAFF_PIN_PATTERN = r"^[0-9]{6,8}$"
STAFF_ROLES = (Role.CREW, Role.DESK, Role.ADMIN)
NAME_MAX = 80
_NUMBER = re.compile(STAFF_NUMBER_PATTERN)
_PIN = re.compile(STAFF_PIN_PATTERN)


class StaffError(BonusdError):
    """A staff number, name, role or PIN that does not follow the rules (the PIN itself is
    never repeated)."""


def check_number(number: str) -> str:
    """`number` if it is a staff number (1 to 16 of A-Z, a-z, 0-9), else `StaffError`."""
    if not _NUMBER.fullmatch(number):
        raise StaffError(
            f"a staff number is 1 to 16 letters or digits (A-Z, a-z, 0-9), as the badge "
            f"reader types it; got {number[:20]!r}"
        )
    return number


def check_name(name: str) -> str:
    """`name` without surrounding spaces, if it is printable and 1 to 80 characters."""
    name = name.strip()
    if not name or len(name) > NAME_MAX or not name.isprintable():
        raise StaffError(
            f"a staff member's name is 1 to {NAME_MAX} characters without control or "
            f"text-direction characters; got {name[:NAME_MAX]!r}"
        )
    return name


def check_role(role: str | Role) -> Role:
    """The role of a staff account: crew, desk or admin (machines hold the other roles)."""
    if role not in {r.value for r in STAFF_ROLES}:
        raise StaffError(
            f"a staff member is crew, desk or admin, got {str(role)[:20]!r} (screens, "
            "kiosks and the app hold tokens: `bonusd tokens issue`)"
        )
    return Role(role)


def check_pin(pin: str) -> str:
    """`pin` if it is a staff PIN (6 to 8 digits); the error never repeats it."""
    if not (_PIN.fullmatch(pin) and valid_pin(pin)):
        raise StaffError("a staff PIN is 6 to 8 digits (0-9), nothing else")
    return pin


@dataclass(frozen=True, slots=True)
class StaffMember:
    """One account, as listed (the PIN's hash stays in the store)."""

    number: str
    name: str
    role: Role
    disabled: bool
    created: str  # ISO times on the daemon's clock
    changed: str

    @property
    def label(self) -> str:
        """How the audit trail, the desk and the logs of actions name this person."""
        return f"{self.name} (staff {self.number})"


def _member(raw: Mapping[str, str]) -> StaffMember:
    return StaffMember(
        raw["number"],
        raw["name"],
        Role(raw["role"]),
        raw.get("disabled") == "1",
        raw.get("created", ""),
        raw.get("changed", ""),
    )


class StaffStore:
    """The staff accounts of one site."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys

    async def add(
        self, *, number: str, name: str, role: str | Role, pin: str, now: dt.datetime
    ) -> StaffMember:
        """A new account; `ConflictError` if the number is taken (nothing is changed)."""
        number, name, role = check_number(number), check_name(name), check_role(role)
        pin_hash = await asyncio.to_thread(hash_pin, check_pin(pin))  # ~35 ms of CPU
        key = self._keys.staff(number)
        record = {
            "number": number,
            "name": name,
            "role": role.value,
            "pin_hash": pin_hash,
            "disabled": "0",
            "created": now.isoformat(),
            "changed": now.isoformat(),
        }
        async with self._redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(key)
                if await pipe.exists(key):
                    raise ConflictError(f"staff number {number} is taken; pick another")
                pipe.multi()  # type: ignore[no-untyped-call]
                pipe.hset(key, mapping=cast(Mapping[Any, Any], record))
                pipe.sadd(self._keys.staff_numbers, number)
                await pipe.execute()
            except WatchError:
                raise ConflictError(f"staff number {number} is taken; pick another") from None
        return _member(record)

    async def get(self, number: str) -> StaffMember | None:
        """The account of `number`, or None (also for a number that is not one)."""
        raw = await self._raw(number)
        return _member(raw) if raw else None

    async def pin_hash(self, number: str) -> str:
        """The PIN hash of `number` ("" when there is no such account)."""
        if not _NUMBER.fullmatch(number):
            return ""
        value = await self._redis.hget(self._keys.staff(number), "pin_hash")
        return cast(str | None, value) or ""

    async def _raw(self, number: str) -> dict[str, str]:
        if not _NUMBER.fullmatch(number):
            return {}
        return cast(dict[str, str], await self._redis.hgetall(self._keys.staff(number)))

    async def require(self, number: str) -> StaffMember:
        member = await self.get(number)
        if member is None:
            raise NotFoundError(f"no staff member with number {number[:20]!r}")
        return member

    async def list(self) -> list[StaffMember]:
        """Every account, by staff number."""
        numbers = sorted(cast(set[str], await self._redis.smembers(self._keys.staff_numbers)))
        if not numbers:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for number in numbers:
                pipe.hgetall(self._keys.staff(number))
            rows = cast(list[dict[str, str]], await pipe.execute())
        return [_member(raw) for raw in rows if raw]

    async def set_disabled(self, number: str, disabled: bool, now: dt.datetime) -> StaffMember:
        """Disable or enable an account (its sessions are ended by the caller)."""
        await self.require(number)
        flag = "1" if disabled else "0"
        mapping = {"disabled": flag, "changed": now.isoformat()}
        await self._redis.hset(self._keys.staff(number), mapping=cast(Mapping[Any, Any], mapping))
        return await self.require(number)

    async def set_pin(self, number: str, pin: str, now: dt.datetime) -> StaffMember:
        """A new PIN for an account (its sessions are ended by the caller)."""
        await self.require(number)
        pin_hash = await asyncio.to_thread(hash_pin, check_pin(pin))
        mapping = {"pin_hash": pin_hash, "changed": now.isoformat()}
        await self._redis.hset(self._keys.staff(number), mapping=cast(Mapping[Any, Any], mapping))
        return await self.require(number)
