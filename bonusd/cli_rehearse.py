"""`bonusd rehearse`: run a whole promotion on a simulated floor before launch.

    bonusd rehearse promotions/golden-horse-mega-points-chase.toml
    bonusd rehearse promotions/golden-horse-mega-points-chase.toml --floor ci \\
        --set draws.halfway.qualification.threshold=15000 --out halfway-15k.html \\
        --compare rehearsal-golden-horse-mega-points-chase.json

The operator's guide is docs/rehearsal.md; the machinery is in bonusd/rehearsal.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from bonusd.cli_text import cell
from bonusd.errors import ConfigError
from bonusd.localservices import LocalMosquitto, LocalRedis
from bonusd.rehearsal import RehearsalPlan, prepare, rehearse
from bonusd.rehearsal_crew import CrewModel
from bonusd.rehearsal_report import reached, write_report
from bonusd.settings import Settings


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


def add_rehearse_command(app: typer.Typer, load: Callable[[], Settings]) -> None:
    """Register `bonusd rehearse` on the main application."""

    @app.command("rehearse")
    def rehearse_command(
        promotion_file: Annotated[
            Path, typer.Argument(exists=True, dir_okay=False, help="The promotion file.")
        ],
        *,
        floor: Annotated[
            str | None,
            typer.Option(
                help="golden-horse, montecasino, ci or a floor file (default: the promotion's)."
            ),
        ] = None,
        first: Annotated[
            str | None,
            typer.Option(
                "--from", help="First day, e.g. 2026-10-01 (default: the promotion's start)."
            ),
        ] = None,
        last: Annotated[
            str | None, typer.Option("--to", help="Last day (default: the promotion's end).")
        ] = None,
        speed: Annotated[
            float,
            typer.Option(
                min=0,
                help="At most this many simulated seconds per wall second; "
                "0: as fast as the daemon takes the floor.",
            ),
        ] = 0.0,
        seed: Annotated[int, typer.Option(help="Seed of the floor, the draws and people.")] = 42,
        sets: Annotated[
            list[str] | None,
            typer.Option("--set", help="Change a rule for this run: PATH=VALUE (repeatable)."),
        ] = None,
        out: Annotated[
            Path | None,
            typer.Option(
                help="HTML report (default: rehearsal-PROMOTION.html); "
                "the JSON summary is written beside it."
            ),
        ] = None,
        compare: Annotated[
            Path | None,
            typer.Option(exists=True, dir_okay=False, help="Another run's JSON summary."),
        ] = None,
        services: Annotated[
            str,
            typer.Option(
                help="own: throwaway Redis and Mosquitto; settings: "
                "BONUSD_REDIS_URL and BONUSD_MQTT_URL."
            ),
        ] = "own",
        play_minutes: Annotated[
            float, typer.Option(min=0.1, max=15, help="Longest aggregated play interval.")
        ] = 15.0,
        events_log: Annotated[
            Path | None, typer.Option(help="Also write every published event here (JSONL).")
        ] = None,
        activation: Annotated[
            float, typer.Option(min=0.0, max=1.0, help="Share of ticket holders who activate.")
        ] = 0.8,
        no_show: Annotated[
            float, typer.Option(min=0.0, max=1.0, help="Share of draw winners who never present.")
        ] = 0.15,
        away: Annotated[
            float,
            typer.Option(min=0.0, max=1.0, help="Share of RAPS winners gone from the device."),
        ] = 0.3,
        raps_no_show: Annotated[
            float, typer.Option(min=0.0, max=1.0, help="Of those, share who do not present.")
        ] = 0.4,
        redeem: Annotated[
            float, typer.Option(min=0.0, max=1.0, help="Share of prize letters redeemed.")
        ] = 0.9,
        keep: Annotated[
            bool, typer.Option(help="Keep the daemon's keys (with --services settings).")
        ] = False,
        progress: Annotated[bool, typer.Option(help="Show the progress bar.")] = True,
    ) -> None:
        """Rehearse a whole promotion on a simulated floor, through MQTT into the daemon,
        in accelerated time; write an HTML report and a JSON summary (docs/rehearsal.md)."""
        settings = load()
        logging.getLogger("bonusd").setLevel(logging.WARNING)  # the bar tells the story
        compared = json.loads(compare.read_text(encoding="utf-8")) if compare else None
        plan = RehearsalPlan(
            promotion_file,
            floor=floor,
            first=_date(first, "--from"),
            last=_date(last, "--to"),
            seed=seed,
            sets=tuple(sets or ()),
            speed=speed,
            crew=CrewModel(activation, no_show, away, raps_no_show, redeem),
            play_minutes=play_minutes,
            events_log=events_log,
            # a broker with Mosquitto's defaults drops QoS 1 messages past 1,000 queued for
            # a subscriber: keep under that unless it is the rehearsal's own (configured)
            window=20_000 if services == "own" else 900,
        )
        prepared = prepare(plan)
        console = Console(stderr=True)
        console.print(
            f"rehearsing {prepared.promotion.id} on floor {prepared.floor_ref} from "
            f"{prepared.start:%d %b %Y %H:%M} to {prepared.floor_end:%d %b %Y %H:%M}"
            + (f" (left out: {', '.join(prepared.left_out)})" if prepared.left_out else "")
        )
        with _services(services, settings) as (redis_url, mqtt_url):
            summary = asyncio.run(
                rehearse(
                    prepared, redis_url=redis_url, mqtt_url=mqtt_url, keep=keep,
                    progress=progress,
                )
            )  # fmt: skip
        target = out or Path(f"rehearsal-{prepared.promotion.id}.html")
        html_path, json_path = write_report(summary, target, compare=compared)
        _print_summary(summary, console)
        console.print(f"wrote {html_path} and {json_path}")
