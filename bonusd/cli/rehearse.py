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
        # a development tool: loaded only when the command runs (docs/architecture.md)
        from simulators.rehearsal.command import RehearseOptions, run_rehearsal  # noqa: PLC0415
        from simulators.rehearsal.crew import CrewModel  # noqa: PLC0415

        crew = CrewModel(activation, no_show, away, raps_no_show, redeem)
        options = RehearseOptions(
            promotion_file, floor, first, last, speed, seed, tuple(sets or ()), out, compare,
            services, play_minutes, events_log, crew, keep, progress,
        )  # fmt: skip
        run_rehearsal(load(), options)
