"""`bonusd screens`: pair a floor screen by the code it shows, list the screens, move one to
another area (docs/security.md, "Paired screens and machine credentials").

    bonusd screens pair K7M-4QX --area main --name "Bar 3"
    bonusd screens list
    bonusd screens move 3f9c0a1b2c4d --area bar

Every command acts on `BONUSD_SITE` in `BONUSD_REDIS_URL`, on the daemon's clock, as the
desk's Screens panel does; the records name the operator's login ("command line (ops)").
A screen is revoked like any token: `bonusd tokens revoke ID`.
"""

from __future__ import annotations

import asyncio
import os
import pwd
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import redis.asyncio as aioredis
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bonusd.access.auth import TokenStore
from bonusd.access.machines import Credential, Machines
from bonusd.access.pairing import PairingStore, shown_code
from bonusd.cli.clock import settings_clock
from bonusd.cli.text import cell, safe
from bonusd.clocks.clock import Clock
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.settings import Settings

T = TypeVar("T")
Parts = tuple[PairingStore, Machines, Clock]
COLUMNS = ("id", "name", "area", "connection", "last seen", "size", "version", "paired by")


def operator() -> str:
    """Who runs the command, as the records name them."""
    try:
        login = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        login = f"uid {os.getuid()}"
    return f"command line ({login})"


def _run(settings: Settings, work: Callable[[Parts], Awaitable[T]]) -> T:
    async def main() -> T:
        redis: aioredis.Redis = redis_client(settings)
        try:
            keys = Keys(settings.key_prefix, settings.site)
            tokens = TokenStore(redis, keys)
            clock = await settings_clock(settings, redis)  # the daemon's clock
            return await work(
                (PairingStore(redis, keys, tokens), Machines(redis, keys, tokens), clock)
            )
        finally:
            await redis.aclose()

    return asyncio.run(main())


def _row(screen: Credential) -> list[Text]:
    facts = screen.facts
    state = (
        screen.state if screen.state != "active" else ("connected" if screen.online else "offline")
    )
    size = f"{facts['width']}×{facts['height']}" if facts.get("width") else ""
    version, paired_by = facts.get("version", ""), facts.get("paired_by", "")
    values = (screen.id, screen.name, screen.area, state, screen.last_used, size, version)
    return [cell(v) for v in (*values, paired_by)]


def add_screen_commands(app: typer.Typer, settings: Callable[[], Settings]) -> None:
    """Add `bonusd screens pair|list|move` to `app`."""
    screens = typer.Typer(help="Floor screens paired by code.", no_args_is_help=True)
    app.add_typer(screens, name="screens")

    @screens.command("pair")
    def pair(
        code: Annotated[str, typer.Argument(help="The code the screen shows, e.g. K7M-4QX.")],
        area: Annotated[str, typer.Option(help="The area of the floor it shows, e.g. main.")],
        name: Annotated[str, typer.Option(help="Where it hangs, e.g. 'Bar 3'.")],
    ) -> None:
        """Approve the screen showing CODE: it collects its own credential within seconds."""

        async def work(parts: Parts) -> str:
            pairing, _, clock = parts
            approved = await pairing.approve(
                code, area=area, name=name, by=operator(), by_token="", client="", now=clock.now()
            )
            shown = shown_code(approved.code)
            return f"screen showing {shown} paired as {approved.name!r} in area {approved.area}"

        typer.echo(safe(_run(settings(), work)))  # a refusal: PairingError, exit status 2
        typer.echo(
            "It picks up its credential within a few seconds; `bonusd screens list` shows it."
        )

    @screens.command("list")
    def list_screens() -> None:
        """The paired screens: area, connection state, last seen, size and version."""
        site = settings()

        async def work(parts: Parts) -> list[Credential]:
            _, machines, clock = parts
            return await machines.all(clock.now(), kind="screen")

        table = Table(title=f"screens of site {site.site}")
        for column in COLUMNS:
            table.add_column(column)
        for screen in _run(site, work):
            table.add_row(*_row(screen))
        Console().print(table)

    @screens.command("move")
    def move(
        screen_id: Annotated[str, typer.Argument(help="The screen's id from `screens list`.")],
        area: Annotated[str, typer.Option(help="The area it shows from now on.")],
    ) -> None:
        """Show another area on a screen: its stream switches at once."""

        async def work(parts: Parts) -> Credential:
            _, machines, clock = parts
            return await machines.move(screen_id, area, clock.now(), by=operator())

        moved = _run(settings(), work)
        typer.echo(safe(f"screen {moved.id} ({moved.name!r}) now shows area {moved.area}"))
