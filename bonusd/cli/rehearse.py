"""`bonusd rehearse`: run a whole promotion on a simulated floor before launch.

    bonusd rehearse promotions/golden-horse-mega-points-chase.toml
    bonusd rehearse promotions/golden-horse-mega-points-chase.toml --floor ci \\
        --set draws.halfway.qualification.threshold=15000 --out halfway-15k.html \\
        --compare rehearsal-golden-horse-mega-points-chase.json

The operator's guide is docs/rehearsal.md. This module holds the command's options only;
what it runs is simulators/rehearsal/command.py, imported when the command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from bonusd.settings import Settings

PromotionFile = Annotated[
    Path, typer.Argument(exists=True, dir_okay=False, help="The promotion file.")
]
FloorOpt = Annotated[
    str | None,
    typer.Option(help="golden-horse, montecasino, ci or a floor file (default: the promotion's)."),
]
First = Annotated[
    str | None,
    typer.Option("--from", help="First day, e.g. 2026-10-01 (default: the promotion's start)."),
]
Last = Annotated[str | None, typer.Option("--to", help="Last day (default: the promotion's end).")]
Speed = Annotated[
    float,
    typer.Option(
        min=0,
        help="At most this many simulated seconds per wall second; "
        "0: as fast as the daemon takes the floor.",
    ),
]
Seed = Annotated[int, typer.Option(help="Seed of the floor, the draws and people.")]
Sets = Annotated[
    list[str] | None,
    typer.Option("--set", help="Change a rule for this run: PATH=VALUE (repeatable)."),
]
Out = Annotated[
    Path | None,
    typer.Option(
        help="HTML report (default: rehearsal-PROMOTION.html); "
        "the JSON summary is written beside it."
    ),
]
Compare = Annotated[
    Path | None,
    typer.Option(exists=True, dir_okay=False, help="Another run's JSON summary."),
]
Services = Annotated[
    str,
    typer.Option(
        help="own: throwaway Redis and Mosquitto; settings: BONUSD_REDIS_URL and BONUSD_MQTT_URL."
    ),
]
PlayMinutes = Annotated[
    float, typer.Option(min=0.1, max=15, help="Longest aggregated play interval.")
]
EventsLog = Annotated[
    Path | None, typer.Option(help="Also write every published event here (JSONL).")
]
Activation = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Share of ticket holders who activate.")
]
NoShow = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Share of draw winners who never present.")
]
Away = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Share of RAPS winners gone from the device.")
]
RapsNoShow = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Of those, share who do not present.")
]
Redeem = Annotated[float, typer.Option(min=0.0, max=1.0, help="Share of prize letters redeemed.")]
Keep = Annotated[bool, typer.Option(help="Keep the daemon's keys (with --services settings).")]
ShowProgress = Annotated[bool, typer.Option(help="Show the progress bar.")]


def add_rehearse_command(app: typer.Typer, load: Callable[[], Settings]) -> None:
    """Register `bonusd rehearse` on the main application."""

    @app.command("rehearse")
    def rehearse_command(
        promotion_file: PromotionFile,
        *,
        floor: FloorOpt = None,
        first: First = None,
        last: Last = None,
        speed: Speed = 0.0,
        seed: Seed = 42,
        sets: Sets = None,
        out: Out = None,
        compare: Compare = None,
        services: Services = "own",
        play_minutes: PlayMinutes = 15.0,
        events_log: EventsLog = None,
        activation: Activation = 0.8,
        no_show: NoShow = 0.15,
        away: Away = 0.3,
        raps_no_show: RapsNoShow = 0.4,
        redeem: Redeem = 0.9,
        keep: Keep = False,
        progress: ShowProgress = True,
    ) -> None:
        """Rehearse a whole promotion on a simulated floor, through MQTT into the daemon,
        in accelerated time; write an HTML report and a JSON summary (docs/rehearsal.md)."""
        # a development tool: loaded only when the command runs (docs/architecture.md)
        from simulators.rehearsal.command import RehearseOptions, run_rehearsal  # noqa: PLC0415
        from simulators.rehearsal.crew import CrewModel  # noqa: PLC0415

        crew = CrewModel(activation, no_show, away, raps_no_show, redeem)
        options = RehearseOptions(
            promotion_file, floor, first, last, speed, seed, tuple(sets or ()), out, compare,
            services, play_minutes, events_log, crew, keep, progress,
        )  # fmt: skip
        run_rehearsal(load(), options)
