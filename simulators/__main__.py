"""Command line of the floor simulator: `python -m simulators run|export|dump|floors`.

    python -m simulators run --floor montecasino --seed 42 \\
        --start 2026-10-03T17:00:00+02:00 --duration 2h --speed 60
    python -m simulators run --egms 200 --tables 10 --members 2000      # an unnamed floor
    python -m simulators run --floor golden-horse --granularity play \\
        --promotion promotions/golden-horse-mega-points-chase.toml --duration 7d --speed 0
    python -m simulators run --floor golden-horse --clock shared --site golden-horse \
        --start 2026-10-03T16:55:00+02:00 --speed 600      # by the daemons' shared clock
    python -m simulators export --floor montecasino --out registry/     # devices, members
    python -m simulators dump --floor ci --out events.jsonl             # topic<TAB>json
    python -m simulators floors                                         # the named floors

The commands take the same floor options, so `export` and `dump` with the seed of a `run`
describe that run's floor and stream exactly.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from zoneinfo import ZoneInfo

import redis.exceptions
import typer
from rich.console import Console
from rich.table import Table

from bonusd.errors import ClockError
from bonusd.promotions import Promotion, PromotionFileError, load_promotion
from simulators.config import FloorConfig
from simulators.floor import Floor, build_floor
from simulators.floorfile import FloorFileError, floor_names, load_floor
from simulators.generator import JOHANNESBURG, Granularity, SimEvent, generate_events
from simulators.identity import contract_of
from simulators.pacing import Pacer, SharedPacer
from simulators.publish import PublishError, publish_events
from simulators.registry import export_registry
from simulators.timefmt import parse_duration
from simulators.wire import dump_events, write_jsonl

Seed = Annotated[int, typer.Option(help="Seed of the floor and of the event stream.")]
FloorName = Annotated[
    str | None,
    typer.Option(
        "--floor", help="A named floor (montecasino, golden-horse, ci) or a floor file (.toml)."
    ),
]
Egms = Annotated[int | None, typer.Option(min=0, help="EGMs of an unnamed floor [200].")]
Tables = Annotated[int | None, typer.Option(min=0, help="Tables of an unnamed floor [10].")]
Members = Annotated[int | None, typer.Option(min=0, help="Members of an unnamed floor [2000].")]
Start = Annotated[
    str,
    typer.Option(help="Simulated start, ISO 8601; without an offset, the floor's local time."),
]
Duration = Annotated[str, typer.Option(help="Simulated duration: 2h, 90m, 1h30m, 1d.")]
RunId = Annotated[
    str | None,
    typer.Option(help="Stem of epochs (v2) or event ids (v1) [a digest of floor, seed, start]."),
]
ContractOpt = Annotated[str, typer.Option(help="Telemetry contract: v2 (epoch, seq) or v1 (id).")]
Site = Annotated[
    str | None, typer.Option(help="Site segment of the topics [the floor's, or demo].")
]
Prefix = Annotated[str, typer.Option(help="First segment of the MQTT topics.")]
GranularityOpt = Annotated[
    str, typer.Option(help="game: every game (load tests); play: aggregated play (rehearsals).")
]
PlayMinutes = Annotated[
    float, typer.Option(min=0.1, help="Longest interval of one play event (granularity play).")
]
PromotionOpt = Annotated[
    Path | None,
    typer.Option(help="A promotion file: players chase its thresholds and come to its draws."),
]

MqttUrl = Annotated[
    str, typer.Option(help="Broker URL: mqtt://host:port or mqtt://user:pass@host:port.")
]
Speed = Annotated[
    float,
    typer.Option(
        min=0,
        help="Simulated seconds per wall second; 0 = flat out. With --clock shared: "
        "the speed the shared clock is created with if it does not exist yet.",
    ),
]
ClockOpt = Annotated[
    str,
    typer.Option(
        help="wall: pace by --speed from --start; shared: publish each event when "
        "the site's shared clock in Redis (docs/clock.md) reaches its time."
    ),
]
RedisUrl = Annotated[str, typer.Option(help="Redis of the shared clock (--clock shared).")]
KeyPrefix = Annotated[str, typer.Option(help="Key prefix of the shared clock (BONUSD_KEY_PREFIX).")]
MaxInflight = Annotated[int, typer.Option(min=1, help="Unacknowledged cap.")]
ShowProgress = Annotated[bool, typer.Option(help="Show a progress bar.")]
ExportOut = Annotated[Path, typer.Option(help="Directory for devices.csv and members.csv.")]
DumpOut = Annotated[str, typer.Option(help="JSONL file to write, or - for stdout.")]

DEFAULT_START = "2026-10-03T17:00:00+02:00"


@dataclass(frozen=True, slots=True)
class _Setup:
    """What every command works from: the floor, its site and zone, the promotion."""

    floor: Floor
    site: str
    zone: ZoneInfo
    start: dt.datetime
    promotion: Promotion | None


def _setup(
    *,
    floor_name: str | None,
    egms: int | None,
    tables: int | None,
    members: int | None,
    seed: int,
    start: str,
    site: str | None,
    promotion: Path | None = None,
) -> _Setup:
    if floor_name is not None:
        if (egms, tables, members) != (None, None, None):
            raise typer.BadParameter("give either --floor or --egms/--tables/--members")
        try:
            spec = load_floor(floor_name)
        except FloorFileError as exc:
            raise typer.BadParameter(str(exc)) from exc
        config, zone, default_site = spec.config, spec.zone, spec.site
    else:
        config = FloorConfig(
            egms=200 if egms is None else egms,
            tables=10 if tables is None else tables,
            members=2000 if members is None else members,
        )
        zone, default_site = JOHANNESBURG, "demo"
    promo = None
    if promotion is not None:
        try:
            promo = load_promotion(promotion)
        except PromotionFileError as exc:
            raise typer.BadParameter(str(exc)) from exc
    begin = _start(start, zone)
    floor = build_floor(config, seed=seed, as_of=begin.astimezone(zone).date())
    return _Setup(floor, site or default_site, zone, begin, promo)


def _start(text: str, zone: ZoneInfo) -> dt.datetime:
    try:
        instant = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r} is not an ISO 8601 instant") from exc
    return instant if instant.tzinfo else instant.replace(tzinfo=zone)


def _duration(text: str) -> dt.timedelta:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


def _granularity(text: str) -> Granularity:
    if text in ("game", "play"):
        return "game" if text == "game" else "play"
    raise typer.BadParameter(f"--granularity must be game or play, got {text!r}")


def _events(
    setup: _Setup,
    *,
    seed: int,
    duration: str,
    run_id: str | None,
    granularity: str,
    play_minutes: float,
    contract: str,
) -> tuple[dt.timedelta, Iterator[SimEvent]]:
    span = _duration(duration)
    try:
        stream = generate_events(
            setup.floor,
            seed=seed,
            start=setup.start,
            duration=span,
            run_id=run_id,
            zone=setup.zone,
            granularity=_granularity(granularity),
            play_minutes=play_minutes,
            promotion=setup.promotion,
            contract=contract_of(contract),
        )
    except ValueError as exc:  # the contract, or a run id too long for an epoch
        raise typer.BadParameter(str(exc)) from exc
    return span, stream


def _summary(console: Console, counts: Counter[str], title: str) -> None:
    table = Table(title=title)
    table.add_column("event type")
    table.add_column("events", justify="right")
    for kind, count in sorted(counts.items()):
        table.add_row(kind, f"{count:,}")
    table.add_row("[bold]total", f"[bold]{counts.total():,}")
    console.print(table)


def _publish(
    console: Console,
    setup: _Setup,
    stream: Iterator[SimEvent],
    span: dt.timedelta,
    *,
    mqtt_url: str,
    prefix: str,
    speed: float,
    clock: str,
    redis_url: str,
    key_prefix: str,
    max_inflight: int,
    progress: bool,
) -> Counter[str]:
    """Publish the stream, paced by the wall or the shared clock; exit 1 on a failure."""
    pacer: Pacer | None = None
    try:
        if clock == "shared":
            pacer = SharedPacer(
                redis_url=redis_url,
                site=setup.site,
                key_prefix=key_prefix,
                start=setup.start,
                speed=speed,
            )
        return publish_events(
            stream,
            mqtt_url=mqtt_url,
            prefix=prefix,
            site=setup.site,
            speed=speed,
            start=setup.start,
            duration=span,
            max_inflight=max_inflight,
            progress=progress,
            pacer=pacer,
        )
    except (PublishError, ClockError, ValueError, redis.exceptions.RedisError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    finally:
        if pacer is not None:
            pacer.close()


class _Commands:
    """The `run`, `export` and `dump` commands, reporting on one console (stderr)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def run(
        self,
        *,
        mqtt_url: MqttUrl = "mqtt://127.0.0.1:1883",
        site: Site = None,
        prefix: Prefix = "bonusd",
        floor: FloorName = None,
        seed: Seed = 42,
        egms: Egms = None,
        tables: Tables = None,
        members: Members = None,
        start: Start = DEFAULT_START,
        duration: Duration = "2h",
        speed: Speed = 60.0,
        clock: ClockOpt = "wall",
        redis_url: RedisUrl = "redis://127.0.0.1:6379/0",
        key_prefix: KeyPrefix = "bonusd",
        granularity: GranularityOpt = "game",
        play_minutes: PlayMinutes = 5.0,
        promotion: PromotionOpt = None,
        run_id: RunId = None,
        contract: ContractOpt = "v2",
        max_inflight: MaxInflight = 1000,
        progress: ShowProgress = True,
    ) -> None:
        """Publish the floor's events to an MQTT broker, paced by simulated time."""
        setup = _setup(
            floor_name=floor, egms=egms, tables=tables, members=members, seed=seed,
            start=start, site=site, promotion=promotion,
        )  # fmt: skip
        span, stream = _events(
            setup, seed=seed, duration=duration, run_id=run_id, granularity=granularity,
            play_minutes=play_minutes, contract=contract,
        )  # fmt: skip
        if clock not in ("wall", "shared"):
            raise typer.BadParameter(f"--clock must be wall or shared, got {clock!r}")
        counts = _publish(
            self.console, setup, stream, span, mqtt_url=mqtt_url, prefix=prefix, speed=speed,
            clock=clock, redis_url=redis_url, key_prefix=key_prefix,
            max_inflight=max_inflight, progress=progress,
        )  # fmt: skip
        _summary(self.console, counts, f"published to {prefix}/{setup.site}")

    def export(
        self,
        *,
        out: ExportOut,
        floor: FloorName = None,
        seed: Seed = 42,
        egms: Egms = None,
        tables: Tables = None,
        members: Members = None,
        start: Start = DEFAULT_START,
    ) -> None:
        """Write the floor registry (devices.csv, members.csv) for the daemon to import."""
        setup = _setup(
            floor_name=floor, egms=egms, tables=tables, members=members, seed=seed,
            start=start, site=None,
        )  # fmt: skip
        for path in export_registry(setup.floor, out):
            self.console.print(f"wrote {path}")

    def dump(
        self,
        *,
        out: DumpOut,
        site: Site = None,
        prefix: Prefix = "bonusd",
        floor: FloorName = None,
        seed: Seed = 42,
        egms: Egms = None,
        tables: Tables = None,
        members: Members = None,
        start: Start = DEFAULT_START,
        duration: Duration = "2h",
        granularity: GranularityOpt = "game",
        play_minutes: PlayMinutes = 5.0,
        promotion: PromotionOpt = None,
        run_id: RunId = None,
        contract: ContractOpt = "v2",
    ) -> None:
        """Write the event stream as `topic<TAB>json` lines (deterministic)."""
        setup = _setup(
            floor_name=floor, egms=egms, tables=tables, members=members, seed=seed,
            start=start, site=site, promotion=promotion,
        )  # fmt: skip
        _, stream = _events(
            setup, seed=seed, duration=duration, run_id=run_id, granularity=granularity,
            play_minutes=play_minutes, contract=contract,
        )  # fmt: skip
        if out == "-":
            counts = write_jsonl(stream, sys.stdout, prefix=prefix, site=setup.site)
        else:
            counts = dump_events(stream, Path(out), prefix=prefix, site=setup.site)
        _summary(self.console, counts, f"wrote {out}")


def floors() -> None:
    """List the named floors shipped in simulators/floors/."""
    table = Table(title="named floors (--floor)")
    for column in ("floor", "name", "site", "EGMs", "tables", "members", "areas"):
        table.add_column(column)
    for name in floor_names():
        spec = load_floor(name)
        c = spec.config
        areas = ", ".join(f"{a.name} {a.egms}+{a.table_count}" for a in c.layout)
        table.add_row(
            name, spec.name, spec.site, f"{c.egms:,}", str(c.tables), f"{c.members:,}", areas
        )
    Console().print(table)


def make_app() -> typer.Typer:
    """The typer application (built on call: no module-level state)."""
    app = typer.Typer(
        add_completion=False,
        no_args_is_help=True,
        help="Simulate a casino floor's telemetry (bonusd contract v2, or v1 on request).",
    )
    commands = _Commands(Console(stderr=True))
    for command in (commands.run, commands.export, commands.dump, floors):
        app.command()(command)
    return app


def main() -> None:
    make_app()()


if __name__ == "__main__":
    main()
