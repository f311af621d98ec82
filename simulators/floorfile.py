"""Named floors: a casino's layout and member base as a TOML file, read and checked.

    spec = load_floor("montecasino")            # simulators/floors/montecasino.toml
    spec = load_floor(Path("my-casino.toml"))   # any file
    floor = build_floor(spec.config, seed=42, as_of=day)

A file is refused as a whole: `FloorFileError` lists every problem with the file, the key
path inside it and what is wrong, e.g.
`montecasino.toml: areas.smoking.egms: must be >= 0, got -5`. The format:

    name = "Montecasino"            # shown in summaries
    site = "montecasino"            # default topic site segment of a run
    timezone = "Africa/Johannesburg"
    seats_per_table = 7
    [areas.main]                    # one table per area, in floor order
    egms = 1150
    bank_sizes = [8, 10, 12, 10]    # banks take these sizes in turn
    tables = { blackjack = 22, roulette = 16, poker = 6, baccarat = 4 }
    pit_size = 6
    [population]                    # members, tiers, app_users, sms_opt_in, mobile,
    members = 80000                 # never_visited, exclusions = { staff = 0.002, ... }
    [behaviour]                     # any behaviour field of FloorConfig, same name;
    peak_occupancy = 0.8            # weekday_factor = { monday = 0.6, ... }

docs/simulator.md describes every key.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

from simulators.config import TIERS, WEEKDAYS, AreaPlan, FloorConfig, config_problems, with_layout

FLOORS_DIR: Final = Path(__file__).resolve().parent / "floors"

Share = Annotated[StrictFloat | StrictInt, Field(ge=0, le=1)]
Count = Annotated[StrictInt, Field(ge=0)]


class FloorFileError(ValueError):
    """A floor file that cannot be used; `problems` holds one line per problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"floor file {source} is not valid:\n  " + "\n  ".join(problems))


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Area(_Model):
    egms: Count = 0
    bank_sizes: list[Annotated[StrictInt, Field(ge=1, le=64)]] = Field(
        default_factory=lambda: [8, 10, 12, 10], min_length=1
    )
    tables: dict[str, Count] = Field(default_factory=dict)
    pit_size: Annotated[StrictInt, Field(ge=1)] = 6


class _Population(_Model):
    members: Count
    tiers: dict[str, Annotated[StrictFloat | StrictInt, Field(ge=0)]] | None = None
    app_users: Share | None = None
    sms_opt_in: Share | None = None
    mobile: Share | None = None
    never_visited: Share | None = None
    exclusions: dict[str, Share] | None = None


class _File(_Model):
    name: str = Field(min_length=1, max_length=80)
    site: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    timezone: str = "Africa/Johannesburg"
    seats_per_table: Annotated[StrictInt, Field(ge=1, le=7)] = 7
    areas: dict[Annotated[str, Field(pattern=r"^[a-z0-9_-]{1,32}$")], _Area] = Field(min_length=1)
    population: _Population
    behaviour: dict[str, Any] = Field(default_factory=dict)


_POPULATION_FIELDS: Final = {
    "members": "members",
    "tiers": "tier_mix",
    "app_users": "app_user_rate",
    "sms_opt_in": "sms_opt_in_rate",
    "mobile": "mobile_rate",
    "never_visited": "never_visited_rate",
    "exclusions": "exclusions",
}
_NOT_BEHAVIOUR: Final = frozenset(
    {"name", "egms", "tables", "layout", "seats_per_table", "egm_areas", "table_areas"}
    | {"table_games"}
    | set(_POPULATION_FIELDS.values())
)
BEHAVIOUR_FIELDS: Final = tuple(
    f.name for f in dataclasses.fields(FloorConfig) if f.name not in _NOT_BEHAVIOUR
)


@dataclass(frozen=True, slots=True)
class FloorSpec:
    """A named floor: its config, its site code and its local time zone."""

    name: str
    site: str
    zone: ZoneInfo
    config: FloorConfig
    source: str


def floor_names() -> tuple[str, ...]:
    """The floors shipped in `simulators/floors/`."""
    return tuple(sorted(p.stem for p in FLOORS_DIR.glob("*.toml")))


def load_floor(name_or_path: str | Path) -> FloorSpec:
    """A shipped floor by name (`montecasino`) or any floor file by path."""
    path = Path(name_or_path)
    if isinstance(name_or_path, str) and path.suffix != ".toml" and "/" not in name_or_path:
        path = FLOORS_DIR / f"{name_or_path}.toml"
        if not path.exists():
            known = ", ".join(floor_names())
            raise FloorFileError(path.name, [f"no floor named {name_or_path!r} (known: {known})"])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FloorFileError(path.name, [f"{path.name}: cannot read it: {exc}"]) from exc
    return parse_floor(text, source=path.name)


def parse_floor(text: str, *, source: str) -> FloorSpec:
    """Parse and check the text of a floor file; `source` names it in errors."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FloorFileError(source, [f"{source}: not valid TOML: {exc}"]) from exc
    try:
        model = _File.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{source}: {_path(err['loc'])}: {_message(err)}" for err in exc.errors()]
        raise FloorFileError(source, problems) from None
    problems = []
    try:
        zone = ZoneInfo(model.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        problems.append(f"{source}: timezone: unknown time zone {model.timezone!r}")
        zone = ZoneInfo("UTC")
    knobs, found = _knobs(model)
    problems += [f"{source}: {p}" for p in found]
    if problems:
        raise FloorFileError(source, problems)
    layout = tuple(
        AreaPlan(
            name=name,
            egms=area.egms,
            bank_sizes=tuple(area.bank_sizes),
            tables=tuple(area.tables.items()),
            pit_size=area.pit_size,
        )
        for name, area in model.areas.items()
    )
    bad = config_problems(_unchecked(layout, model, knobs))
    if bad:
        raise FloorFileError(source, [f"{source}: {_file_path(p)}" for p in bad])
    config = with_layout(layout, name=model.name, seats_per_table=model.seats_per_table, **knobs)
    return FloorSpec(model.name, model.site, zone, config, source)


def _knobs(model: _File) -> tuple[dict[str, Any], list[str]]:
    """FloorConfig keyword arguments from `[population]` and `[behaviour]`, and problems."""
    knobs: dict[str, Any] = {}
    problems: list[str] = []
    for key, field_name in _POPULATION_FIELDS.items():
        value = getattr(model.population, key)
        if value is None:
            continue
        if key == "tiers":
            unknown = [t for t in value if t not in TIERS]
            if unknown:
                problems.append(f"population.tiers: unknown tier(s) {unknown} (tiers: {TIERS})")
            value = tuple((t, float(w)) for t, w in value.items())
        elif key == "exclusions":
            value = tuple((r, float(s)) for r, s in value.items())
        knobs[field_name] = value
    defaults = FloorConfig()
    for key, value in model.behaviour.items():
        if key not in BEHAVIOUR_FIELDS:
            problems.append(f"behaviour.{key}: unknown key (known: {', '.join(BEHAVIOUR_FIELDS)})")
            continue
        converted = _behaviour_value(key, value, getattr(defaults, key))
        if isinstance(converted, str):
            problems.append(f"behaviour.{key}: {converted}")
        else:
            knobs[key] = converted
    return knobs, problems


def _behaviour_value(key: str, value: object, default: object) -> object:
    """`value` in the type of the field's default, or a string saying what is wrong."""
    if key == "weekday_factor" and isinstance(value, dict):
        missing = [d for d in WEEKDAYS if d not in value]
        extra = [d for d in value if d not in WEEKDAYS]
        if missing or extra:
            return (
                f"needs exactly the days {', '.join(WEEKDAYS)} (missing {missing}, unknown {extra})"
            )
        value = [value[d] for d in WEEKDAYS]
    if isinstance(default, tuple):
        if not isinstance(value, list):
            return f"must be a list of numbers, got {value!r}"
        numbers = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
        if len(numbers) != len(value):
            return f"must be a list of numbers, got {value!r}"
        return tuple(float(v) for v in numbers)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, got {value!r}"
    return float(value)


def _unchecked(layout: tuple[AreaPlan, ...], model: _File, knobs: dict[str, Any]) -> FloorConfig:
    """The config the file describes, built without its checks (to list the problems)."""
    config = object.__new__(FloorConfig)
    values = {f.name: f.default for f in dataclasses.fields(FloorConfig)}
    values.update(knobs)
    values.update(
        name=model.name,
        layout=layout,
        egms=sum(a.egms for a in layout),
        tables=sum(a.table_count for a in layout),
        seats_per_table=model.seats_per_table,
    )
    for name, value in values.items():
        object.__setattr__(config, name, value)
    return config


def _file_path(problem: str) -> str:
    """A `FloorConfig` problem ("tier_mix: ...") with the file's key path instead."""
    name, _, rest = problem.partition(":")
    head, _, tail = name.partition(".")
    reverse = {v: k for k, v in _POPULATION_FIELDS.items()}
    if head == "layout":
        return f"areas.{tail}:{rest}" if tail else f"areas:{rest}"
    if head in reverse:
        return f"population.{reverse[head]}{'.' + tail if tail else ''}:{rest}"
    if head in BEHAVIOUR_FIELDS:
        return f"behaviour.{name}:{rest}"
    return problem


def _path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(file)"


def _message(err: Any) -> str:
    kind, given = err["type"], err.get("input")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required"
    return f"{err['msg'].lower()}, got {given!r}"
