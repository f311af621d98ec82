"""The simulated floor: its devices and its members, built from a `FloorConfig` and a seed.

`build_floor` turns a config and a seed into a `Floor`: the EGMs and tables with their
area, bank and position, and the loyalty members (`population.py`). The same config,
seed and `as_of` date always give the same floor.

Device ids: EGMs are `EGM-0001`...; tables carry their game in the id: `BJ-01`
(blackjack), `RL-02` (roulette), `PK-03` (poker), `BC-04` (baccarat), numbered across the
floor. EGM banks are named by area and number (`M01`, `S12`, `P03`), tables sit in pits
(`PIT-M1`).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from simulators.config import TABLE_GAME_CODES, AreaPlan, FloorConfig
from simulators.population import Member, apportion, build_members

DeviceKind = Literal["egm", "table"]

__all__ = ["Device", "DeviceKind", "Floor", "FloorConfig", "Member", "apportion", "build_floor"]


@dataclass(frozen=True, slots=True)
class Device:
    """An EGM or a table: one row of `devices.csv` plus the game it offers."""

    device: str
    kind: DeviceKind
    area: str
    bank: str
    position: int
    game: str
    """`slot` for EGMs; `blackjack`, `roulette`, `poker` or `baccarat` for tables."""


@dataclass(frozen=True)
class Floor:
    """A built floor: the config it came from, its devices and its members."""

    config: FloorConfig
    seed: int
    as_of: dt.date
    devices: tuple[Device, ...]
    members: tuple[Member, ...]

    @cached_property
    def egms(self) -> tuple[Device, ...]:
        return tuple(d for d in self.devices if d.kind == "egm")

    @cached_property
    def tables(self) -> tuple[Device, ...]:
        return tuple(d for d in self.devices if d.kind == "table")

    @cached_property
    def areas(self) -> tuple[str, ...]:
        """The areas in floor order."""
        return tuple(dict.fromkeys(d.area for d in self.devices))


def build_floor(config: FloorConfig, *, seed: int, as_of: dt.date) -> Floor:
    """The floor for `config` and `seed`; members are adults with visits before `as_of`."""
    rng = random.Random(f"bonusd-sim/floor/{seed}")
    if config.layout:
        devices = _planned(config.layout)
    else:
        devices = _egms(config, rng) + _tables(config, rng)
    members = build_members(config, rng, as_of)
    return Floor(config=config, seed=seed, as_of=as_of, devices=devices, members=members)


def _area_code(area: str) -> str:
    return area[:1].upper() if area in ("main", "smoking", "prive") else area[:3].upper()


def _planned(layout: tuple[AreaPlan, ...]) -> tuple[Device, ...]:
    """The devices of an explicit layout, numbered in layout order (no randomness)."""
    egm_total = sum(a.egms for a in layout)
    width = max(4, len(str(egm_total)))
    codes = dict(TABLE_GAME_CODES)
    egms: list[Device] = []
    tables: list[Device] = []
    for area in layout:
        code = _area_code(area.name)
        bank_no, left = 0, area.egms
        while left > 0:
            size = min(left, area.bank_sizes[bank_no % len(area.bank_sizes)])
            bank_no += 1
            for position in range(1, size + 1):
                device = f"EGM-{len(egms) + 1:0{width}d}"
                egms.append(
                    Device(device, "egm", area.name, f"{code}{bank_no:02d}", position, "slot")
                )
            left -= size
        i = 0
        for game, count in area.tables:
            for _ in range(count):
                pit = f"PIT-{code}{i // area.pit_size + 1}"
                device = f"{codes[game]}-{len(tables) + 1:02d}"
                tables.append(Device(device, "table", area.name, pit, i % area.pit_size + 1, game))
                i += 1
    return tuple(egms + tables)


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
