"""Command-line upkeep of the floor indexes: `bonusd floor reindex`, and the progress bars
of an import (rows checked; members written in atomic batches, `FloorStore.import_members`)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from bonusd.cli.clock import settings_clock
from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.store import IMPORT_BATCH, FloorStore
from bonusd.registry.files import CheckedFile, check_file
from bonusd.registry.records import Member, Record
from bonusd.settings import Settings


def check_with_progress(model: type[Record], file: Path) -> CheckedFile[Record]:
    """`check_file` with a count of the rows checked so far on the terminal."""
    kind = "members" if model is Member else "devices"
    with Progress(transient=True) as bar, file.open("rb") as stream:
        task = bar.add_task(f"checking {kind}", total=None)
        return check_file(model, stream, source=file.name, progress=lambda n: bar.advance(task, n))


async def import_with_progress(store: FloorStore, members: CheckedFile[Member]) -> int:
    """`store.import_members`, batch by batch, with a progress bar on the terminal."""
    with Progress(transient=True) as bar:
        task = bar.add_task("importing members", total=len(members))
        written = 0
        for batch in members.batches(IMPORT_BATCH):
            written += await store.import_members(batch, progress=lambda n: bar.advance(task, n))
        return written


def add_floor_commands(
    app: typer.Typer,
    settings: Callable[[], Settings],
    store: Callable[[Settings], tuple[object, FloorStore]],
) -> None:
    floor_app = typer.Typer(help="The live floor's indexes.", no_args_is_help=True)
    app.add_typer(floor_app, name="floor")

    @floor_app.command("reindex")
    def reindex(
        day: Annotated[
            str | None,
            typer.Option(help="Gaming day of sessions that record none (default: today's)."),
        ] = None,
    ) -> None:
        """Rebuild the indexes RAPS jackpots read (floor-place, floor-row, the day's spend)
        from the sessions on the floor: for data written before they existed, or to
        repair them. Idempotent; safe beside a running daemon."""
        conf = settings()

        async def run() -> tuple[int, str]:
            _, floor = store(conf)
            try:
                if day is not None:
                    gaming_day = dt.date.fromisoformat(day)
                else:
                    now = (await settings_clock(conf, floor.redis)).now()
                    calendar = GamingCalendar(conf.zone, conf.gaming_day_start)
                    gaming_day = calendar.gaming_day(now)
                with Progress(transient=True) as bar:
                    task = bar.add_task("reindexing the floor", total=None)
                    reindexed = await floor.reindex_floor(
                        gaming_day, progress=lambda k: bar.advance(task, k)
                    )
                return reindexed, gaming_day.isoformat()
            finally:
                await floor.redis.aclose()

        reindexed, when = asyncio.run(run())
        typer.echo(
            f"floor of site {conf.site} reindexed: {reindexed} card(s) on the floor ({when})"
        )
