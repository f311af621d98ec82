"""Member and device registries: the records a casino imports, and their file formats.

Imports are all-or-nothing: every row is checked, every error is reported with its row
and field, and nothing is written unless the whole file is valid.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import json
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bonusd.errors import ImportFileError, ImportRowError


class Tier(StrEnum):
    """Tsogo Rewards tiers, lowest first."""

    TEN = "10"
    J = "J"
    Q = "Q"
    K = "K"
    A = "A"


class Member(BaseModel):
    """A loyalty member as the casino management system hands it over."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    card: str = Field(pattern=r"^[A-Za-z0-9-]{1,32}$")
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

    @field_validator("date_of_birth", "last_visit", "mobile", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if value == "" else value

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
        )


_TIERS = {t.value: t for t in Tier}
_ALL_FIELDS = frozenset(Member.model_fields)


@functools.lru_cache(maxsize=50_000)
def _date(text: str) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


class DeviceKind(StrEnum):
    EGM = "egm"
    TABLE = "table"


class Device(BaseModel):
    """An EGM or a gaming table and where the crew finds it."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    device: str = Field(pattern=r"^[^/#+\s]{1,64}$")
    kind: DeviceKind
    area: str = Field(pattern=r"^[a-z0-9_-]{1,32}$")
    bank: str = Field(default="", max_length=32)
    position: str = Field(default="", max_length=32)

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


def parse_records(
    model: type[Record], rows: Iterable[Mapping[str, Any]], *, source: str, first_row: int = 1
) -> list[Record]:
    """Validate every row; raise `ImportFileError` listing all bad rows, or return records."""
    records: list[Record] = []
    errors: list[ImportRowError] = []
    seen: dict[str, int] = {}
    key = "card" if model is Member else "device"
    for number, row in enumerate(rows, start=first_row):
        try:
            record = model.model_validate(_booleans(row))
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(p) for p in err["loc"]) or "(row)"
                errors.append(ImportRowError(source, number, field, err["msg"]))
            continue
        ident = getattr(record, key)
        if ident in seen:
            errors.append(
                ImportRowError(source, number, key, f"{ident!r} repeats row {seen[ident]}")
            )
            continue
        seen[ident] = number
        records.append(record)
    if errors:
        raise ImportFileError(source, errors)
    return records


def _booleans(row: Mapping[str, Any]) -> dict[str, Any]:
    """CSV carries booleans as text; accept the spellings casino exports use."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        if name is None:
            out["(extra columns)"] = value
            continue
        if isinstance(value, str) and value.strip().lower() in _TRUTH:
            out[name] = _TRUTH[value.strip().lower()]
        else:
            out[name] = value
    return out


_TRUTH = {"true": True, "yes": True, "y": True, "false": False, "no": False, "n": False}


def read_file(model: type[Record], path: Path) -> list[Record]:
    """Read a CSV or JSON (array of objects) file of members or devices."""
    return parse_text(model, path.read_text(encoding="utf-8-sig"), source=path.name)


def parse_text(model: type[Record], text: str, *, source: str) -> list[Record]:
    """Parse CSV or JSON text, judged by its first non-blank character."""
    stripped = text.lstrip()
    skipped = text[: len(text) - len(stripped)].count("\n")  # so rows are the file's lines
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            problem = f"not valid JSON: {exc.msg}"
            row = ImportRowError(source, skipped + exc.lineno, "(file)", problem)
            raise ImportFileError(source, [row]) from exc
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise ImportFileError(
                source, [ImportRowError(source, 1, "(file)", "JSON must be an array of objects")]
            )
        return parse_records(model, data, source=source)
    # newline="": the csv module reads \r, \n and \r\n line ends itself (a lone \r raised)
    reader = csv.DictReader(io.StringIO(stripped, newline=""))
    try:
        columns = set(reader.fieldnames or ())
        required = {n for n, f in model.model_fields.items() if f.is_required()}
        missing = required - columns
        if missing:
            problem = f"missing column(s): {', '.join(sorted(missing))}"
            header = ImportRowError(source, skipped + 1, "(header)", problem)
            raise ImportFileError(source, [header])
        rows = ({k: v for k, v in row.items() if v != "" or k in required} for row in reader)
        return parse_records(model, rows, source=source, first_row=skipped + 2)
    except csv.Error as exc:  # e.g. a field longer than the csv module's limit
        line = skipped + reader.line_num + 1  # the line being read when it failed
        error = ImportRowError(source, line, "(file)", f"not valid CSV: {exc}")
        raise ImportFileError(source, [error]) from exc
