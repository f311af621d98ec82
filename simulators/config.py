"""Every knob of a simulated floor: its layout, its member base and how its players behave.

`FloorConfig` is one frozen object with a realistic default for every field, so
`FloorConfig(egms=200, tables=10, members=2000)` is a usable floor. A named floor
(`simulators/floors/*.toml`, read by `floorfile.py`) sets an explicit `layout`: areas with
their EGMs in banks and their tables by game. Without a layout, EGMs and tables are spread
over areas by the `egm_areas` / `table_areas` weights.

The defaults and where they come from are in docs/simulator.md; the behaviour tables
that are not per-floor (bets, returns, pace of play) are in `profiles.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from simulators import profiles as pf

Weights = tuple[tuple[str, float], ...]

TIERS: Final = ("10", "J", "Q", "K", "A")
TABLE_GAME_CODES: Final = (
    ("blackjack", "BJ"),
    ("roulette", "RL"),
    ("poker", "PK"),
    ("baccarat", "BC"),
)
WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
EXCLUSION_REASONS: Final = ("self_exclusion", "refusal_of_entry", "staff", "staff_family")
"""How bonusd's member import marks who never takes part: `excluded = true` with one of
these as `exclusion_reason` (staff and their families included: they must never win)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AreaPlan:
    """One area of a named floor: its EGMs in banks, and its tables by game."""

    name: str
    egms: int = 0
    bank_sizes: tuple[int, ...] = (8, 10, 12, 10)
    """Banks take these sizes in turn (the last bank of an area holds what is left)."""
    tables: tuple[tuple[str, int], ...] = ()
    """(game, count) in the order the tables are numbered."""
    pit_size: int = 6
    """Tables per pit; a table's bank is its pit."""

    @property
    def table_count(self) -> int:
        return sum(n for _, n in self.tables)


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorConfig:
    """The make-up of the floor and how its players behave (all defaults realistic)."""

    name: str = "demo"
    egms: int = 200
    tables: int = 10
    members: int = 2000
    seats_per_table: int = 7
    layout: tuple[AreaPlan, ...] = ()
    """Explicit areas (named floors); empty: `egms`/`tables` spread by the weights below."""
    egm_areas: Weights = (("main", 0.65), ("smoking", 0.25), ("prive", 0.10))
    table_areas: Weights = (("main", 0.8), ("prive", 0.2))
    table_games: Weights = (("blackjack", 0.5), ("roulette", 0.35), ("poker", 0.15))
    # -- the member base ---------------------------------------------------------------
    tier_mix: Weights = (("10", 0.40), ("J", 0.30), ("Q", 0.18), ("K", 0.08), ("A", 0.04))
    app_user_rate: float = 0.35
    sms_opt_in_rate: float = 0.5
    mobile_rate: float = 0.9
    """Share of members with a mobile number on file; every SMS opt-in has one."""
    exclusions: Weights = (
        ("self_exclusion", 0.002),
        ("refusal_of_entry", 0.001),
        ("staff", 0.002),
        ("staff_family", 0.001),
    )
    """Share of the member base excluded for each reason (exact counts, rounded)."""
    never_visited_rate: float = 0.15
    """Share of members without a last visit on record."""
    # -- when players come ---------------------------------------------------------------
    peak_occupancy: float = 0.8
    """Share of EGMs carded in at the busiest hour of the busiest night."""
    hourly_occupancy: tuple[float, ...] = pf.HOURLY_OCCUPANCY
    """Share of the peak by local hour 0..23."""
    weekday_factor: tuple[float, ...] = pf.WEEKDAY_FACTOR
    """Monday..Sunday; a night belongs to the day it started on (01:00 Saturday is Friday)."""
    late_night_boost: float = pf.LATE_NIGHT_BOOST
    """Fridays and Saturdays run late: hours 22:00-03:59 of those nights are this much busier."""
    table_share: float = 0.15
    """Share of arriving sessions that look for a table seat first."""
    # -- how they play -------------------------------------------------------------------
    session_minutes: tuple[float, float, float] = (20.0, 180.0, 50.0)
    """Visit length (low, high, mode) of a triangular distribution."""
    games_per_hour: float = 600.0
    tier_pace: tuple[float, ...] = pf.TIER_PACE
    """Multiplies `games_per_hour` by tier (10, J, Q, K, A)."""
    rating_update_minutes: float = 10.0
    move_rate: float = 0.35
    """Share of slot visits in which the player changes machine at least once."""
    lost_card_out_rate: float = 0.02
    """Share of slot stints whose `card_out` is never sent (exercises the idle timeout)."""
    lost_card_out_hold_minutes: float = 30.0
    """How long the device and the player stay unavailable after a lost card-out."""
    offline_per_egm_day: float = 0.02
    """Outages per EGM per day: the board goes silent, a player on it leaves unannounced."""
    offline_minutes: tuple[float, float, float] = (10.0, 240.0, 30.0)
    """Outage length (low, high, mode) of a triangular distribution."""
    # -- promotions (used when the generator is given one) --------------------------------
    chase_days: float = 14.0
    """Members start chasing a points threshold this many days before the window closes."""
    chase_from: float = 0.4
    """... once their window points reach this share of the threshold."""
    chase_visit_boost: float = 1.5
    """At full urgency a chaser visits this much more often (1.5: 2.5 times as often)."""
    chase_length_boost: float = 0.5
    """At full urgency a chaser's visits are this much longer."""
    chase_stake_step: float = 0.5
    """At full urgency, the chance that a chaser bets one stake step higher."""
    draw_night_boost: float = 0.5
    """Members a draw is open to come this much more often in the hours before it ..."""
    draw_night_hours: float = 4.0
    """... counted back from its first round; qualified chasers count double."""

    def __post_init__(self) -> None:
        problems = config_problems(self)
        if problems:
            raise ValueError("invalid FloorConfig: " + "; ".join(problems))


def config_problems(c: FloorConfig) -> list[str]:
    """Every problem of a config, named by field (floorfile.py maps them to file paths)."""
    problems: list[str] = []
    for name in ("egms", "tables", "members"):
        if getattr(c, name) < 0:
            problems.append(f"{name}: must be >= 0, got {getattr(c, name)}")
    if c.members > 10**8:
        problems.append(f"members: must be <= 100000000, got {c.members}")
    if not 1 <= c.seats_per_table <= 7:
        problems.append(f"seats_per_table: must be 1..7, got {c.seats_per_table}")
    problems += _layout_problems(c)
    for name in ("egm_areas", "table_areas", "table_games", "tier_mix"):
        weights: Weights = getattr(c, name)
        if not weights or any(w < 0 for _, w in weights) or sum(w for _, w in weights) <= 0:
            problems.append(f"{name}: needs at least one positive weight, got {weights}")
    if any(tier not in TIERS for tier, _ in c.tier_mix):
        problems.append(f"tier_mix: tiers must be among {TIERS}, got {c.tier_mix}")
    known_games = {g for g, _ in TABLE_GAME_CODES}
    if any(game not in known_games for game, _ in c.table_games):
        problems.append(f"table_games: games must be among {sorted(known_games)}")
    for reason, share in c.exclusions:
        if reason not in EXCLUSION_REASONS:
            problems.append(f"exclusions: {reason!r} is not one of {EXCLUSION_REASONS}")
        if share < 0:
            problems.append(f"exclusions.{reason}: must be >= 0, got {share}")
    if sum(max(0.0, s) for _, s in c.exclusions) > 0.5:
        problems.append("exclusions: the shares add up to more than half the member base")
    for name in _SHARES:
        value = getattr(c, name)
        if not 0.0 <= value <= 1.0:
            problems.append(f"{name}: must be within 0..1, got {value}")
    if len(c.hourly_occupancy) != 24 or any(not 0 <= v <= 1 for v in c.hourly_occupancy):
        problems.append("hourly_occupancy: needs 24 shares within 0..1 (hours 0..23)")
    if len(c.weekday_factor) != 7 or any(not 0 <= v <= 1 for v in c.weekday_factor):
        problems.append("weekday_factor: needs 7 factors within 0..1 (Monday..Sunday)")
    if len(c.tier_pace) != 5 or any(v <= 0 for v in c.tier_pace):
        problems.append("tier_pace: needs 5 factors > 0 (tiers 10, J, Q, K, A)")
    for name in ("session_minutes", "offline_minutes"):
        low, high, mode = getattr(c, name)
        if not 0 < low <= mode <= high:
            problems.append(f"{name}: must be 0 < low <= mode <= high, got {low, high, mode}")
    for name in _POSITIVE:
        if getattr(c, name) <= 0:
            problems.append(f"{name}: must be > 0, got {getattr(c, name)}")
    for name in _NON_NEGATIVE:
        if getattr(c, name) < 0:
            problems.append(f"{name}: must be >= 0, got {getattr(c, name)}")
    return problems


_SHARES: Final = (
    "app_user_rate",
    "sms_opt_in_rate",
    "mobile_rate",
    "never_visited_rate",
    "peak_occupancy",
    "table_share",
    "move_rate",
    "lost_card_out_rate",
    "chase_from",
    "chase_stake_step",
)
_POSITIVE: Final = ("games_per_hour", "rating_update_minutes", "chase_days")
_NON_NEGATIVE: Final = (
    "lost_card_out_hold_minutes",
    "offline_per_egm_day",
    "late_night_boost",
    "chase_visit_boost",
    "chase_length_boost",
    "draw_night_boost",
    "draw_night_hours",
)


def _layout_problems(c: FloorConfig) -> list[str]:
    if not c.layout:
        return []
    problems: list[str] = []
    names = [a.name for a in c.layout]
    known_games = {g for g, _ in TABLE_GAME_CODES}
    for area in c.layout:
        where = f"layout.{area.name}"
        if names.count(area.name) > 1:
            problems.append(f"{where}: the area is listed twice")
        if area.egms < 0:
            problems.append(f"{where}.egms: must be >= 0, got {area.egms}")
        if not area.bank_sizes or any(not 1 <= s <= 64 for s in area.bank_sizes):
            problems.append(f"{where}.bank_sizes: needs sizes within 1..64, got {area.bank_sizes}")
        if area.pit_size < 1:
            problems.append(f"{where}.pit_size: must be >= 1, got {area.pit_size}")
        for game, count in area.tables:
            if game not in known_games:
                problems.append(f"{where}.tables.{game}: unknown game ({sorted(known_games)})")
            if count < 0:
                problems.append(f"{where}.tables.{game}: must be >= 0, got {count}")
    egms = sum(a.egms for a in c.layout)
    tables = sum(a.table_count for a in c.layout)
    if (egms, tables) != (c.egms, c.tables):
        problems.append(
            f"layout: holds {egms} EGMs and {tables} tables, but egms={c.egms}, tables={c.tables}"
        )
    return problems


def with_layout(layout: tuple[AreaPlan, ...], **knobs: Any) -> FloorConfig:
    """A config whose `egms` and `tables` are the layout's totals."""
    egms = sum(a.egms for a in layout)
    tables = sum(a.table_count for a in layout)
    return FloorConfig(layout=layout, egms=egms, tables=tables, **knobs)
