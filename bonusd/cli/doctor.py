"""`bonusd doctor`: check a deployment from the inside and print each finding with its
fix; the checks are in bonusd/service/doctor.py (docs/operations.md, "bonusd doctor").

    OK redis: 127.0.0.1:6379: AOF, appendfsync always, noeviction
    FAIL broker queue: max_queued_messages is 1000: ... — fix: set max_queued_messages ...

Exit status, for monitoring: 0 every check OK, 1 warnings only, 2 a problem (or settings
that do not load, as for every command).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from bonusd.cli.text import safe_lines
from bonusd.service.doctor import DoctorOptions, diagnose
from bonusd.service.doctorreport import as_json, as_text, exit_status
from bonusd.settings import Settings


def add_doctor_command(app: typer.Typer, settings: Callable[[], Settings]) -> None:
    @app.command()
    def doctor(
        broker_config: Annotated[
            Path | None,
            typer.Option(
                exists=True,
                help="Mosquitto's main file or conf.d folder, on the broker's host "
                "(/etc/mosquitto/mosquitto.conf): its queue limit and persistence are "
                "not told over MQTT.",
            ),
        ] = None,
        as_json_: Annotated[
            bool, typer.Option("--json", help="One JSON document, for machines.")
        ] = False,
    ) -> None:
        """Check this deployment: Redis's persistence, eviction and memory, the broker's
        limits, the clock against Redis's, time zone data, the audit archive's disk and
        last copy, token and certificate expiries, the promotion files and the site's
        rules. Prints OK/WARN/FAIL lines with a fix for each; exit 0 clean, 1 warnings,
        2 problems."""
        conf = settings()
        options = DoctorOptions(broker_config=broker_config)
        findings = asyncio.run(diagnose(conf, now=lambda: dt.datetime.now(dt.UTC), options=options))
        text = as_json(findings, site=conf.site) if as_json_ else as_text(findings)
        typer.echo(safe_lines(text))  # a file's content may be quoted: never obeyed
        raise typer.Exit(exit_status(findings))
