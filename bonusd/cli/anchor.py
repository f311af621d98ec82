"""`bonusd audit digest` and `bonusd audit check-digest`: the daily anchor of the audit
trail on the command line (docs/anchor.md).

    bonusd audit digest [--day 2026-10-03] [--json]     print a finished day's digest, to sign
    bonusd audit check-digest digest-2026-10-03.txt ... check the chain against digests kept
                                                        outside: exit 0, or 1 naming the record
                                                        and both hashes

`check-digest` checks the live chain of `BONUSD_SITE`, or an export (`--from FILE`, from
`bonusd audit export`) or an audit archive (`--archive DIR`) without Redis.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, cast

import typer

from bonusd.audit.anchor import trail_digests
from bonusd.audit.archive import AuditArchive, jsonl_batches
from bonusd.audit.digest import (
    DayDigest,
    DigestCheck,
    DigestChecks,
    digest_text,
    last_finished_day,
    not_over,
    read_digest,
)
from bonusd.audit.store import AuditStore
from bonusd.cli.clock import settings_clock
from bonusd.cli.text import safe
from bonusd.clocks.clock import GamingCalendar
from bonusd.errors import AuditFormatError, BonusdError
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.settings import Settings

MAX_DIGEST_BYTES = 64 * 1024  # a digest is under 1 KB; a larger file is not one


async def live_digest(settings: Settings, day: str | None) -> DayDigest:
    """The digest of gaming day `day` (default: the last finished one) of the site's live
    trail, read a batch at a time (a season's trail is never held whole)."""
    redis = redis_client(settings)
    try:
        now = (await settings_clock(settings, redis)).now()
        calendar = GamingCalendar(settings.zone, settings.gaming_day_start)
        gaming_day = finished_day(calendar, day, now)
        audit = AuditStore(redis, Keys(settings.key_prefix, settings.site))
        found = await trail_digests(audit, [gaming_day], site=settings.site, calendar=calendar)
        return found[0]
    finally:
        await redis.aclose()


async def live_checks(settings: Settings, digests: list[DayDigest]) -> list[DigestCheck]:
    """`digests` checked against the site's live trail, read a batch at a time."""
    redis = redis_client(settings)
    try:
        checks = DigestChecks(digests)
        async for batch in AuditStore(redis, Keys(settings.key_prefix, settings.site)).batches():
            checks.add(batch)
        return checks.checks()
    finally:
        await redis.aclose()


def finished_day(calendar: GamingCalendar, day: str | None, now: dt.datetime) -> dt.date:
    """`day` (YYYY-MM-DD), or the last finished gaming day; a day not over refused."""
    if day is None:
        return last_finished_day(calendar, now)
    try:
        gaming_day = dt.date.fromisoformat(day)
    except ValueError as exc:
        raise typer.BadParameter(f"a gaming day is YYYY-MM-DD, got {safe(day)!r}") from exc
    if gaming_day > last_finished_day(calendar, now):
        raise BonusdError(not_over(calendar, gaming_day))
    return gaming_day


def read_digest_file(file: Path) -> DayDigest:
    with file.open("rb") as stream:
        data = stream.read(MAX_DIGEST_BYTES + 1)
    if len(data) > MAX_DIGEST_BYTES:
        raise AuditFormatError(f"{file}: over {MAX_DIGEST_BYTES} bytes, not a digest")
    try:
        return read_digest(data.decode("utf-8"), str(file))
    except UnicodeDecodeError as exc:
        raise AuditFormatError(f"{file}: not UTF-8 text, not a digest") from exc


def checks_of(
    settings: Callable[[], Settings],
    digests: list[DayDigest],
    sources: tuple[Path | None, Path | None],
) -> list[DigestCheck]:
    """`digests` checked against an export (`sources[0]`), an audit archive (`sources[1]`:
    its own links, as it may start past retention) or the live chain of `BONUSD_SITE`."""
    export, archive = sources
    if export is not None and archive is not None:
        raise typer.BadParameter("give --from or --archive, not both")
    if export is None and archive is None:
        return asyncio.run(live_checks(settings(), digests))
    checks = DigestChecks(digests, anywhere=export is None)
    files = [export] if export is not None else AuditArchive(cast(Path, archive)).segments()
    for batch in jsonl_batches(files):  # a line at a time: the file is never held whole
        checks.add(batch)
    return checks.checks()


def add_anchor_commands(audit_app: typer.Typer, settings: Callable[[], Settings]) -> None:
    @audit_app.command("digest")
    def audit_digest(
        day: Annotated[
            str | None,
            typer.Option(help="The gaming day, YYYY-MM-DD (default: the last finished one)."),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="As one JSON object.")] = False,
    ) -> None:
        """Print a finished gaming day's digest of the audit chain's head: site, day, last
        seq, head hash and code, with a line for the compliance officer's signature."""
        digest = asyncio.run(live_digest(settings(), day))
        if as_json:
            typer.echo(json.dumps({**digest.payload(), "intact": digest.intact}, sort_keys=True))
            return
        typer.echo(digest_text(digest), nl=False)

    @audit_app.command("check-digest")
    def audit_check_digest(
        files: Annotated[
            list[Path],
            typer.Argument(
                exists=True,
                dir_okay=False,
                help="Digest files: the daemon's, or saved from `bonusd audit digest` or "
                "GET /audit/digest.",
            ),
        ],
        export: Annotated[
            Path | None,
            typer.Option(
                "--from", exists=True, dir_okay=False, help="Check this `audit export` file."
            ),
        ] = None,
        archive: Annotated[
            Path | None,
            typer.Option(exists=True, file_okay=False, help="Check this audit archive folder."),
        ] = None,
    ) -> None:
        """Check the audit chain against digests kept outside it: exit 0 when the chain is
        intact and still holds each digest's record with its hash; exit 1 naming the
        record and both hashes when it was rewritten."""
        read = [(file, read_digest_file(file)) for file in files]
        site = settings().site if export is None and archive is None else None
        for file, digest in read:
            if site is not None and digest.site != site:
                raise BonusdError(
                    f"{file} is a digest of site {digest.site}, not of {site}: "
                    "set BONUSD_SITE to its site"
                )
        checks = checks_of(settings, [digest for _, digest in read], (export, archive))
        failed = 0
        for (file, _), check in zip(read, checks, strict=True):
            failed += not check.ok
            typer.echo(safe(f"{file}: {'ok' if check.ok else 'FAILED'}: {check}"))
        if failed:
            typer.echo(f"{failed} of {len(read)} digest(s) do not match the chain")
            raise typer.Exit(1)
