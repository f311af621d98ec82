"""Registry files: a member or device file (CSV or JSON) checked as a stream, every
problem reported with its row and field, and its valid records kept packed.

Imports are all-or-nothing: every row is checked, and nothing is written unless the
whole file is valid. A file is read through the csv module or ijson's iterative parser,
so no nesting depth can exhaust a stack, and each valid record is kept as one short
string, to be written in batches (`CheckedFile.batches`): a 45 MB file needs about its
own size again, not ten times it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic

import ijson
import msgspec
from pydantic import BaseModel, ValidationError

from bonusd.errors import ImportFileError, ImportRowError
from bonusd.registry.records import (
    MEMBER_COLUMNS,
    Device,
    DeviceKind,
    Member,
    Record,
)

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
