"""What `bonusd rehearse` runs (bonusd/cli/rehearse.py holds only its options): the
services of the run, the rehearsal itself and the report. In `simulators`, so the bonusd
package never loads the rehearsal unless this command runs."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from bonusd.cli.text import cell
from bonusd.errors import ConfigError
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, LocalRedis
from simulators.rehearsal.crew import CrewModel
from simulators.rehearsal.plan import RehearsalPlan, prepare
from simulators.rehearsal.report import reached, write_report
from simulators.rehearsal.run import rehearse


@dataclass(frozen=True, slots=True)
class RehearseOptions:
    """The options of `bonusd rehearse`, as typed on the command line."""

    promotion_file: Path
    floor: str | None
    first: str | None
    last: str | None
    speed: float
    seed: int
    sets: tuple[str, ...]
    out: Path | None
    compare: Path | None
    services: str
    play_minutes: float
    events_log: Path | None
    crew: CrewModel
    keep: bool
    progress: bool


class _ThrowawayRedis(LocalRedis):
    """A private redis-server without persistence: the rehearsal's keys die with it, and
    its memory figures are the rehearsal's alone."""

    def command(self) -> list[str]:
        port, folder = str(self.port), str(self.workdir)
        return ["redis-server", "--bind", "127.0.0.1", "--port", port, "--dir", folder,
                "--appendonly", "no", "--save", ""]  # fmt: skip


@contextlib.contextmanager
def _services(kind: str, settings: Settings) -> Iterator[tuple[str, str]]:
    """(Redis URL, MQTT URL): throwaway ones (`own`), or the configured ones."""
    if kind == "settings":
        yield settings.redis_url, settings.mqtt_url
        return
    if kind != "own":
        raise ConfigError(f"--services must be own or settings, got {kind!r}")
    with tempfile.TemporaryDirectory(prefix="bonusd-rehearsal-services-") as tmp:
        folder = Path(tmp)
        with _ThrowawayRedis(folder / "redis") as redis, LocalMosquitto(folder / "mqtt") as mq:
            assert isinstance(redis, LocalRedis)
            assert isinstance(mq, LocalMosquitto)
            yield redis.url, mq.url


def _date(value: str | None, option: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise typer.BadParameter(f"{option} takes a date like 2026-10-01, got {value!r}") from exc


def _print_summary(summary: dict[str, Any], console: Console) -> None:
    table = Table(title=cell(f"rehearsal of {summary['promotion']['id']}"))
    for column in ("draw", "status", "qualified", "tickets", "entries", "winners"):
        table.add_column(column, justify="left" if column in ("draw", "status") else "right")
    for d in reached(summary):
        s = d["summary"]
        table.add_row(
            cell(d["id"]), cell(d["status"]), f"{s['qualified']:,}", f"{s['tickets']:,}",
            f"{s['entries']:,}", str(d.get("won", "")),
        )  # fmt: skip
    console.print(table)
    run = summary["run"]
    console.print(
        f"{run['events_published']:,} events in {run['wall_s']:,.1f} s; "
        f"{len(summary['never_triggered'])} rule(s) never triggered; peak RSS daemon "
        f"{run['daemon_peak_rss_mb']:,} MB, simulator {run['simulator_peak_rss_mb']:,} MB; "
        f"Redis used_memory_peak {run['redis_used_memory_peak_mb']:,} MB"
    )


def run_rehearsal(settings: Settings, o: RehearseOptions) -> None:
    """Rehearse `o.promotion_file`, write the report and print the summary."""
    logging.getLogger("bonusd").setLevel(logging.WARNING)  # the bar tells the story
    compared = json.loads(o.compare.read_text(encoding="utf-8")) if o.compare else None
    plan = RehearsalPlan(
        o.promotion_file,
        floor=o.floor,
        first=_date(o.first, "--from"),
        last=_date(o.last, "--to"),
        seed=o.seed,
        sets=o.sets,
        speed=o.speed,
        crew=o.crew,
        play_minutes=o.play_minutes,
        events_log=o.events_log,
        # a broker with Mosquitto's defaults drops QoS 1 messages past 1,000 queued for
        # a subscriber: keep under that unless it is the rehearsal's own (configured)
        window=20_000 if o.services == "own" else 900,
    )
    prepared = prepare(plan)
    console = Console(stderr=True)
    console.print(
        f"rehearsing {prepared.promotion.id} on floor {prepared.floor_ref} from "
        f"{prepared.start:%d %b %Y %H:%M} to {prepared.floor_end:%d %b %Y %H:%M}"
        + (f" (left out: {', '.join(prepared.left_out)})" if prepared.left_out else "")
    )
    with _services(o.services, settings) as (redis_url, mqtt_url):
        summary = asyncio.run(
            rehearse(
                prepared, redis_url=redis_url, mqtt_url=mqtt_url, keep=o.keep,
                progress=o.progress,
            )
        )  # fmt: skip
    target = o.out or Path(f"rehearsal-{prepared.promotion.id}.html")
    html_path, json_path = write_report(summary, target, compare=compared)
    _print_summary(summary, console)
    console.print(f"wrote {html_path} and {json_path}")
