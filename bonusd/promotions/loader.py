"""Reading promotion files: TOML in, a checked `Promotion` out, or every problem at once.

A file is refused as a whole: `PromotionFileError` lists each problem with the file, the
path inside it and what is wrong, e.g.
`golden-horse.toml: draws.halfway.qualification.threshold: must be > 0, got -5`.
Structural problems (types, limits, unknown keys) come from the schema; once those are
fixed, the cross-field rules of `checks.py` run.
"""

from __future__ import annotations

import difflib
import tomllib
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from bonusd.promotions.checks import check_marked_paths, check_promotion, path_of
from bonusd.promotions.errors import PromotionFileError, PromotionProblem
from bonusd.promotions.logofile import logo_problem
from bonusd.promotions.schema import Promotion


def parse_promotion(text: str, *, source: str) -> Promotion:
    """Parse and check the text of a promotion file; `source` names it in errors."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PromotionFileError(
            source, [PromotionProblem(source, "(file)", f"not valid TOML: {exc}")]
        ) from exc
    try:
        promotion = Promotion.model_validate(raw)
    except ValidationError as exc:
        problems = [PromotionProblem(source, *_explain(err)) for err in exc.errors()]
        raise PromotionFileError(source, problems) from None
    found = check_promotion(promotion) + check_marked_paths(raw, promotion)
    if found:
        raise PromotionFileError(source, [PromotionProblem(source, *p) for p in found])
    return promotion


def load_promotion(path: Path) -> Promotion:
    """Read and check one promotion file, and the logo file it names beside it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem = PromotionProblem(path.name, "(file)", f"cannot read it: {exc}")
        raise PromotionFileError(path.name, [problem]) from exc
    promotion = parse_promotion(text, source=path.name)
    logo = logo_problem(path.parent, promotion.signage.logo)
    if logo is not None:
        raise PromotionFileError(path.name, [PromotionProblem(path.name, "signage.logo", logo)])
    return promotion


def load_promotions(folder: Path) -> tuple[Promotion, ...]:
    """Every `*.toml` in `folder`, checked together: all problems of all files, and no
    promotion id used twice."""
    problems: list[PromotionProblem] = []
    loaded: dict[str, tuple[str, Promotion]] = {}
    for path in sorted(folder.glob("*.toml")):
        try:
            promotion = load_promotion(path)
        except PromotionFileError as exc:
            problems.extend(exc.problems)
            continue
        if promotion.id in loaded:
            problem = f"{promotion.id!r} is also the id in {loaded[promotion.id][0]}"
            problems.append(PromotionProblem(path.name, "id", problem))
            continue
        loaded[promotion.id] = (path.name, promotion)
    if problems:
        raise PromotionFileError(str(folder), problems)
    return tuple(p for _, p in loaded.values())


def _explain(err: ErrorDetails) -> tuple[str, str]:
    """A pydantic error as (path in the file, what is wrong in an operator's words)."""
    loc = list(err["loc"])
    kind = err["type"]
    ctx: dict[str, Any] = dict(err.get("ctx") or {})
    got = _show(err["input"])
    key_error = bool(loc) and loc[-1] == "[key]"
    if key_error:
        loc.pop()
    path = path_of(loc)
    limits = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind in limits:
        bound = next(iter(ctx.values()))
        return path, f"must be {limits[kind]} {bound}, got {got}"
    if kind == "missing":
        return path, "is required"
    if kind == "extra_forbidden":
        return path, _unknown_key(loc)
    if kind in ("enum", "literal_error"):
        return path, f"must be {ctx.get('expected', 'one of the allowed values')}, got {got}"
    if kind == "string_pattern_mismatch":
        what = "key" if key_error else "value"
        return path, f"{what} must match {ctx['pattern']}, got {got}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return path, f"must be a whole number, got {got}"
    if kind in ("too_short", "too_long"):
        return path, err["msg"].replace("List should", "must").replace("Value should", "must")
    if kind == "value_error":  # our own validators: the message already says it all
        return path, err["msg"].removeprefix("Value error, ")
    message = err["msg"].replace("Input should be", "must be")
    return path, f"{message[0].lower()}{message[1:]}, got {got}"


def _show(value: object) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _unknown_key(loc: Sequence[str | int]) -> str:
    allowed = _fields_at(loc[:-1])
    name = str(loc[-1])
    hint = difflib.get_close_matches(name, allowed, n=1)
    if hint:
        return f"unknown key (did you mean {hint[0]!r}?)"
    return f"unknown key (allowed: {', '.join(allowed)})" if allowed else "unknown key"


def _fields_at(loc: Sequence[str | int]) -> list[str]:
    """The keys the schema allows at `loc`, found by walking the model annotations."""
    current: Any = Promotion
    for part in [*loc, None]:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            if part is None:
                return list(current.model_fields)
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
        elif typing.get_origin(current) in (list, dict) and part is not None:
            current = typing.get_args(current)[-1]
        else:
            return []
    return []


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> `X`; `Annotated[X, ...]` -> `X`."""
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return members[0] if len(members) == 1 else annotation
    return annotation
