"""Broken promotion files and member/device import files: every kind of error gives a
message that names the place — the file, the path inside it (promotion files) or the row
and field (imports) — and nothing is loaded or imported.

Promotion variants are made from the two seed files in promotions/: every value replaced
by one of a type nothing accepts there, an unknown key in every table, every required key
removed, cross-field mistakes, and TOML that does not parse. Import variants: every field
of a valid member and device file given each kind of bad value, in CSV and JSON, and the
structural mistakes (columns, repeats, blank lines, not an array).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import random
import re
import tomllib
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from bonusd.draws.book import DrawPlan
from bonusd.errors import ImportFileError
from bonusd.promotions import (
    MemberWindowStats,
    PromotionFileError,
    SideStats,
    load_promotion,
    load_promotions,
    parse_promotion,
    schedule,
    standing,
)
from bonusd.promotions.bulk import MemberArrays, StatArrays, bulk_standings
from bonusd.promotions.checks import path_of
from bonusd.promotions.render import render_markdown
from bonusd.promotions.schedule import jackpot_times
from bonusd.promotions.schema import Promotion
from bonusd.raps.plan import SessionPlan
from bonusd.registry.files import parse_text
from bonusd.registry.records import Device, Member, Tier
from tests.daemon_helpers import PROJECT, Daemon

SEEDS = {
    p.name: p
    for p in (
        PROJECT / "promotions" / "golden-horse-mega-points-chase.toml",
        PROJECT / "promotions" / "montecasino-festa-fortuna.toml",
    )
}
Path_ = tuple[str | int, ...]


# -- a TOML writer for the variants (every table inline; enough for the seeds' values) --


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dt.date | dt.time):  # datetime is a date too
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {value!r}")


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def to_toml(doc: dict[str, Any]) -> str:
    return "".join(f"{_key(k)} = {_toml(v)}\n" for k, v in doc.items())


def test_the_writer_round_trips_the_seeds() -> None:
    for path in SEEDS.values():
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        assert tomllib.loads(to_toml(doc)) == doc
        parse_promotion(to_toml(doc), source=path.name)


# -- the variants -----------------------------------------------------------------------


def _walk(node: object, at: Path_ = ()) -> Iterator[tuple[Path_, object]]:
    yield at, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*at, i))


def _get(doc: Any, at: Path_) -> Any:
    for part in at:
        doc = doc[part]
    return doc


def _model_at(at: Path_) -> type[BaseModel] | None:
    """The schema model of the table at `at` (None: not a model, e.g. a tier -> cap map)."""
    current: Any = Promotion
    for part in at:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
        elif typing.get_origin(current) in (list, dict):
            current = typing.get_args(current)[-1]
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(members[0]) if len(members) == 1 else annotation
    return annotation


NOT_ANYTHING = {"oops": [1, "two"]}  # a table holding a list: no setting takes this shape


def _variants() -> Iterator[tuple[str, str, str, str]]:
    """(seed file, variant name, its text, the path the message must name)."""
    for name, path in SEEDS.items():
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for at, node in _walk(doc):
            if not at:
                continue
            where = path_of(at)
            # every value, table and list replaced by a shape nothing accepts
            broken = _with(doc, at, NOT_ANYTHING)
            yield name, f"{where} not a valid shape", to_toml(broken), where
            if isinstance(node, dict):  # an unknown key in every table
                yield name, f"{where} unknown key", to_toml(_with(doc, (*at, "oops_key"), 1)), where
            model = _model_at(at[:-1])
            field = model.model_fields.get(str(at[-1])) if model else None
            if field is not None and field.is_required():  # every required key removed
                yield name, f"{where} removed", to_toml(_without(doc, at)), path_of(at)
        yield name, "unknown top-level key", to_toml({**doc, "promotoin_id": "x"}), "promotoin_id"


def _with(doc: dict[str, Any], at: Path_, value: object) -> dict[str, Any]:
    copy: dict[str, Any] = _copy(doc)
    parent = _get(copy, at[:-1])
    parent[at[-1]] = value
    return copy


def _without(doc: dict[str, Any], at: Path_) -> dict[str, Any]:
    copy: dict[str, Any] = _copy(doc)
    parent = _get(copy, at[:-1])
    del parent[at[-1]]
    return copy


def _copy(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _copy(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node


VARIANTS = list(_variants())


def _problems(text: str, source: str) -> list[tuple[str, str, str]]:
    with pytest.raises(PromotionFileError) as caught:
        parse_promotion(text, source=source)
    assert str(caught.value).startswith(f"{source}: ")
    out = []
    for p in caught.value.problems:
        assert str(p) == f"{p.file}: {p.path}: {p.problem}"
        assert p.file == source
        assert p.problem.strip()
        out.append((p.file, p.path, p.problem))
    return out


def _names(problem_path: str, where: str) -> bool:
    """The problem is at `where` or inside it (a key or item of it). A grouped key (caps
    `"J|10"`) is reported per tier, in the same table (`caps.J`, `caps.10`)."""
    if "|" in where.rpartition(".")[2]:
        where = where.rpartition(".")[0]
    return problem_path == where or problem_path.startswith((f"{where}.", f"{where}["))


@pytest.mark.parametrize(
    ("source", "text", "where"),
    [(s, t, w) for s, _, t, w in VARIANTS],
    ids=[f"{s.split('-')[0]}: {n}" for s, n, _, _ in VARIANTS],
)
def test_a_broken_promotion_names_file_and_path(source: str, text: str, where: str) -> None:
    problems = _problems(text, source)
    assert any(_names(path, where) for _, path, _ in problems), (where, problems)


def test_there_are_many_variants() -> None:
    assert len(VARIANTS) > 500
    assert {n.rsplit(" ", 1)[-1] for _, n, _, _ in VARIANTS} >= {"shape", "key", "removed"}


GH = "golden-horse-mega-points-chase.toml"
FESTA = "montecasino-festa-fortuna.toml"
CROSS_FIELD = [
    # (seed, old text, new text, the path the message must name)
    (GH, "end = 2026-12-12", "end = 2026-09-01", "end"),
    (
        GH,
        "first = 2026-10-01, last = 2026-11-05",
        "first = 2026-11-05, last = 2026-10-01",
        "draws.halfway.window.last",
    ),
    (GH, 'timezone = "Africa/Johannesburg"', 'timezone = "Africa/Joburg"', "timezone"),
    (GH, 'gaming_day_start = "08:00"', 'gaming_day_start = "8am"', "gaming_day_start"),
    (GH, 'gaming_day_start = "08:00"', 'gaming_day_start = "25:00"', "gaming_day_start"),
    (GH, "threshold = 20000", "threshold = 20000.5", "draws.halfway.qualification.threshold"),
    (
        GH,
        "threshold = 20000",
        "threshold = 99999999999999999999",
        "draws.halfway.qualification.threshold",
    ),
    (GH, "threshold = 20000", 'threshold = "20000"', "draws.halfway.qualification.threshold"),
    (GH, "threshold = 20000", "threshold = nan", "draws.halfway.qualification.threshold"),
    (GH, "threshold = 20000", "threshold = inf", "draws.halfway.qualification.threshold"),
    (GH, "threshold = 20000", "threshold = true", "draws.halfway.qualification.threshold"),
    (FESTA, '"J|10" = 200', '"J|J" = 200', "draw_series.saturday.caps"),
    (FESTA, '"J|10" = 200', '"J|10" = -200', "draw_series.saturday.caps"),
    (
        FESTA,
        'times = { every_minutes = 30, first = "14:30", last = "21:00" }',
        "times = { random = 421 }",
        "jackpot_series.jackpot.times.random",
    ),
    (
        FESTA,
        "active_play_minutes = 5 ",
        "active_play_minutes = 100000000 ",
        "jackpot_series.jackpot.active_play_minutes",
    ),
    (GH, "prize_letter_days = 15", "prize_letter_days = 1000000000", "claims.prize_letter_days"),
    (GH, "claim_seconds = 90", "claim_seconds = 9223372036854775807", "claims.claim_seconds"),
    (
        GH,
        "proxy_cutoff_minutes = 15",
        "proxy_cutoff_minutes = 9223372036854775807",
        "claims.proxy_cutoff_minutes",
    ),
]


@pytest.mark.parametrize(
    ("seed", "old", "new", "where"), CROSS_FIELD, ids=[f"{c[0][:5]}: {c[2]}" for c in CROSS_FIELD]
)
def test_values_and_cross_field_rules_name_the_path(
    seed: str, old: str, new: str, where: str
) -> None:
    text = SEEDS[seed].read_text(encoding="utf-8")
    assert old in text, old
    problems = _problems(text.replace(old, new, 1), seed)
    assert any(_names(path, where) for _, path, _ in problems), (where, problems)


def _every_use(promotion: Promotion) -> None:
    """What the daemon computes from a promotion: its schedule, rendered terms, each
    draw's plan and standings (reference and bulk), each RAPS session's plan."""
    member = Member(
        card="7001", name="X", tier=Tier.A, app_user=True, last_visit=dt.date(2026, 9, 1)
    )
    stats = MemberWindowStats(SideStats(10**6, 3, 5), SideStats(10**6, 2, 4), 5)
    ints = functools.partial(np.array, dtype=np.int64)
    columns = StatArrays(
        slots_points=ints([10**6]),
        tables_points=ints([10**6]),
        slots_plays=ints([5]),
        tables_plays=ints([4]),
        slots_visits=ints([3]),
        tables_visits=ints([2]),
        visits=ints([5]),
    )
    schedule(promotion, rng=random.Random(1))
    render_markdown(promotion)
    for draw in promotion.draw_list:
        DrawPlan.of(promotion, draw)
        standing(promotion, draw, member, stats, activated=True)
        bulk_standings(promotion, draw, MemberArrays.from_members([member]), columns)
    for session in promotion.jackpot_sessions:
        SessionPlan.of(promotion, session, jackpot_times(promotion, session, rng=random.Random(1)))


HUGE = [
    (name, path_of(at), to_toml(_with(doc, at, value)))
    for name, file in SEEDS.items()
    for doc in [tomllib.loads(file.read_text(encoding="utf-8"))]
    for at, node in _walk(doc)
    if isinstance(node, int) and not isinstance(node, bool)
    for value in (10**9, 2**63 - 1, 10**20)
]


@pytest.mark.parametrize(
    ("source", "where", "text"), HUGE, ids=[f"{h[0][:5]}: {h[1]}" for h in HUGE]
)
def test_a_huge_number_is_refused_at_its_path_or_works(source: str, where: str, text: str) -> None:
    """A number a promotion file accepts never breaks the daemon later (an overflowing
    date, duration or int64): it is either refused naming its path, or it works."""
    try:
        promotion = parse_promotion(text, source=source)
    except PromotionFileError as exc:
        problems = exc.problems
    else:
        _every_use(promotion)
        return
    assert any(_names(p.path, where) for p in problems), (where, problems)


@pytest.mark.parametrize("seed", sorted(SEEDS))
@pytest.mark.parametrize(
    "damage",
    ["truncated", "unclosed string", "duplicate key", "duplicate table", "bad date", "stray text"],
)
def test_toml_that_does_not_parse_names_file_line_and_column(seed: str, damage: str) -> None:
    text = SEEDS[seed].read_text(encoding="utf-8")
    if damage == "truncated":
        bad = text[: len(text) // 2].rstrip() + "\n[draws.x\n"
    elif damage == "unclosed string":
        bad = text.replace('name = "', 'name = "oops\n', 1)
    elif damage == "duplicate key":
        bad = text.replace("\nsite = ", '\nsite = "x"\nsite = ', 1)
    elif damage == "duplicate table":
        bad = text + "\n[claims]\nclaim_seconds = 5\n"
    elif damage == "bad date":
        bad = re.sub(r"start = \d{4}-\d\d-\d\d", "start = 2026-02-30", text, count=1)
    else:
        bad = text + "\nthis is not toml\n"
    ((file, path, problem),) = _problems(bad, seed)
    assert (file, path) == (seed, "(file)")
    assert re.search(r"line \d+, column \d+", problem), problem


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(SEEDS[GH].read_bytes().replace(b"Golden", b"G\xf6lden", 1))
    with pytest.raises(PromotionFileError) as caught:
        load_promotion(bad)
    assert str(caught.value.problems[0]).startswith("latin1.toml: (file): cannot read it")


def test_a_folder_names_every_broken_file_and_a_repeated_id(tmp_path: Path) -> None:
    gh = SEEDS[GH].read_text(encoding="utf-8")
    (tmp_path / "a.toml").write_text(gh, encoding="utf-8")
    (tmp_path / "b.toml").write_text(gh, encoding="utf-8")  # the same id again
    (tmp_path / "c.toml").write_text(gh.replace("threshold = 20000", "threshold = 0"), "utf-8")
    with pytest.raises(PromotionFileError) as caught:
        load_promotions(tmp_path)
    said = [str(p) for p in caught.value.problems]
    assert any(s.startswith("b.toml: id: ") and "a.toml" in s for s in said), said
    assert any(s.startswith("c.toml: draws.halfway.qualification.threshold: ") for s in said), said


# -- member and device files ------------------------------------------------------------

MEMBER_HEADER = (
    "card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit,mobile"
)
MEMBER_ROWS = [
    "7001,Thandi Mokoena,Q,true,1980-02-01,true,false,,2026-07-01,+27821234567",
    "7002,Johan Botha,J,no,1975-06-30,false,false,,,",
    "7003,Lerato Dlamini,A,yes,1990-01-31,true,true,self-exclusion,2026-07-15,+27 82 555 0101",
]
BAD_MEMBER_VALUES: dict[str, list[str]] = {
    "card": ["12 34", "x" * 33, "7001/1", "70.01", "７００１"],
    "name": ["", "x" * 121],
    "tier": ["Z", "", "jack", "11", "q"],
    "app_user": ["maybe", "2", "truee"],
    "date_of_birth": ["2026-13-01", "31/12/1990", "yesterday", "1990-02-30"],
    "sms_opt_in": ["perhaps", "-1"],
    "excluded": ["sometimes"],
    "exclusion_reason": ["x" * 201],
    "last_visit": ["2026-07-32", "today"],
    "mobile": ["0821234567", "+0", "phone", "+27 82"],
}
DEVICE_HEADER = "device,kind,area,bank,position"
DEVICE_ROWS = ["EGM-1,egm,main,B1,1", "T1,table,prive,Pit 1,Roulette 1"]
BAD_DEVICE_VALUES: dict[str, list[str]] = {
    "device": ["EGM/1", "EGM#1", "EGM+1", "EGM 1", "x" * 65, ""],
    "kind": ["wheel", "EGM", ""],
    "area": ["Main", "vip lounge", "x" * 33, ""],
    "bank": ["b" * 33],
    "position": ["p" * 33],
}


def _csv_cases(
    header: str, rows: list[str], bad: dict[str, list[str]]
) -> Iterator[tuple[str, int, str]]:
    columns = header.split(",")
    for r in range(len(rows)):
        for field, values in bad.items():
            for value in values:
                cells = rows[r].split(",")
                cells[columns.index(field)] = value
                lines = [*rows[:r], ",".join(cells), *rows[r + 1 :]]
                yield "\n".join([header, *lines]) + "\n", r + 2, field  # the header is row 1


MEMBER_CASES = list(_csv_cases(MEMBER_HEADER, MEMBER_ROWS, BAD_MEMBER_VALUES))
DEVICE_CASES = list(_csv_cases(DEVICE_HEADER, DEVICE_ROWS, BAD_DEVICE_VALUES))


def _import_errors(model: Any, text: str, source: str) -> ImportFileError:
    with pytest.raises(ImportFileError) as caught:
        parse_text(model, text, source=source)
    exc = caught.value
    assert str(exc).startswith(f"{source}: ")
    assert "nothing imported" in str(exc)
    for e in exc.errors:
        assert str(e) == f"{source}: row {e.row}, field {e.field!r}: {e.problem}"
        assert e.problem.strip()
    return exc


@pytest.mark.parametrize(("text", "row", "field"), MEMBER_CASES)
def test_a_bad_member_value_names_file_row_and_field(text: str, row: int, field: str) -> None:
    exc = _import_errors(Member, text, "members.csv")
    assert [(e.row, e.field) for e in exc.errors] == [(row, field)]
    assert f"members.csv: row {row}, field '{field}': " in str(exc)


@pytest.mark.parametrize(("text", "row", "field"), DEVICE_CASES)
def test_a_bad_device_value_names_file_row_and_field(text: str, row: int, field: str) -> None:
    exc = _import_errors(Device, text, "devices.csv")
    assert [(e.row, e.field) for e in exc.errors] == [(row, field)]


def _members_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, indent=1)


GOOD_MEMBER = {"card": "7001", "name": "Thandi Mokoena", "tier": "Q"}
STRUCTURAL = [
    # (name, model, source, text, every (row, field) reported)
    ("a column missing", Member, "m.csv", "card,name\n7001,A\n", [(1, "(header)")]),
    (
        "an unknown column",
        Member,
        "m.csv",
        "card,name,tier,nickname\n7001,A,Q,Tee\n",
        [(2, "nickname")],
    ),
    (
        "a row too long",
        Member,
        "m.csv",
        "card,name,tier\n7001,A,Q,extra\n",
        [(2, "(extra columns)")],
    ),
    ("a row too short", Member, "m.csv", "card,name,tier\n7001,A\n", [(2, "tier")]),
    (
        "a repeated card",
        Member,
        "m.csv",
        "card,name,tier\n7001,A,Q\n7002,B,J\n7001,C,K\n",
        [(4, "card")],
    ),
    (
        "several bad rows at once",
        Member,
        "m.csv",
        "card,name,tier\n7001,A,Z\n7002,,Q\n7 3,C,K\n",
        [(2, "tier"), (3, "name"), (4, "card")],
    ),
    (
        "blank lines before the header",
        Member,
        "m.csv",
        "\n\ncard,name,tier\n7001,A,Z\n",
        [(4, "tier")],
    ),
    (
        "blank lines before a bad header",
        Member,
        "m.csv",
        "\n \ncard,name\n7001,A\n",
        [(3, "(header)")],
    ),
    ("blank lines before bad JSON", Member, "m.json", '\n\n[\n{"card": }\n]', [(4, "(file)")]),
    ("a header only", Member, "m.csv", "card,name,tier\n", []),
    ("JSON not an array", Member, "m.json", json.dumps(GOOD_MEMBER), [(1, "(file)")]),
    ("JSON rows not objects", Member, "m.json", json.dumps([GOOD_MEMBER, [1, 2]]), [(1, "(file)")]),
    (
        "JSON that does not parse",
        Member,
        "m.json",
        '[\n{"card": "7001",\n"name": }\n]',
        [(3, "(file)")],
    ),
    (
        "JSON wrong types",
        Member,
        "m.json",
        _members_json(
            [GOOD_MEMBER, {**GOOD_MEMBER, "card": "7002", "tier": 5, "app_user": "maybe"}]
        ),
        [(2, "tier"), (2, "app_user")],
    ),
    (
        "JSON unknown field",
        Member,
        "m.json",
        _members_json([{**GOOD_MEMBER, "vip": True}]),
        [(1, "vip")],
    ),
    (
        "JSON a field missing",
        Member,
        "m.json",
        _members_json([{"card": "7001", "tier": "Q"}]),
        [(1, "name")],
    ),
    (
        "JSON a null card",
        Member,
        "m.json",
        _members_json([{**GOOD_MEMBER, "card": None}]),
        [(1, "card")],
    ),
    (
        "devices: a repeated device",
        Device,
        "d.csv",
        f"{DEVICE_HEADER}\nEGM-1,egm,main,,\nEGM-1,egm,main,,\n",
        [(3, "device")],
    ),
    (
        "devices: old Mac line ends",
        Device,
        "d.csv",
        "device,kind,area\rEGM-1,egm,main\rT1,wheel,main\r",
        [(3, "kind")],
    ),
    (
        "devices: a carriage return in a header",
        Device,
        "d.csv",
        "dev\rice,kind,area\n",
        [(1, "(header)")],
    ),
    (
        "a field over the csv module's limit",
        Member,
        "m.csv",
        f"card,name,tier\n7001,{'x' * 200_000},Q\n",
        [(2, "(file)")],
    ),
    ("devices: area missing", Device, "d.csv", "device,kind\nEGM-1,egm\n", [(1, "(header)")]),
]


@pytest.mark.parametrize(
    ("model", "source", "text", "expected"),
    [c[1:] for c in STRUCTURAL],
    ids=[c[0] for c in STRUCTURAL],
)
def test_structural_mistakes_name_file_row_and_field(
    model: Any, source: str, text: str, expected: list[tuple[int, str]]
) -> None:
    if not expected:  # nothing to import is not an error
        assert parse_text(model, text, source=source) == []
        return
    exc = _import_errors(model, text, source)
    assert [(e.row, e.field) for e in exc.errors] == expected


async def test_the_import_endpoint_names_row_and_field(daemon: Daemon) -> None:
    text = f"{MEMBER_HEADER}\n{MEMBER_ROWS[0]}\n7002,Johan Botha,Z,no,1975-06-30,false,false,,,\n"
    r = await daemon.http.post(
        "/members/import", content=text, headers={"content-type": "text/csv"}
    )
    assert r.status_code == 422
    body = r.json()
    assert "request body: row 3, field 'tier'" in body["detail"]
    assert body["errors"] == [{"row": 3, "field": "tier", "problem": body["errors"][0]["problem"]}]
    assert (await daemon.http.get("/members/7001")).status_code == 404  # nothing imported
