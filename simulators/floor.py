"""The simulated floor: its configuration, its devices and its members.

`FloorConfig` holds every knob (floor make-up and player behaviour) with a realistic
default; `build_floor` turns a config and a seed into a `Floor`: the EGMs and tables with
their area, bank and position, and the loyalty members with tier, flags and dates. The
same config, seed and `as_of` date always give the same floor.

Device ids: EGMs are `EGM-0001`...; tables carry their game in the id: `BJ-01`
(blackjack), `RL-02` (roulette), `PK-03` (poker), numbered across the floor.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from simulators.names import random_name

DeviceKind = Literal["egm", "table"]
Weights = tuple[tuple[str, float], ...]

TIERS: Final = ("10", "J", "Q", "K", "A")
TABLE_GAME_CODES: Final = (("blackjack", "BJ"), ("roulette", "RL"), ("poker", "PK"))
EXCLUSION_REASONS: Final = (
    ("self_exclusion", 0.45),
    ("refusal_of_entry", 0.2),
    ("staff", 0.2),
    ("staff_family", 0.15),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorConfig:
    """The make-up of the floor and how its players behave (all defaults realistic)."""

    egms: int = 200
    tables: int = 10
    members: int = 2000
    seats_per_table: int = 7
    egm_areas: Weights = (("main", 0.65), ("smoking", 0.25), ("prive", 0.10))
    table_areas: Weights = (("main", 0.8), ("prive", 0.2))
    table_games: Weights = (("blackjack", 0.5), ("roulette", 0.35), ("poker", 0.15))
    tier_mix: Weights = (("10", 0.40), ("J", 0.30), ("Q", 0.18), ("K", 0.08), ("A", 0.04))
    app_user_rate: float = 0.35
    sms_opt_in_rate: float = 0.5
    excluded_rate: float = 0.005
    # Behaviour.
    peak_occupancy: float = 0.8
    """Share of EGMs carded in at the busiest hour; the hourly profile scales from it."""
    table_share: float = 0.15
    """Share of arriving sessions that look for a table seat first."""
    session_minutes: tuple[float, float, float] = (20.0, 180.0, 50.0)
    """Session length (low, high, mode) of a triangular distribution."""
    games_per_hour: float = 600.0
    rating_update_minutes: float = 10.0
    move_rate: float = 0.35
    """Share of slot sessions in which the player changes machine at least once."""
    lost_card_out_rate: float = 0.02
    """Share of slot stints whose `card_out` is never sent (exercises the idle timeout)."""
    lost_card_out_hold_minutes: float = 30.0
    """How long the device and the player stay unavailable after a lost card-out."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        for name in ("egms", "tables", "members"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 1 <= self.seats_per_table <= 7:
            problems.append(f"seats_per_table must be 1..7, got {self.seats_per_table}")
        if self.members > 10**8:
            problems.append(f"members must be <= 100000000, got {self.members}")
        for name in ("egm_areas", "table_areas", "table_games", "tier_mix"):
            weights: Weights = getattr(self, name)
            if not weights or any(w < 0 for _, w in weights) or sum(w for _, w in weights) <= 0:
                problems.append(f"{name} needs at least one positive weight, got {weights}")
        if any(tier not in TIERS for tier, _ in self.tier_mix):
            problems.append(f"tier_mix tiers must be among {TIERS}, got {self.tier_mix}")
        known_games = {g for g, _ in TABLE_GAME_CODES}
        if any(game not in known_games for game, _ in self.table_games):
            problems.append(f"table_games must be among {sorted(known_games)}")
        for name in (
            "app_user_rate",
            "sms_opt_in_rate",
            "excluded_rate",
            "peak_occupancy",
            "table_share",
            "move_rate",
            "lost_card_out_rate",
        ):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} must be within 0..1, got {getattr(self, name)}")
        low, high, mode = self.session_minutes
        if not 0 < low <= mode <= high:
            problems.append(
                f"session_minutes must be 0 < low <= mode <= high, got {low, high, mode}"
            )
        if self.games_per_hour <= 0 or self.rating_update_minutes <= 0:
            problems.append("games_per_hour and rating_update_minutes must be > 0")
        if self.lost_card_out_hold_minutes < 0:
            problems.append("lost_card_out_hold_minutes must be >= 0")
        if problems:
            raise ValueError("invalid FloorConfig: " + "; ".join(problems))


@dataclass(frozen=True, slots=True)
class Device:
    """An EGM or a table: one row of `devices.csv` plus the game it offers."""

    device: str
    kind: DeviceKind
    area: str
    bank: str
    position: int
    game: str
    """`slot` for EGMs; `blackjack`, `roulette` or `poker` for tables."""


@dataclass(frozen=True, slots=True)
class Member:
    """A loyalty member: one row of `members.csv`."""

    card: str
    name: str
    tier: str
    app_user: bool
    date_of_birth: dt.date
    sms_opt_in: bool
    excluded: bool
    exclusion_reason: str
    last_visit: dt.date | None


@dataclass(frozen=True, slots=True)
class Floor:
    """A built floor: the config it came from, its devices and its members."""

    config: FloorConfig
    seed: int
    as_of: dt.date
    devices: tuple[Device, ...]
    members: tuple[Member, ...]

    @property
    def egms(self) -> tuple[Device, ...]:
        return tuple(d for d in self.devices if d.kind == "egm")

    @property
    def tables(self) -> tuple[Device, ...]:
        return tuple(d for d in self.devices if d.kind == "table")


def build_floor(config: FloorConfig, *, seed: int, as_of: dt.date) -> Floor:
    """The floor for `config` and `seed`; members are adults with visits before `as_of`."""
    rng = random.Random(f"bonusd-sim/floor/{seed}")
    devices = _egms(config, rng) + _tables(config, rng)
    members = _members(config, rng, as_of)
    return Floor(config=config, seed=seed, as_of=as_of, devices=devices, members=members)


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    """Split `total` into integer parts proportional to `weights` (largest remainder)."""
    scale = sum(weights)
    exact = [total * w / scale for w in weights]
    parts = [int(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: parts[i] - exact[i])
    for i in by_remainder[: total - sum(parts)]:
        parts[i] += 1
    return parts


def _area_code(area: str) -> str:
    return area[:1].upper() if area in ("main", "smoking", "prive") else area[:3].upper()


def _egms(config: FloorConfig, rng: random.Random) -> tuple[Device, ...]:
    width = max(4, len(str(config.egms)))
    out: list[Device] = []
    counts = apportion(config.egms, [w for _, w in config.egm_areas])
    for (area, _), count in zip(config.egm_areas, counts, strict=True):
        bank_no, left = 0, count
        while left > 0:
            bank_no += 1
            size = min(left, rng.choice((6, 8, 8, 10, 12)))
            bank = f"{_area_code(area)}{bank_no:02d}"
            for position in range(1, size + 1):
                number = len(out) + 1
                out.append(Device(f"EGM-{number:0{width}d}", "egm", area, bank, position, "slot"))
            left -= size
    return tuple(out)


def _tables(config: FloorConfig, rng: random.Random) -> tuple[Device, ...]:
    codes = dict(TABLE_GAME_CODES)
    games = [
        game
        for (game, _), n in zip(
            config.table_games,
            apportion(config.tables, [w for _, w in config.table_games]),
            strict=True,
        )
        for _ in range(n)
    ]
    rng.shuffle(games)
    out: list[Device] = []
    counts = apportion(config.tables, [w for _, w in config.table_areas])
    for (area, _), count in zip(config.table_areas, counts, strict=True):
        for i in range(count):
            game = games[len(out)]
            pit = f"PIT-{_area_code(area)}{i // 6 + 1}"
            device = f"{codes[game]}-{len(out) + 1:02d}"
            out.append(Device(device, "table", area, pit, i % 6 + 1, game))
    return tuple(out)


def _members(config: FloorConfig, rng: random.Random, as_of: dt.date) -> tuple[Member, ...]:
    n = config.members
    cards = rng.sample(range(10**8), n)
    tiers = [
        tier
        for (tier, _), count in zip(
            config.tier_mix, apportion(n, [w for _, w in config.tier_mix]), strict=True
        )
        for _ in range(count)
    ]
    rng.shuffle(tiers)
    reasons = [r for r, _ in EXCLUSION_REASONS]
    reason_weights = [w for _, w in EXCLUSION_REASONS]
    youngest = _years_before(as_of, 18) - dt.timedelta(days=1)
    out: list[Member] = []
    for card, tier in zip(cards, tiers, strict=True):
        age_days = int(rng.triangular(18.0, 85.0, 42.0) * 365.25)
        born = min(as_of - dt.timedelta(days=age_days), youngest)
        excluded = rng.random() < config.excluded_rate
        last_visit = None
        if rng.random() >= 0.15:
            last_visit = as_of - dt.timedelta(days=min(400, 1 + int(rng.expovariate(1 / 35))))
        out.append(
            Member(
                card=f"70{card:08d}",
                name=random_name(rng),
                tier=tier,
                app_user=rng.random() < config.app_user_rate,
                date_of_birth=born,
                sms_opt_in=rng.random() < config.sms_opt_in_rate,
                excluded=excluded,
                exclusion_reason=rng.choices(reasons, reason_weights)[0] if excluded else "",
                last_visit=last_visit,
            )
        )
    return tuple(out)


def _years_before(day: dt.date, years: int) -> dt.date:
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # 29 February in a non-leap year
        return day.replace(year=day.year - years, day=28)
