"""Member and device registries: the records a casino imports (`Member`, `Device`), their
fields and the checks on each. Text fields refuse control characters and the bidi
overrides that reverse a name on a screen (`bonusd.registry.text`). Reading whole files
is `bonusd.registry.files`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import TypeVar

from argon2 import Type, extract_parameters
from argon2.exceptions import InvalidHashError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bonusd.registry.text import plain_text

AREA_PATTERN = r"^[a-z0-9_-]{1,32}$"  # an area of the floor: also a signage token's area
CARD_PATTERN = r"^[A-Za-z0-9-]{1,32}$"  # a member card number, wherever one is taken

# A member's kiosk PIN is kept only as an argon2id hash in PHC form (`bonusd.access.pins`
# makes and checks them): "$argon2id$v=19$m=24576,t=3,p=1$<salt>$<hash>". The costs are
# bounded because checking a PIN spends what the hash names: a file with m=4 GiB must not
# make every kiosk visit allocate 4 GiB.
_PIN_HASH_SHAPE = re.compile(
    r"\$argon2id\$v=19\$m=[0-9]{1,7},t=[0-9]{1,3},p=[0-9]{1,3}\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+"
)
_PIN_HASH_MAX_LEN = 256
_PIN_HASH_MAX_MEMORY_KIB = 256 * 1024
_PIN_HASH_MAX_TIME = 16
_PIN_HASH_MAX_LANES = 8


class Tier(StrEnum):
    """Tsogo Rewards tiers, lowest first."""

    TEN = "10"
    J = "J"
    Q = "Q"
    K = "K"
    A = "A"


class Member(BaseModel):
    """A loyalty member as the casino management system hands it over."""

    # a validation error never quotes what it refused: personal data, or a PIN hash
    model_config = ConfigDict(
        frozen=True, extra="forbid", str_strip_whitespace=True, hide_input_in_errors=True
    )

    card: str = Field(pattern=CARD_PATTERN)
    name: str = Field(min_length=1, max_length=120)
    tier: Tier
    app_user: bool = False
    date_of_birth: dt.date | None = None
    sms_opt_in: bool = False
    excluded: bool = False
    exclusion_reason: str = Field(default="", max_length=200)
    last_visit: dt.date | None = None
    # for SMS to winners who opted in (docs/notices.md): international format, +27821234567
    mobile: str | None = None
    # the kiosk PIN's argon2id hash (`bonusd members hash-pin`), None: no PIN. A secret:
    # left out of every dump, JSON answer and repr (the kiosk reads it from Redis).
    pin_hash: str | None = Field(default=None, exclude=True, repr=False)

    @field_validator("date_of_birth", "last_visit", "mobile", "pin_hash", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("name", "exclusion_reason")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain_text(value)

    @field_validator("mobile")
    @classmethod
    def _international(cls, value: str | None) -> str | None:
        """Spaces, dashes, dots and brackets are dropped; what is left must be `+` and the
        country code and number (E.164), so an SMS provider can deliver it anywhere."""
        if value is None:
            return None
        number = re.sub(r"[\s().-]", "", value)
        if not re.fullmatch(r"\+[1-9][0-9]{7,14}", number):
            raise ValueError(
                f"{value!r} is not a mobile number in international format: write it with "
                "+ and the country code, e.g. +27821234567 (not 0821234567)"
            )
        return number

    @field_validator("pin_hash")
    @classmethod
    def _pin_hash(cls, value: str | None) -> str | None:
        # the value is never echoed: a hash of a 4-digit PIN is as good as the PIN
        if value is not None and not valid_pin_hash(value):
            raise ValueError(
                "not a PIN hash: write the argon2id hash `bonusd members hash-pin` prints "
                "(starting $argon2id$; in a CSV file quote it, it holds commas), or leave "
                "the field blank for no PIN"
            )
        return value

    def age_on(self, day: dt.date) -> int | None:
        """Age in whole years on `day`, or None when the date of birth is unknown."""
        if self.date_of_birth is None:
            return None
        born = self.date_of_birth
        return day.year - born.year - ((day.month, day.day) < (born.month, born.day))

    def to_redis(self) -> dict[str, str]:
        return {
            "card": self.card,
            "name": self.name,
            "tier": self.tier.value,
            "app_user": _flag(self.app_user),
            "date_of_birth": self.date_of_birth.isoformat() if self.date_of_birth else "",
            "sms_opt_in": _flag(self.sms_opt_in),
            "excluded": _flag(self.excluded),
            "exclusion_reason": self.exclusion_reason,
            "last_visit": self.last_visit.isoformat() if self.last_visit else "",
            "mobile": self.mobile or "",
            "pin_hash": self.pin_hash or "",
        }

    def to_index(self) -> str:
        """The fields the rules read, in one short string (the site's member index)."""
        return "|".join(
            (
                self.tier.value,
                _flag(self.app_user),
                _flag(self.excluded),
                self.date_of_birth.isoformat() if self.date_of_birth else "",
                self.last_visit.isoformat() if self.last_visit else "",
            )
        )

    @classmethod
    def from_index(cls, card: str, text: str) -> Member:
        """A member as the rules see it, from `to_index` (the name is not carried)."""
        tier, app, excluded, dob, last = text.split("|")
        values = {
            "card": card,
            "name": "",
            "tier": _TIERS[tier],
            "app_user": app == "1",
            "date_of_birth": _date(dob),
            "sms_opt_in": False,
            "excluded": excluded == "1",
            "exclusion_reason": "",
            "last_visit": _date(last),
            "mobile": None,
            "pin_hash": None,
        }
        # model_construct without its per-field loop: bulk recomputes build 200,000 of
        # these, and the loop costs more than the rules themselves. Same result (tested).
        member = cls.__new__(cls)
        object.__setattr__(member, "__dict__", values)
        object.__setattr__(member, "__pydantic_fields_set__", _ALL_FIELDS)
        object.__setattr__(member, "__pydantic_extra__", None)
        object.__setattr__(member, "__pydantic_private__", None)
        return member

    @classmethod
    def from_redis(cls, raw: Mapping[str, str]) -> Member:
        """A member as stored by `to_redis` (validated on import, so trusted here: built
        without re-validation, which costs five times as much)."""
        dob, last = raw.get("date_of_birth", ""), raw.get("last_visit", "")
        return cls.model_construct(
            card=raw["card"],
            name=raw.get("name", ""),
            tier=Tier(raw["tier"]),
            app_user=raw.get("app_user") == "1",
            date_of_birth=dt.date.fromisoformat(dob) if dob else None,
            sms_opt_in=raw.get("sms_opt_in") == "1",
            excluded=raw.get("excluded") == "1",
            exclusion_reason=raw.get("exclusion_reason", ""),
            last_visit=dt.date.fromisoformat(last) if last else None,
            mobile=raw.get("mobile") or None,
            pin_hash=raw.get("pin_hash") or None,
        )


def valid_pin_hash(text: str) -> bool:
    """Whether `text` is an argon2id hash (PHC form, version 19) that a kiosk can check at
    a bounded cost; never raises."""
    if len(text) > _PIN_HASH_MAX_LEN or not _PIN_HASH_SHAPE.fullmatch(text):
        return False
    try:
        params = extract_parameters(text)
    except InvalidHashError:
        return False
    return (
        params.type is Type.ID
        and 8 * params.parallelism <= params.memory_cost <= _PIN_HASH_MAX_MEMORY_KIB
        and 1 <= params.time_cost <= _PIN_HASH_MAX_TIME
        and 1 <= params.parallelism <= _PIN_HASH_MAX_LANES
        and params.salt_len >= 8
        and params.hash_len >= 16
    )


_TIERS = {t.value: t for t in Tier}
_ALL_FIELDS = frozenset(Member.model_fields)


def _date(text: str) -> dt.date | None:
    # (not cached: parsing is faster than a cache hit, and a cache of every birth date a
    # daemon met held up to 5 MB for good, about 110 bytes a date)
    return dt.date.fromisoformat(text) if text else None


class DeviceKind(StrEnum):
    EGM = "egm"
    TABLE = "table"


class Device(BaseModel):
    """An EGM or a gaming table and where the crew finds it."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    device: str = Field(pattern=r"^[^/#+\s]{1,64}$")
    kind: DeviceKind
    area: str = Field(pattern=AREA_PATTERN)
    bank: str = Field(default="", max_length=32)
    position: str = Field(default="", max_length=32)

    @field_validator("device", "bank", "position")
    @classmethod
    def _plain(cls, value: str) -> str:
        return plain_text(value)

    def to_redis(self) -> dict[str, str]:
        return {
            "device": self.device,
            "kind": self.kind.value,
            "area": self.area,
            "bank": self.bank,
            "position": self.position,
        }


def _flag(value: bool) -> str:
    return "1" if value else "0"


MEMBER_COLUMNS = tuple(Member.model_fields)
DEVICE_COLUMNS = tuple(Device.model_fields)
Record = TypeVar("Record", Member, Device)
