"""Command line of the floor simulator: `python -m simulators run|export|dump`.

    python -m simulators run --mqtt-url mqtt://127.0.0.1:1883 --seed 42 --egms 200 \\
        --tables 10 --members 2000 --start 2026-10-03T17:00:00+02:00 --duration 2h --speed 60
    python -m simulators export --out registry/          # devices.csv, members.csv
    python -m simulators dump --out events.jsonl         # topic<TAB>json per line

The three commands take the same floor options, so `export` and `dump` with the seed of a
`run` describe that run's floor and stream exactly.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from simulators.floor import Floor, FloorConfig, build_floor
from simulators.generator import JOHANNESBURG, SimEvent, generate_events
from simulators.publish import PublishError, publish_events
from simulators.registry import export_registry
from simulators.timefmt import parse_duration
from simulators.wire import dump_events, write_jsonl

Seed = Annotated[int, typer.Option(help="Seed of the floor and of the event stream.")]
Egms = Annotated[int, typer.Option(min=0, help="Number of EGMs (slot machines).")]
Tables = Annotated[int, typer.Option(min=0, help="Number of gaming tables.")]
Members = Annotated[int, typer.Option(min=0, help="Number of loyalty members.")]
Start = Annotated[
    str,
    typer.Option(help="Simulated start, ISO 8601; without an offset, Johannesburg time."),
]
Duration = Annotated[str, typer.Option(help="Simulated duration: 2h, 90m, 1h30m, 1d.")]
RunId = Annotated[
    str | None,
    typer.Option(help="Prefix of event ids (default: a digest of seed and start)."),
]
Site = Annotated[str, typer.Option(help="Site segment of the MQTT topics.")]
Prefix = Annotated[str, typer.Option(help="First segment of the MQTT topics.")]

DEFAULT_START = "2026-10-03T17:00:00+02:00"


def _start(text: str) -> dt.datetime:
    try:
        instant = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r} is not an ISO 8601 instant") from exc
    return instant if instant.tzinfo else instant.replace(tzinfo=JOHANNESBURG)


def _duration(text: str) -> dt.timedelta:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


def _floor(seed: int, egms: int, tables: int, members: int, start: dt.datetime) -> Floor:
    config = FloorConfig(egms=egms, tables=tables, members=members)
    return build_floor(config, seed=seed, as_of=start.astimezone(JOHANNESBURG).date())


def _events(
    seed: int, floor: Floor, start: dt.datetime, duration: str, run_id: str | None
) -> tuple[dt.timedelta, Iterator[SimEvent]]:
    span = _duration(duration)
    return span, generate_events(floor, seed=seed, start=start, duration=span, run_id=run_id)


def _summary(console: Console, counts: Counter[str], title: str) -> None:
    table = Table(title=title)
    table.add_column("event type")
    table.add_column("events", justify="right")
    for kind, count in sorted(counts.items()):
        table.add_row(kind, f"{count:,}")
    table.add_row("[bold]total", f"[bold]{counts.total():,}")
    console.print(table)


def make_app() -> typer.Typer:
    """The typer application (built on call: no module-level state)."""
    app = typer.Typer(
        add_completion=False,
        no_args_is_help=True,
        help="Simulate a casino floor's telemetry (bonusd contract v1).",
    )
    console = Console(stderr=True)

    @app.command()
    def run(
        *,
        mqtt_url: Annotated[
            str, typer.Option(help="Broker URL: mqtt://host:port or mqtt://user:pass@host:port.")
        ] = "mqtt://127.0.0.1:1883",
        site: Site = "demo",
        prefix: Prefix = "bonusd",
        seed: Seed = 42,
        egms: Egms = 200,
        tables: Tables = 10,
        members: Members = 2000,
        start: Start = DEFAULT_START,
        duration: Duration = "2h",
        speed: Annotated[
            float,
            typer.Option(min=0, help="Simulated seconds per wall second; 0 = flat out."),
        ] = 60.0,
        run_id: RunId = None,
        max_inflight: Annotated[int, typer.Option(min=1, help="Unacknowledged cap.")] = 1000,
        progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    ) -> None:
        """Publish the floor's events to an MQTT broker, paced by simulated time."""
        begin = _start(start)
        floor = _floor(seed, egms, tables, members, begin)
        span, stream = _events(seed, floor, begin, duration, run_id)
        try:
            counts = publish_events(
                stream,
                mqtt_url=mqtt_url,
                prefix=prefix,
                site=site,
                speed=speed,
                start=begin,
                duration=span,
                max_inflight=max_inflight,
                progress=progress,
            )
        except (PublishError, ValueError) as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from exc
        _summary(console, counts, f"published to {prefix}/{site}")

    @app.command()
    def export(
        *,
        out: Annotated[Path, typer.Option(help="Directory for devices.csv and members.csv.")],
        seed: Seed = 42,
        egms: Egms = 200,
        tables: Tables = 10,
        members: Members = 2000,
        start: Start = DEFAULT_START,
    ) -> None:
        """Write the floor registry (devices.csv, members.csv) for the daemon to import."""
        floor = _floor(seed, egms, tables, members, _start(start))
        for path in export_registry(floor, out):
            console.print(f"wrote {path}")

    @app.command()
    def dump(
        *,
        out: Annotated[str, typer.Option(help="JSONL file to write, or - for stdout.")],
        site: Site = "demo",
        prefix: Prefix = "bonusd",
        seed: Seed = 42,
        egms: Egms = 200,
        tables: Tables = 10,
        members: Members = 2000,
        start: Start = DEFAULT_START,
        duration: Duration = "2h",
        run_id: RunId = None,
    ) -> None:
        """Write the event stream as `topic<TAB>json` lines (deterministic)."""
        begin = _start(start)
        floor = _floor(seed, egms, tables, members, begin)
        _, stream = _events(seed, floor, begin, duration, run_id)
        if out == "-":
            counts = write_jsonl(stream, sys.stdout, prefix=prefix, site=site)
        else:
            counts = dump_events(stream, Path(out), prefix=prefix, site=site)
        _summary(console, counts, f"wrote {out}")

    return app


def main() -> None:
    make_app()()


if __name__ == "__main__":
    main()
