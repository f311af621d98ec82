"""What the runner hands to the locust users: one JSON file, named by `CONFIG_ENV`.

The runner writes it before each locust phase; the locustfile reads it at import (in
every worker process) to size and aim its user classes. Plain data only: the users run
under gevent and import nothing of the daemon.

Slice files (`slices/{kind}-{n:03d}.tsv`) hold the stream one MQTT user plays, one event
a line: `offset_ms<TAB>{kind}/{device}<TAB>json`, in time order; `offset_ms` is simulated
milliseconds from the start of the measured part of the scenario.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_ENV = "BONUSD_LOADTEST_CONFIG"


@dataclass(frozen=True)
class Tokens:
    """Bearer tokens of the run: one per signage area, and one per other role."""

    signage: dict[str, str]
    crew: str
    desk: str
    kiosk: str


@dataclass(frozen=True)
class LoadConfig:
    """Everything the users of one locust phase need."""

    phase: str  # "full" (against the daemon) or "bare" (broker and a bare subscriber)
    run_tag: str  # unique per run: probe event ids
    speed: float  # simulated seconds per wall second
    mqtt_host: str
    mqtt_port: int
    topic_head: str  # "{topic_prefix}/{site}/"
    redis_url: str
    key_base: str  # "{key_prefix}:{site}:" with the site's hash tag
    http_base: str  # the daemon's base URL ("" in the bare phase)
    slices: str  # folder of the slice files
    egm_slices: int
    table_slices: int
    users: dict[str, int]  # user class -> how many
    signage_areas: dict[str, int]  # area -> screens
    tokens: Tokens | None
    promotion: str
    draw: str
    gaming_day: str
    cards: list[str]  # members on the floor (desk look-ups, kiosk customers)
    desk_wait: tuple[float, float]
    kiosk_wait: tuple[float, float]
    screen_hold: tuple[float, float]
    probe_every_s: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)

    def slice_path(self, kind: str, n: int) -> Path:
        return Path(self.slices) / f"{kind}-{n:03d}.tsv"

    def key(self, name: str) -> str:
        """A key of this run under the site's prefix (deleted with the site)."""
        return f"{self.key_base}loadtest:{self.run_tag}:{self.phase}:{name}"

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(dataclasses.asdict(self), indent=1))

    @classmethod
    def read(cls, path: Path) -> LoadConfig:
        raw = json.loads(path.read_text())
        tokens = raw.pop("tokens")
        for name in ("desk_wait", "kiosk_wait", "screen_hold"):
            raw[name] = tuple(raw[name])
        return cls(tokens=Tokens(**tokens) if tokens else None, **raw)


@functools.cache
def from_environment() -> LoadConfig:
    """The config the runner named in the environment, or a clear error."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        raise SystemExit(
            f"{CONFIG_ENV} is not set: run the load test with loadtests/run_scenario.py "
            "(make load), which prepares the site and writes the config"
        )
    return LoadConfig.read(Path(path))


@dataclass(frozen=True)
class Options:
    """How a scenario runs (the options of loadtests/run_scenario.py)."""

    run_time_s: int
    out: Path
    speed: float
    processes: int
    settle_s: int
    desk_summary: bool  # the desk opens the whole draw's summary now and then
    baseline_s: int
    redis_url: str | None  # None: a throwaway redis-server
    mqtt_url: str | None  # None: a throwaway Mosquitto with bonusd's configuration
    daemon_url: str | None  # None: start `bonusd run`
    site: str | None
    key_prefix: str
    topic_prefix: str
