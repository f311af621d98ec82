"""The `bonusd` command line: run the daemon, import registries, inspect dead letters."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Annotated

import redis.asyncio as aioredis
import typer
from rich.console import Console
from rich.table import Table

from bonusd.access.auth import IssuedToken, Role, TokenStore
from bonusd.audit.archive import AuditArchive
from bonusd.audit.chain import ChainCheck
from bonusd.audit.store import AuditStore
from bonusd.cli.anchor import add_anchor_commands
from bonusd.cli.backup import add_backup_commands
from bonusd.cli.clock import add_clock_commands, settings_clock
from bonusd.cli.doctor import add_doctor_command
from bonusd.cli.draws import add_draw_commands
from bonusd.cli.export import export_trail
from bonusd.cli.floor import add_floor_commands, check_with_progress, import_with_progress
from bonusd.cli.pins import add_pin_commands
from bonusd.cli.rehearse import add_rehearse_command
from bonusd.cli.screens import add_screen_commands
from bonusd.cli.staff import add_staff_commands
from bonusd.cli.text import block, cell, safe, safe_lines
from bonusd.clocks.clock import Clock
from bonusd.errors import BonusdError
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import json_schemas
from bonusd.infra.allocator import use_allocator
from bonusd.infra.keys import Keys
from bonusd.infra.layout import layout_ready
from bonusd.infra.logformat import configure_logging
from bonusd.infra.redischeck import redis_ready
from bonusd.infra.redisclient import redis_client
from bonusd.infra.sdnotify import SystemdNotifier
from bonusd.infra.wholefile import written_whole
from bonusd.promotions.cli import app as promotions_app
from bonusd.registry.records import Device, Member
from bonusd.settings import Settings, load_settings

app = typer.Typer(help="bonusd: real-time casino floor bonusing.", no_args_is_help=True)
members_app = typer.Typer(help="The member registry.", no_args_is_help=True)
devices_app = typer.Typer(help="The device registry (EGMs and tables).", no_args_is_help=True)
telemetry_app = typer.Typer(help="The telemetry contract.", no_args_is_help=True)
tokens_app = typer.Typer(help="Bearer tokens: one role each.", no_args_is_help=True)
audit_app = typer.Typer(help="The hash-chained audit trail.", no_args_is_help=True)
app.add_typer(members_app, name="members")
app.add_typer(devices_app, name="devices")
app.add_typer(telemetry_app, name="telemetry")
app.add_typer(tokens_app, name="tokens")
app.add_typer(promotions_app, name="promotions")
app.add_typer(audit_app, name="audit")
err = Console(stderr=True)


def _settings() -> Settings:
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)  # BONUSD_LOG_FORMAT
    return settings


def _store(settings: Settings) -> tuple[aioredis.Redis, FloorStore]:
    redis = redis_client(settings)
    store = FloorStore(
        redis,
        Keys(settings.key_prefix, settings.site),
        dedup_ttl_s=settings.dedup_window_s,
        deadletter_maxlen=settings.deadletter_maxlen,
        deadletter_payload_bytes=settings.deadletter_payload_bytes,
    )
    return redis, store


@app.command()
def run() -> None:
    """Run the daemon: MQTT ingest, floor upkeep and the HTTP API, until SIGTERM. First
    waits for Redis and checks its persistence and eviction (BONUSD_REDIS_CHECK) and the
    layout version of the site's data (older: migrated; newer: refused)."""
    settings = _settings()
    use_allocator(settings.allocator)  # jemalloc: started again on it
    systemd = SystemdNotifier(settings.notify_socket)  # a Type=notify unit (deploy/systemd/)

    async def main() -> None:
        extend = "EXTEND_TIMEOUT_USEC=60000000"  # systemd waits while Redis is awaited

        def waiting(why: str) -> None:
            systemd.notify(f"STATUS={why}", extend)

        await redis_ready(settings, waiting=waiting)
        await layout_ready(settings, waiting=waiting)  # LayoutError: refused (docs/deploy.md)
        # imported here: the daemon's whole app (FastAPI, the printer's library) is 0.7 s of
        # start-up that the other commands do not need
        from bonusd.service.root import Service  # noqa: PLC0415

        async with Service(settings) as service:
            await service.run()

    asyncio.run(main())


@app.command()
def demo(
    *,
    floor: Annotated[
        str, typer.Option(help="A named floor of simulators/floors (ci, golden-horse, ...).")
    ] = "ci",
    seed: Annotated[int, typer.Option(help="Seed of the simulated floor.")] = 42,
    hours: Annotated[float, typer.Option(min=0.1, help="Simulated hours of play.")] = 12.0,
    speed: Annotated[
        float, typer.Option(min=1, max=10_000, help="Simulated seconds per wall second.")
    ] = 60.0,
    crew_after: Annotated[
        float,
        typer.Option(min=0, help="Wall seconds before the demo's crew takes an alert; 0: never."),
    ] = 8.0,
) -> None:
    """The main job: the demo promotion (promotions/demo/) on site demo, a simulated floor
    and the daemon with its pages, on the shared clock from 3 Oct 2026 16:55; starts over
    each run. Redis, broker, HTTP port and prefixes from the BONUSD_* settings."""
    # a development tool: loaded only when the command runs (docs/architecture.md)
    from simulators.demo.main import DemoOptions  # noqa: PLC0415
    from simulators.demo.main import main as run_demo  # noqa: PLC0415

    run_demo(_settings(), DemoOptions(floor, seed, hours, speed, crew_after))


@members_app.command("import")
def import_members(file: Annotated[Path, typer.Argument(exists=True, dir_okay=False)]) -> None:
    """Create or update members from a CSV or JSON file (all rows valid, or none written;
    then written in atomic batches: an interrupted import can simply be run again)."""
    settings = _settings()
    records = check_with_progress(Member, file)

    async def write() -> int:
        redis, store = _store(settings)
        try:
            return await import_with_progress(store, records)
        finally:
            await redis.aclose()

    typer.echo(f"imported {asyncio.run(write())} member(s) into site {settings.site}")


@devices_app.command("import")
def import_devices(file: Annotated[Path, typer.Argument(exists=True, dir_okay=False)]) -> None:
    """Create or update EGMs and tables from a CSV or JSON file."""
    settings = _settings()
    records = check_with_progress(Device, file).records()

    async def write() -> int:
        redis, store = _store(settings)
        try:
            return await store.import_devices(records)
        finally:
            await redis.aclose()

    typer.echo(f"imported {asyncio.run(write())} device(s) into site {settings.site}")


@app.command()
def deadletters(
    count: Annotated[int, typer.Option(min=1, help="How many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
) -> None:
    """List rejected telemetry messages with their reasons."""
    settings = _settings()

    async def read() -> tuple[list[dict[str, str]], dict[str, int]]:
        redis, store = _store(settings)
        try:
            return await store.deadletters(count), await store.stats()
        finally:
            await redis.aclose()

    rows, stats = asyncio.run(read())
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    table = Table(title=f"dead letters of site {settings.site} (newest first)")
    for col in ("arrived", "reason", "topic", "detail", "payload"):
        table.add_column(col, overflow="fold")
    for row in rows:  # what a device sent: shown, never obeyed, by the terminal
        fields = (row.get(c, "") for c in ("id", "reason", "topic", "detail"))
        table.add_row(*map(cell, fields), cell(row.get("payload", "")[:80]))
    Console().print(table)
    by_reason = {k.split(":", 1)[1]: v for k, v in stats.items() if k.startswith("deadletter:")}
    typer.echo(f"totals by reason: {json.dumps(by_reason, sort_keys=True)}")


@telemetry_app.command("schemas")
def schemas(
    out: Annotated[Path, typer.Option(help="Folder for one JSON Schema file per type.")] = Path(
        "docs/schemas"
    ),
) -> None:
    """Write the JSON Schema of every telemetry event type (generated from the decoder)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, schema in json_schemas().items():
        (out / f"{name}.schema.json").write_text(json.dumps(schema, indent=2) + "\n")
    typer.echo(f"wrote {len(json_schemas())} schema(s) to {out}")


async def _token_store(settings: Settings) -> tuple[aioredis.Redis, TokenStore, Clock]:
    redis = redis_client(settings)
    clock = await settings_clock(settings, redis)  # tokens expire on the daemon's clock
    return redis, TokenStore(redis, Keys(settings.key_prefix, settings.site)), clock


@tokens_app.command("issue")
def tokens_issue(
    role: Annotated[Role, typer.Option(help="The one role the token grants.")],
    name: Annotated[str, typer.Option(help="Who or what holds it, e.g. 'Screen main-3'.")],
    area: Annotated[str, typer.Option(help="For a signage screen: its area.")] = "",
    days: Annotated[float, typer.Option(min=0.001, help="Days until it expires.")] = 90.0,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print only the token.")] = False,
) -> None:
    """Issue a token. It is printed once and never stored; keep it safe."""
    settings = _settings()

    async def issue() -> IssuedToken:
        redis, store, clock = await _token_store(settings)
        try:
            return await store.issue(
                role=role, name=name, area=area, now=clock.now(), valid_for=dt.timedelta(days=days)
            )
        finally:
            await redis.aclose()

    issued = asyncio.run(issue())
    if quiet:
        typer.echo(issued.token)
        return
    principal = issued.principal
    typer.echo(
        f"token {principal.token_id}: role {principal.role}, {safe(repr(principal.name))}, "
        f"expires {principal.expires.isoformat()}"
    )
    typer.echo(issued.token)


@tokens_app.command("list")
def tokens_list() -> None:
    """List tokens (never their secrets)."""
    settings = _settings()

    async def read() -> list[dict[str, str]]:
        redis, store, _ = await _token_store(settings)
        try:
            return await store.list()
        finally:
            await redis.aclose()

    table = Table(title=f"tokens of site {settings.site}")
    for col in ("id", "role", "name", "area", "issued", "expires", "revoked"):
        table.add_column(col)
    for row in asyncio.run(read()):
        table.add_row(
            *(
                cell(row.get(c, ""))
                for c in ("id", "role", "name", "area", "issued", "expires", "revoked")
            )
        )
    Console().print(table)


@tokens_app.command("revoke")
def tokens_revoke(
    token_id: Annotated[str, typer.Argument(help="The id from `tokens list`.")],
) -> None:
    """Revoke a token at once."""
    settings = _settings()

    async def revoke() -> None:
        redis, store, clock = await _token_store(settings)
        try:
            await store.revoke(token_id, clock.now())
        finally:
            await redis.aclose()

    asyncio.run(revoke())
    typer.echo(f"revoked token {token_id}")


async def _audit_check(settings: Settings) -> ChainCheck:
    """The site's live chain checked a batch at a time (a season's trail is never held)."""
    redis = redis_client(settings)
    try:
        return await AuditStore(redis, Keys(settings.key_prefix, settings.site)).verify()
    finally:
        await redis.aclose()


@audit_app.command("verify")
def audit_verify(
    archive: Annotated[
        Path | None,
        typer.Option(file_okay=False, help="Check this audit archive folder instead of Redis."),
    ] = None,
) -> None:
    """Check every link of the site's audit chain; name the first broken one (exit 1)."""
    if archive is not None:  # the retention archive's month files (docs/retention.md)
        result = AuditArchive(archive).verify()
        typer.echo(f"{archive}: {result}")
        if not result.ok:
            raise typer.Exit(1)
        return
    settings = _settings()
    check = asyncio.run(_audit_check(settings))
    typer.echo(f"site {settings.site}: {check}")
    if not check.ok:
        raise typer.Exit(1)


@audit_app.command("export")
def audit_export(
    file: Annotated[
        Path, typer.Argument(dir_okay=False, help="JSON Lines file to write; - for stdout.")
    ],
    pools: Annotated[
        Path | None,
        typer.Option(file_okay=False, help="Also write every archived pool file here."),
    ] = None,
) -> None:
    """Write the site's audit trail as JSON Lines, one canonical record a line (read and
    written a batch at a time; `--pools`: each pool file and RAPS floor snapshot too)."""
    settings = _settings()
    if str(file) == "-":  # exact bytes into a pipe; on a terminal, its escapes made visible
        tty = sys.stdout.isatty()
        echo = lambda text: typer.echo(safe_lines(text) if tty else text, nl=False)  # noqa: E731
        done = asyncio.run(export_trail(settings, echo, pools))
    else:
        with written_whole(file) as out:
            done = asyncio.run(export_trail(settings, out.write, pools))
        typer.echo(f"wrote {done.records} audit record(s) of site {settings.site} to {file}")
    for line in done.unreadable:  # kept in Redis as it is; verify-draw reports its round
        typer.echo(safe(f"WARNING: not exported, unreadable: {line}"), err=True)
    if pools is not None:
        typer.echo(f"wrote {len(done.files)} pool file(s) to {pools}", err=str(file) == "-")


add_draw_commands(app, _settings)
add_anchor_commands(audit_app, _settings)
add_floor_commands(app, _settings, _store)
add_pin_commands(members_app, _settings)
add_clock_commands(app, _settings)
add_rehearse_command(app, _settings)
add_backup_commands(app, _settings)
add_screen_commands(app, _settings)  # floor screens paired by code
add_staff_commands(app, _settings)  # staff accounts for sign-in
add_doctor_command(app, _settings)  # a deployment checked from the inside


def main() -> None:
    """Console entry point: operator errors print as one clear message, exit status 2."""
    try:
        app()
    except BonusdError as exc:
        err.print("[red]error:[/red]", block(exc), highlight=False)  # the message may quote input
        raise SystemExit(2) from exc
