"""`bonusd backup` and `bonusd restore`: the commands, with their progress bars; the work
is in bonusd/service/backup.py and bonusd/service/restore.py (docs/deploy.md, "Backups
and restores")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from bonusd.service.backup import Progress as Shown
from bonusd.service.backup import take_backup
from bonusd.service.restore import restore_backup
from bonusd.settings import Settings

_STAGES = {
    "snapshot": "receiving Redis's snapshot",
    "check": "checking the backup's files",
    "restore": "restoring the site's keys",
}


@contextmanager
def _bars() -> Iterator[Shown]:
    """A progress bar per stage on the terminal (bytes for files, keys for a restore)."""
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[done]}"))
    with Progress(*columns, transient=True) as bars:
        tasks: dict[str, TaskID] = {}

        def show(stage: str, done: int, total: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = bars.add_task(_STAGES.get(stage, stage), total=total, done="")
            of = f" of {total:,}" if total is not None else ""
            unit = "keys" if stage == "restore" else "bytes"
            bars.update(tasks[stage], completed=done, total=total, done=f"{done:,}{of} {unit}")

        yield show


def add_backup_commands(app: typer.Typer, settings: Callable[[], Settings]) -> None:
    @app.command()
    def backup(
        parent: Annotated[
            Path, typer.Argument(file_okay=False, help="Folder the backup's own folder goes in.")
        ],
        keep: Annotated[
            int, typer.Option(min=0, help="Then keep only the newest N backups of the site.")
        ] = 0,
    ) -> None:
        """Back the site up: a point-in-time snapshot of its Redis (Redis forks; nothing
        pauses), its audit archive and daily digests, and a manifest with checksums, in a
        new folder under PARENT. The key files are not included (docs/deploy.md)."""
        conf = settings()
        with _bars() as show:
            folder, manifest = take_backup(conf, parent, keep=keep, progress=show)
        snapshot, archive = manifest["snapshot"], manifest["archive"]
        typer.echo(f"backed up site {conf.site} to {folder} in {manifest['seconds']:.1f} s")
        typer.echo(f"  recovery point {manifest['recovery_point']} (the snapshot's instant)")
        trail = manifest["audit"]
        typer.echo(
            f"  snapshot {snapshot['bytes']:,} bytes; audit trail of {trail['records']} "
            f"record(s) or more, head {trail['head'][:16] or '-'}"
        )
        typer.echo(f"  audit archive: {archive['check']}; {len(manifest['digests'])} digest(s)")
        if not archive["ok"]:
            typer.echo(f"WARNING: the audit archive copied is broken: {archive['check']}", err=True)

    @app.command()
    def restore(
        folder: Annotated[
            Path, typer.Argument(exists=True, file_okay=False, help="A `bonusd backup` folder.")
        ],
        redis_server: Annotated[
            str, typer.Option(help="The redis-server that reads the snapshot back.")
        ] = "redis-server",
        without_key_files: Annotated[
            bool,
            typer.Option(
                "--without-key-files",
                help="Restore without the site's seed and receipt key files at hand.",
            ),
        ] = False,
    ) -> None:
        """Restore the site from a backup into BONUSD_REDIS_URL, which must hold no key of
        the site (stop its daemons first; start them when this says done). Everything is
        checked before anything is written (docs/deploy.md)."""
        conf = settings()
        with _bars() as show:
            done = restore_backup(
                conf,
                folder,
                redis_server=redis_server,
                without_key_files=without_key_files,
                progress=show,
            )
        typer.echo(
            f"restored site {conf.site} from {folder} in {done.seconds:.1f} s: {done.keys:,} "
            f"key(s), audit trail intact ({done.audit_records} records), layout {done.layout}"
        )
        typer.echo(f"  {done.archive}")
        typer.echo("  start the site's daemons now")
