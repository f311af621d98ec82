"""The promotion file format: pydantic models for one TOML promotion definition.

This module owns the *shape* of a promotion file: every key, its type, its default and
the limits a single value must respect. Rules that tie several keys together (a window's
kind and the fields it needs, rounds in time order, references that must exist) live in
`checks.py`, so each problem is reported with its exact path in the file.

Times of day are local to the promotion's time zone and written "HH:MM"; dates are TOML
dates (`2026-10-03`). A `[draws.<id>]` table is one draw; a `[draw_series.<name>]` table
with `dates = [...]` is one draw per date, with ids `<name>-YYYY-MM-DD` (likewise
`[jackpot_series.<name>]` for RAPS sessions). `Promotion.draw_list` and
`Promotion.jackpot_sessions` hold the expanded, dated objects the engine works on.
"""

from __future__ import annotations

import datetime as dt
import functools
from decimal import Decimal
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
)

from bonusd.clocks.clock import GamingCalendar, known_zone
from bonusd.promotions.branding import Signage
from bonusd.promotions.kinds import (
    BOTH_SIDES,
    Channel,
    DrawMode,
    EmptyPoolAction,
    PrizeKind,
    QualificationKind,
    Side,
    Tombola,
    TombolaMode,
    Weekday,
    WindowKind,
)
from bonusd.registry.records import Tier


def _local_time(value: dt.time) -> dt.time:
    if value.tzinfo is not None:
        raise ValueError("must be a local time of day without an offset, e.g. '17:00'")
    return value


LocalTime = Annotated[dt.time, AfterValidator(_local_time)]
Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
# No count, amount or threshold of a promotion comes near a trillion; past it the bulk
# rules' int64 arithmetic (bulk.py) would overflow, so a typo is refused here, with its path.
MAX_NUMBER = 10**12
Count = Annotated[StrictInt, Field(ge=0, le=MAX_NUMBER)]
Positive = Annotated[StrictInt, Field(gt=0, le=MAX_NUMBER)]
DAY_S, DAY_MIN = 24 * 3600, 24 * 60  # bounds of durations that must fit a date's arithmetic
ALL_TIERS = (Tier.TEN, Tier.J, Tier.Q, Tier.K, Tier.A)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Exclusions(_Model):
    """Who never takes part. The member's `excluded` flag always applies; it is not a key."""

    minimum_age: StrictInt = Field(default=18, ge=18)
    require_date_of_birth: StrictBool = False


class Claims(_Model):
    """Presenting, proxies and prize collection, for every draw of the promotion."""

    claim_seconds: Annotated[Positive, Field(le=DAY_S)] = 90
    identification: list[str] = Field(
        default_factory=lambda: ["SA ID", "driving licence", "valid passport"]
    )
    proxy_forms_open: LocalTime = dt.time(8, 0)
    proxy_cutoff_minutes: Annotated[Count, Field(le=DAY_MIN)] = 15
    prize_letter_days: Annotated[Positive, Field(le=3660)] = 15  # ten years


class Leaderboards(_Model):
    """When the public leaderboards (draws with `leaderboard = true`) are published."""

    weekday: Weekday = Weekday.FRIDAY
    time: LocalTime = dt.time(8, 0)
    last_update: dt.date | None = None


class PrizeSet(_Model):
    kind: PrizeKind = PrizeKind.REVEAL
    description: str = ""
    values_cents: list[Positive] = Field(default_factory=list)


class Multiplier(_Model):
    """Base points of play whose event time falls in [start, end) on `date` are multiplied."""

    id: Slug
    date: dt.date
    start: LocalTime
    end: LocalTime
    factor: Decimal = Field(ge=1, le=100, max_digits=5, decimal_places=2)
    sides: list[Side] = Field(default_factory=lambda: list(BOTH_SIDES), min_length=1)


class Window(_Model):
    """A draw's earning window; which fields apply depends on `kind` (see checks.py)."""

    kind: WindowKind
    first: dt.date | None = None
    last: dt.date | None = None
    months: StrictInt | None = Field(default=None, gt=0, le=24)
    start: LocalTime | None = None
    end: LocalTime | None = None


class Qualification(_Model):
    kind: QualificationKind
    threshold: StrictInt | None = Field(default=None, gt=0, le=MAX_NUMBER)
    sides: list[Side] = Field(default_factory=lambda: list(BOTH_SIDES), min_length=1)


class Tickets(_Model):
    """How a qualifier's tickets are counted (see `rules.standing`)."""

    per_points: StrictInt | None = Field(default=None, gt=0, le=MAX_NUMBER)
    per_visit: Count = 0
    base: Count = 0
    app_bonus: Count = 0
    min_one_if_played: StrictBool = False


class ActivationRules(_Model):
    channels: list[Channel] = Field(
        default_factory=lambda: [Channel.KIOSK, Channel.APP], min_length=1
    )
    app_requires_active: StrictBool = True
    opens: LocalTime = dt.time(8, 0)
    bin_close: LocalTime | None = None  # None: at the first round's time


class RoundSpec(_Model):
    """One draw time and how many winners it draws from each tombola."""

    time: LocalTime
    winners: dict[Tombola, Positive]
    prize_set: Slug | None = None

    @field_validator("winners", mode="before")
    @classmethod
    def _pooled_count(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return {Tombola.POOLED.value: value}
        if not isinstance(value, dict):
            shown = repr(value) if isinstance(value, str) else value
            raise ValueError(
                f"must be a whole number (pooled) or a table like {{ slots = 5, tables = 3 }}, "
                f"got {shown}"
            )
        return value

    @property
    def total_winners(self) -> int:
        return sum(self.winners.values())


class Seats(_Model):
    """Leaderboard leaders seated at the draw (and left out of its tombolas)."""

    boards: list[Side] = Field(min_length=1)
    per_board: Positive = 1


class DrawSpec(_Model):
    """Everything about a draw except its id and date."""

    name: str = Field(min_length=1, max_length=80)
    mode: DrawMode = DrawMode.ELECTRONIC
    system: str = ""
    place: str = ""
    tiers: list[Tier] | None = None
    window: Window
    qualification: Qualification
    tickets: Tickets
    tombolas: TombolaMode = TombolaMode.POOLED
    caps: dict[Tier, Positive] = Field(default_factory=dict)
    activation: ActivationRules = Field(default_factory=ActivationRules)
    rounds: list[RoundSpec] = Field(min_length=1)
    seats: Seats | None = None
    leaderboard: StrictBool = False
    prize_set: Slug | None = None

    @field_validator("caps", mode="before")
    @classmethod
    def _tier_groups(cls, value: object) -> object:
        """Accept the seeds' group notation: `"J|10" = 200` caps tiers J and 10 at 200."""
        if not isinstance(value, dict):
            return value
        out: dict[str, object] = {}
        for key, cap in value.items():
            for tier in str(key).split("|"):
                if tier.strip() in out:
                    raise ValueError(f"tier {tier.strip()!r} is capped twice")
                out[tier.strip()] = cap
        return out

    def dated(self, day: dt.date, draw_id: str, series: str | None = None) -> Draw:
        """This draw placed on `day` with id `draw_id`."""
        fields = {k: v for k, v in dict(self).items() if k not in ("date", "dates")}
        return Draw(**fields, id=draw_id, date=day, series=series)

    @property
    def tombola_names(self) -> tuple[Tombola, ...]:
        if self.tombolas is TombolaMode.POOLED:
            return (Tombola.POOLED,)
        return tuple(Tombola(side.value) for side in self.qualification.sides)


class DrawEntry(DrawSpec):
    date: dt.date


class DrawSeries(DrawSpec):
    dates: list[dt.date] = Field(min_length=1)


class Draw(DrawSpec):
    """A dated draw as the engine sees it (from `[draws.<id>]` or a series)."""

    id: str
    date: dt.date
    series: str | None = None


class JackpotTimes(_Model):
    """Jackpot times in a session: `at` a list, `every_minutes` from `first` to `last`,
    or `random` times drawn by the scheduler."""

    at: list[LocalTime] = Field(default_factory=list)
    every_minutes: StrictInt | None = Field(default=None, gt=0, le=24 * 60)
    first: LocalTime | None = None
    last: LocalTime | None = None
    random: StrictInt | None = Field(default=None, gt=0, le=DAY_MIN)


class EmptyPoolRule(_Model):
    """What RAPS does when nobody qualifies at a jackpot time."""

    retry_seconds: Annotated[Positive, Field(le=DAY_S)] = 60
    retries: Annotated[Count, Field(le=1000)] = 5
    then: EmptyPoolAction = EmptyPoolAction.CARRY_OVER


class JackpotSpec(_Model):
    name: str = Field(default="Bonus Jackpot", min_length=1, max_length=80)
    start: LocalTime
    end: LocalTime
    areas: list[Annotated[str, Field(pattern=r"^[a-z0-9_-]{1,32}$")]] = Field(min_length=1)
    min_spend_cents: Count = 10_000
    times: JackpotTimes
    active_play_minutes: Annotated[Positive, Field(le=DAY_MIN)] = 5
    claim_seconds: Annotated[Positive, Field(le=DAY_S)] = 90
    decline_register: StrictBool = True
    prize_set: Slug | None = None
    empty_pool: EmptyPoolRule = Field(default_factory=EmptyPoolRule)
    # the crew's reselections of one jackpot (docs/draws.md, "Bounded reselection"): at most
    # this many without the desk's approval, each at least this long after the selection
    # before it was announced to the crew (the site clock), so someone walked to the device
    max_reselections: Annotated[Count, Field(le=100)] = 3
    reselect_spacing_s: Annotated[Count, Field(le=DAY_S)] = 30  # DOMAIN.md: 30 s


class JackpotSeries(JackpotSpec):
    dates: list[dt.date] = Field(min_length=1)


class JackpotSession(JackpotSpec):
    """One dated RAPS bonus-jackpot session."""

    id: str
    date: dt.date
    series: str


class Promotion(_Model):
    """One promotion file. Load it with `bonusd.promotions.load_promotion`."""

    format: Literal[1] = 1
    id: Slug
    name: str = Field(min_length=1, max_length=120)
    casino: str = ""
    site: Slug
    timezone: str = "Africa/Johannesburg"
    gaming_day_start: LocalTime = dt.time(8, 0)
    start: dt.date
    end: dt.date
    tiers: list[Tier] = Field(default_factory=lambda: list(ALL_TIERS), min_length=1)
    terms_url: str = ""
    defaulted: list[str] = Field(default_factory=list)
    unconfirmed: list[str] = Field(default_factory=list)
    exclusions: Exclusions = Field(default_factory=Exclusions)
    claims: Claims = Field(default_factory=Claims)
    leaderboards: Leaderboards = Field(default_factory=Leaderboards)
    prize_sets: dict[Slug, PrizeSet] = Field(default_factory=dict)
    multipliers: list[Multiplier] = Field(default_factory=list)
    draws: dict[Slug, DrawEntry] = Field(default_factory=dict)
    draw_series: dict[Slug, DrawSeries] = Field(default_factory=dict)
    jackpot_series: dict[Slug, JackpotSeries] = Field(default_factory=dict)
    signage: Signage = Field(default_factory=Signage)  # the floor screens' look (branding.py)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return known_zone(value)

    @functools.cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @functools.cached_property
    def calendar(self) -> GamingCalendar:
        return GamingCalendar(self.zone, self.gaming_day_start)

    @functools.cached_property
    def draw_list(self) -> tuple[Draw, ...]:
        """Every draw, series expanded, in date and draw-time order."""
        draws = [entry.dated(entry.date, draw_id) for draw_id, entry in self.draws.items()]
        draws += [
            series.dated(day, f"{name}-{day.isoformat()}", name)
            for name, series in self.draw_series.items()
            for day in series.dates
        ]
        return tuple(sorted(draws, key=lambda d: (d.date, d.rounds[0].time, d.id)))

    @functools.cached_property
    def jackpot_sessions(self) -> tuple[JackpotSession, ...]:
        sessions = [
            _expand_session(name, series, day)
            for name, series in self.jackpot_series.items()
            for day in series.dates
        ]
        return tuple(sorted(sessions, key=lambda s: (s.date, s.start, s.id)))

    def draw(self, draw_id: str) -> Draw:
        """The draw with this id; KeyError names the ids there are."""
        for draw in self.draw_list:
            if draw.id == draw_id:
                return draw
        known = ", ".join(d.id for d in self.draw_list)
        raise KeyError(f"promotion {self.id} has no draw {draw_id!r} (draws: {known})")

    def jackpot_session(self, session_id: str) -> JackpotSession:
        for session in self.jackpot_sessions:
            if session.id == session_id:
                return session
        raise KeyError(f"promotion {self.id} has no jackpot session {session_id!r}")

    def draw_tiers(self, draw: DrawSpec) -> tuple[Tier, ...]:
        """The tiers a draw is open to: its own list, else the promotion's."""
        return tuple(draw.tiers) if draw.tiers is not None else tuple(self.tiers)


def _expand_session(name: str, series: JackpotSeries, day: dt.date) -> JackpotSession:
    fields = {k: v for k, v in dict(series).items() if k != "dates"}
    return JackpotSession(**fields, id=f"{name}-{day.isoformat()}", date=day, series=name)
