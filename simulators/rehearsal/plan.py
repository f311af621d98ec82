"""What a rehearsal runs: the plan (the `bonusd rehearse` options) and the plan checked
and resolved (`prepare`): the promotion as rehearsed, the floor and the span of time."""

from __future__ import annotations

import datetime as dt
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bonusd.errors import ConfigError
from bonusd.promotions import Promotion, PromotionFileError, PromotionProblem, parse_promotion
from bonusd.promotions.overrides import apply_overrides, restrict_to_dates, to_toml
from bonusd.promotions.schedule import schedule
from bonusd.promotions.timing import local
from simulators import FloorSpec, floor_names, load_floor
from simulators.floorfile import FloorFileError
from simulators.rehearsal.crew import CrewModel


@dataclass(frozen=True)
class RehearsalPlan:
    """What to rehearse and how (the `bonusd rehearse` options)."""

    promotion_file: Path
    floor: str | None = None  # a named floor or a floor file; default: the promotion's site
    first: dt.date | None = None  # default: the promotion's start
    last: dt.date | None = None  # default: its end
    seed: int = 42
    sets: tuple[str, ...] = ()
    speed: float = 0.0  # most simulated seconds per wall second; 0: as fast as it goes
    crew: CrewModel = field(default_factory=CrewModel)
    play_minutes: float = 15.0  # longest aggregated play interval (the contract's maximum)
    horizon: dt.timedelta = dt.timedelta(hours=6)  # the floor runs at most this far ahead
    window: int = 20_000  # events published and not yet committed, at most
    events_log: Path | None = None  # also write the published events here (topic<TAB>json)


@dataclass(frozen=True)
class Prepared:
    """A plan checked and resolved: the promotion as rehearsed, the floor, the span."""

    plan: RehearsalPlan
    promotion: Promotion
    text: str  # the promotion file as rehearsed
    left_out: tuple[str, ...]
    floor_ref: str
    floor: FloorSpec
    start: dt.datetime
    floor_end: dt.datetime
    settle_end: dt.datetime


def prepare(plan: RehearsalPlan) -> Prepared:
    """Read, change and check the promotion and the floor; `BonusdError` with every problem."""
    source = plan.promotion_file.name
    try:
        raw = tomllib.loads(plan.promotion_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problem = PromotionProblem(source, "(file)", f"cannot read it as TOML: {exc}")
        raise PromotionFileError(source, [problem]) from exc
    label = f"{source} (with --set)" if plan.sets else source
    raw = apply_overrides(raw, plan.sets, source=label)
    full = parse_promotion(to_toml(raw), source=label)
    first, last = plan.first or full.start, plan.last or full.end
    if not full.start <= first <= last <= full.end:
        raise ConfigError(
            f"{source}: rehearse days inside the promotion ({full.start} to {full.end}), "
            f"first day not after the last; got {first} to {last}"
        )
    raw, left_out = restrict_to_dates(raw, first)
    text = to_toml(raw)
    promotion = parse_promotion(text, source=label)
    floor_ref = plan.floor or _floor_of(promotion)
    try:
        spec = load_floor(floor_ref)
    except FloorFileError as exc:
        raise ConfigError(str(exc)) from exc
    start = local(promotion, first, promotion.gaming_day_start)
    floor_end = local(promotion, last + dt.timedelta(days=1), promotion.gaming_day_start)
    settle_end = floor_end
    if last >= promotion.end:  # the whole campaign: run on to its last lapse of letters
        actions = schedule(promotion, rng=random.Random(0))
        settle_end = max(floor_end, max(a.at for a in actions) + dt.timedelta(minutes=1))
    return Prepared(
        plan, promotion, text, tuple(left_out), floor_ref, spec, start, floor_end, settle_end
    )


def _floor_of(promotion: Promotion) -> str:
    for name in floor_names():
        if load_floor(name).site == promotion.site:
            return name
    raise ConfigError(
        f"no named floor is site {promotion.site!r}; pass --floor "
        f"({', '.join(floor_names())} or a floor file)"
    )
