"""Rule changes for one run, applied to a promotion file as read from TOML (pure).

A rehearsal compares two versions of a promotion: `--set PATH=VALUE` changes one setting
of the file, before it is checked, e.g.

    draws.halfway.qualification.threshold=15000
    draw_series.saturday.caps."J|10"=150
    multipliers[2].factor=2
    prize_sets.reveal.values_cents=[500000, 250000, 100000, 100000, 50000]

PATH uses the file's own notation (docs/promotions.md: dotted keys, list items counted
from 1, keys that are not bare words quoted). VALUE is a TOML value; anything that is not
one is taken as text (`times.first=14:30`). Every part of the path must name a key the
format knows: an unknown key, draw or list item is refused with what there is instead,
and the changed file is then checked exactly like a file on disk.

`restrict_to_dates` leaves out the draws and jackpot sessions dated before a rehearsal's
first day (the daemon would otherwise run them late), and `to_toml` writes the result
back as a promotion file.
"""

from __future__ import annotations

import copy
import datetime as dt
import difflib
import re
import tomllib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from bonusd.promotions.checks import path_of
from bonusd.promotions.errors import PromotionFileError, PromotionProblem
from bonusd.promotions.schema import Promotion

Raw = dict[str, Any]
Part = str | int  # a key, or a list index counted from 0
_PART = re.compile(r'"([^"]*)"|([A-Za-z0-9_-]+)|\[(\d+)\]|(\.)')
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def parse_path(text: str) -> list[Part]:
    """`draws.halfway.rounds[2].winners` -> `["draws", "halfway", "rounds", 1, "winners"]`;
    ValueError saying what is wrong."""
    parts: list[Part] = []
    at, expect_key = 0, True
    while at < len(text):
        match = _PART.match(text, at)
        if match is None:
            raise ValueError(f"cannot read {text!r} at {text[at:]!r}")
        quoted, bare, index, dot = match.groups()
        if dot is not None:
            if expect_key:
                raise ValueError(f"{text!r}: a key is missing before a dot")
            expect_key = True
        elif index is not None:
            if expect_key or int(index) < 1:
                raise ValueError(f"{text!r}: list items are counted from 1, after a key")
            parts.append(int(index) - 1)
        else:
            if not expect_key:
                raise ValueError(f"{text!r}: keys are separated by dots")
            parts.append(quoted if quoted is not None else bare)
            expect_key = False
        at = match.end()
    if not parts or expect_key:
        raise ValueError(f"{text!r} is not a setting path, e.g. draws.halfway.tickets.per_visit")
    return parts


def parse_value(text: str) -> Any:
    """A TOML value (number, boolean, date, list, inline table, quoted text), else the text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(raw: Raw, assignments: Sequence[str], *, source: str) -> Raw:
    """A copy of `raw` with each `PATH=VALUE` applied in order; `PromotionFileError` (every
    problem at once) for a malformed assignment or a path the format does not know."""
    out = copy.deepcopy(raw)
    problems: list[PromotionProblem] = []
    for text in assignments:
        path_text, eq, value_text = text.partition("=")
        try:
            if not eq:
                raise ValueError(f"{text!r}: write PATH=VALUE, e.g. caps.Q=300")
            parts = parse_path(path_text.strip())
        except ValueError as exc:
            problems.append(PromotionProblem(source, "--set", str(exc)))
            continue
        try:
            _assign(out, parts, parse_value(value_text.strip()))
        except LookupError as exc:
            problems.append(PromotionProblem(source, path_of(parts), str(exc.args[0])))
    if problems:
        raise PromotionFileError(source, problems)
    return out


def _assign(raw: Raw, parts: list[Part], value: Any) -> None:
    node: Any = raw
    annotation: Any = Promotion
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        annotation = _unwrap(annotation)
        where = path_of(parts[:depth]) if depth else "the file"
        if isinstance(part, int):
            if typing.get_origin(annotation) is not list or not isinstance(node, list):
                raise LookupError(f"{where} is not a list")
            if part >= len(node):
                raise LookupError(f"{where} has {len(node)} item(s); there is no [{part + 1}]")
            annotation = typing.get_args(annotation)[0]
        elif not isinstance(node, dict):
            raise LookupError(f"{where} is a single value, not a table")
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = {name: f.annotation for name, f in annotation.model_fields.items()}
            if part not in fields:
                raise LookupError(_unknown(part, list(fields), where))
            annotation = fields[part]
        elif typing.get_origin(annotation) is dict:
            item = _unwrap(typing.get_args(annotation)[1])
            if part not in node and isinstance(item, type) and issubclass(item, BaseModel):
                known = ", ".join(node) or "none"
                raise LookupError(f"{where} has no {part!r} (there is: {known})")
            annotation = item
        else:
            raise LookupError(f"{where} is a single value, not a table")
        if last:
            node[part] = value
            return
        if isinstance(part, str) and part not in node:
            node[part] = {}  # a table the file leaves at its defaults, e.g. caps
        node = node[part]


def _unknown(part: str, allowed: list[str], where: str) -> str:
    hint = difflib.get_close_matches(part, allowed, n=1)
    if hint:
        return f"unknown key {part!r} in {where} (did you mean {hint[0]!r}?)"
    return f"unknown key {part!r} in {where} (allowed: {', '.join(allowed)})"


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> `X`; `Annotated[X, ...]` -> `X`."""
    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def restrict_to_dates(raw: Raw, first: dt.date) -> tuple[Raw, list[str]]:
    """Leave out the draws, series dates and jackpot sessions dated before `first`; return
    the changed copy and what was left out (as `path (date)` texts)."""
    out = copy.deepcopy(raw)
    left_out: list[str] = []
    removed: list[str] = []
    for draw_id, table in list(out.get("draws", {}).items()):
        if isinstance(table.get("date"), dt.date) and table["date"] < first:
            left_out.append(f"draws.{draw_id} ({table['date']})")
            removed.append(path_of(("draws", draw_id)))
            del out["draws"][draw_id]
    for key in ("draw_series", "jackpot_series"):
        for name, table in list(out.get(key, {}).items()):
            dates = table.get("dates", [])
            early = [d for d in dates if isinstance(d, dt.date) and d < first]
            if not early:
                continue
            left_out.append(f"{key}.{name} ({', '.join(str(d) for d in early)})")
            table["dates"] = [d for d in dates if d not in early]
            if not table["dates"]:
                removed.append(path_of((key, name)))
                del out[key][name]
    for key in ("defaulted", "unconfirmed"):
        if key in out:
            out[key] = [p for p in out[key] if not any(_under(p, r) for r in removed)]
    return out, left_out


def _under(path: str, table: str) -> bool:
    return path == table or path.startswith((f"{table}.", f"{table}["))


# -- writing TOML --------------------------------------------------------------------------


def to_toml(raw: Raw) -> str:
    """`raw` as TOML text that `tomllib` reads back to an equal value."""
    lines: list[str] = []
    _table(raw, [], lines)
    return "\n".join(lines).strip() + "\n"


def _table(table: Raw, head: list[str], lines: list[str]) -> None:
    nested = {k: v for k, v in table.items() if isinstance(v, dict)}
    arrays = {
        k: v
        for k, v in table.items()
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)
    }
    for key, value in table.items():
        if key not in nested and key not in arrays:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in nested.items():
        path = [*head, _key(key)]
        if not value or any(not isinstance(v, dict) for v in value.values()):
            lines += ["", f"[{'.'.join(path)}]"]
        _table(value, path, lines)
    for key, items in arrays.items():
        path = [*head, _key(key)]
        for item in items:
            lines += ["", f"[[{'.'.join(path)}]]"]
            _table(item, path, lines)


def _key(key: str) -> str:
    return key if _BARE.match(key) else _string(key)


def _string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if ord(c) >= 0x20 and c != "\x7f" else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, dt.date | dt.time):  # dates, times and date-times alike
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as TOML")
