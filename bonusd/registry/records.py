"""Member and device registries: the records a casino imports, and their file formats.

Imports are all-or-nothing: every row is checked, every error is reported with its row
and field, and nothing is written unless the whole file is valid. Text fields refuse
control characters and the bidi overrides that reverse a name on a screen.

A file is checked as a stream (CSV through the csv module, JSON through ijson's iterative
parser, so no nesting depth can exhaust a stack) and its valid records are kept packed,
one short string each, to be written in batches (`CheckedFile.batches`): a 45 MB file
needs about its own size again, not ten times it.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import re
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import ijson
import msgspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bonusd.errors import ImportFileError, ImportRowError

AREA_PATTERN = r"^[a-z0-9_-]{1,32}$"  # an area of the floor: also a signage token's area
# C0 and C1 controls (newline, ESC, BEL, ...), line and paragraph separators, the bidi
# embeddings, overrides and isolates (a U+202E shows "Anna" as "annA"), lone surrogates
_UNSAFE_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def plain_text(value: str) -> str:
    """`value` unchanged, or `ValueError` naming the first control or direction character."""
    bad = _UNSAFE_TEXT.search(value)
    if bad is not None:
        raise ValueError(
            f"contains the control or text-direction character U+{ord(bad.group()):04X} "
            f"at position {bad.start() + 1}; remove it (names are shown on screens as they are)"
        )
    return value


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
MAX_PROBLEMS = 1_000  # a file this wrong is the wrong file: checking stops here
_SEP = "\x1f"  # between a packed record's fields (refused in every text field above)
_SPACE = re.compile(rb"[ \t\r\n]*")
_BOM = b"\xef\xbb\xbf"
_BYTE = re.compile(r"\(byte (\d+)\)")


def _unpack_member(packed: str) -> Member:
    return Member.from_redis(dict(zip(MEMBER_COLUMNS, packed.split(_SEP), strict=True)))


def _unpack_device(packed: str) -> Device:
    device, kind, area, bank, position = packed.split(_SEP)
    kind_ = DeviceKind(kind)
    return Device.model_construct(
        device=device, kind=kind_, area=area, bank=bank, position=position
    )


_UNPACK: dict[type[BaseModel], Callable[[str], Any]] = {
    Member: _unpack_member,
    Device: _unpack_device,
}


@dataclass(frozen=True, slots=True)
class CheckedFile(Generic[Record]):
    """Every row of an import file, checked and valid, each packed into one string."""

    model: type[Record]
    packed: list[str]

    def __len__(self) -> int:
        return len(self.packed)

    def batches(self, size: int) -> Iterator[list[Record]]:
        """The records, `size` at a time, in file order."""
        unpack = _UNPACK[self.model]
        for start in range(0, len(self.packed), size):
            yield [unpack(p) for p in self.packed[start : start + size]]

    def records(self) -> list[Record]:
        return [r for batch in self.batches(len(self.packed) or 1) for r in batch]


def check_file(
    model: type[Record],
    stream: IO[bytes],
    *,
    source: str,
    progress: Callable[[int], None] | None = None,
) -> CheckedFile[Record]:
    """Check every row of a CSV or JSON (array of objects) file, read from `stream` (a
    seekable binary file) and judged by its first non-blank byte; raise `ImportFileError`
    listing every problem (up to MAX_PROBLEMS) by row and field, or return the valid
    records. `progress` is told how many rows were checked, every 1,000. Plain Python over
    a stream, seconds for a large file: run it off the event loop."""
    start = len(_BOM) if stream.read(len(_BOM)) == _BOM else 0
    stream.seek(start)
    skipped, first = 0, b""
    while chunk := stream.read(64 * 1024):  # blank lines before the header (or the "[")
        blank = _SPACE.match(chunk)
        end = blank.end() if blank else 0
        skipped += chunk.count(b"\n", 0, end)
        if end < len(chunk):
            stream.seek(stream.tell() - len(chunk) + end)
            first = chunk[end : end + 1]
            break
    if first in (b"[", b"{"):
        rows = _json_rows(stream, source)
    else:
        rows = _csv_rows(model, stream, skipped, source)
    key = "card" if model is Member else "device"
    packed: list[str] = []
    errors: list[ImportRowError] = []
    seen: dict[str, int] = {}
    checked = 0
    try:
        for number, row, problems in rows:
            checked += 1
            if progress is not None and checked % 1_000 == 0:
                progress(1_000)
            if len(errors) >= MAX_PROBLEMS:
                stop = f"checking stopped after {MAX_PROBLEMS} problems; fix these first"
                errors.append(ImportRowError(source, number, "(file)", stop))
                break
            errors += [ImportRowError(source, number, f, p) for f, p in problems]
            if problems:
                continue
            try:
                record = model.model_validate(_booleans(row))
            except ValidationError as exc:
                for err in exc.errors():
                    field = ".".join(str(p) for p in err["loc"]) or "(row)"
                    errors.append(ImportRowError(source, number, field, err["msg"]))
                continue
            ident = getattr(record, key)
            if ident in seen:
                problem = f"{ident!r} repeats row {seen[ident]}"
                errors.append(ImportRowError(source, number, key, problem))
                continue
            seen[ident] = number
            packed.append(_SEP.join(record.to_redis().values()))
    except ImportFileError as exc:  # the rest of the file cannot be read
        errors += exc.errors
    finally:
        rows.close()  # also when checking stopped early: the reader lets go of the stream
    if progress is not None:
        progress(checked % 1_000)
    if errors:
        raise ImportFileError(source, errors)
    return CheckedFile(model, packed)


Row = tuple[int, dict[str | None, Any], list[tuple[str, str]]]  # number, fields, problems


def _csv_rows(
    model: type[BaseModel], stream: IO[bytes], skipped: int, source: str
) -> Generator[Row, None, None]:
    # newline="": the csv module reads \r, \n and \r\n line ends itself (a lone \r raised)
    text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
    reader = csv.DictReader(text)
    try:
        columns = set(reader.fieldnames or ())
        required = {n for n, f in model.model_fields.items() if f.is_required()}
        missing = required - columns
        if missing:
            problem = f"missing column(s): {', '.join(sorted(missing))}"
            raise ImportFileError(
                source, [ImportRowError(source, skipped + 1, "(header)", problem)]
            )
        for number, row in enumerate(reader, start=skipped + 2):
            yield number, {k: v for k, v in row.items() if v != "" or k in required}, []
    except (csv.Error, UnicodeDecodeError) as exc:  # a field over the csv module's limit
        line = skipped + reader.line_num + 1  # the line being read when it failed
        what = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "not valid CSV"
        raise ImportFileError(
            source, [ImportRowError(source, line, "(file)", f"{what}: {exc}")]
        ) from exc
    finally:  # the stream is the caller's to close: a wrapper left to the collector would
        text.detach()  # close it again then, and warn about a file it never opened


def _json_rows(stream: IO[bytes], source: str) -> Generator[Row, None, None]:
    """Rows of a JSON array of objects of plain values, from parser events: a nested value
    is a problem of its row and field, skipped however deep it goes."""
    number, depth, key = 0, 0, "(row)"
    row: dict[str | None, Any] = {}
    problems: list[tuple[str, str]] = []
    not_array = "JSON must be an array of objects"
    try:
        for event, value in ijson.basic_parse(stream, use_float=True):
            opens = event in ("start_map", "start_array")
            if depth > 2 or (depth == 2 and opens):  # inside a value that should be plain
                if depth == 2:
                    kind = "an object" if event == "start_map" else "a list"
                    problems.append(
                        (key, f"must be text, a number, true, false or null, not {kind}")
                    )
                depth += 1 if opens else (-1 if event in ("end_map", "end_array") else 0)
            elif depth == 0:
                if event != "start_array":
                    raise ImportFileError(source, [ImportRowError(source, 1, "(file)", not_array)])
                depth = 1
            elif depth == 1:
                if event == "end_array":
                    depth = 0
                elif event != "start_map":
                    what = f"{not_array}; element {number + 1} is not an object"
                    raise ImportFileError(source, [ImportRowError(source, 1, "(file)", what)])
                else:
                    number, depth, row, problems = number + 1, 2, {}, []
            elif event == "map_key":
                key = str(value)
            elif event == "end_map":
                depth = 1
                yield number, row, problems
            else:
                row[key] = value
    except ijson.JSONError as exc:
        raise ImportFileError(source, [_json_error(exc, stream, number, source)]) from exc


def _json_error(
    exc: ijson.JSONError, stream: IO[bytes], number: int, source: str
) -> ImportRowError:
    """Where the JSON stopped making sense: its line, as the stricter msgspec decoder
    names the byte (only on this error path is the file read whole; were something nested
    deep before the error, msgspec gives up with RecursionError and the row is named)."""
    problem = f"not valid JSON: {str(exc).splitlines()[0] if str(exc) else 'cut short'}"
    stream.seek(0)
    data = stream.read()
    data = data[len(_BOM) :] if data.startswith(_BOM) else data
    try:
        msgspec.json.decode(data, type=list[msgspec.Raw])
    except msgspec.DecodeError as decode_error:
        at = _BYTE.search(str(decode_error))
        offset = int(at.group(1)) if at else len(data)
        return ImportRowError(source, data.count(b"\n", 0, offset) + 1, "(file)", problem)
    except (msgspec.ValidationError, RecursionError):
        pass
    return ImportRowError(source, max(number, 1), "(row)", problem)


def _booleans(row: Mapping[str | None, Any]) -> dict[str, Any]:
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
    with path.open("rb") as stream:
        return check_file(model, stream, source=path.name).records()


def parse_text(model: type[Record], text: str, *, source: str) -> list[Record]:
    """Parse CSV or JSON text, judged by its first non-blank character."""
    data = text.encode("utf-8", "surrogatepass")  # a lone surrogate is then not UTF-8
    return check_file(model, io.BytesIO(data), source=source).records()
