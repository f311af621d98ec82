"""`bonusd staff add|list|disable|enable|reset-pin`: the staff accounts people sign in with
at the crew handhelds and the promotions desk (docs/security.md, "Staff sign-in").

A PIN is asked at the terminal twice without echo, or read as the first line of a pipe
(`printf '%s\\n' "$PIN" | bonusd staff add ...`); it is never an argument (arguments land
in the shell's history and the process list) and never printed. Disabling an account or
resetting its PIN ends every open session of it at once (the daemon closes its pages'
websockets), on the daemon's clock, as the desk's admin panel does.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from bonusd.access.auth import TokenStore
from bonusd.access.sessions import StaffSessions
from bonusd.access.staff import StaffError, StaffMember, check_pin
from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.cli.clock import settings_clock
from bonusd.cli.text import cell, safe
from bonusd.clocks.clock import Clock
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.settings import Settings

T = TypeVar("T")
Job = Callable[[StaffSessions, Clock], Awaitable[T]]


def read_pin(*, interactive: bool) -> str:
    """A staff PIN from the terminal (typed twice, not echoed) or the first line of stdin."""
    if not interactive:
        return check_pin(sys.stdin.readline().strip())
    pin = check_pin(getpass.getpass("PIN (6 to 8 digits, not shown): "))
    if getpass.getpass("the same PIN again: ") != pin:
        raise StaffError("the two PINs differ; nothing was changed")
    return pin


def _line(member: StaffMember) -> str:
    state = "disabled" if member.disabled else "active"
    return safe(f"staff {member.number}: {member.name!r}, {member.role}, {state}")


def add_staff_commands(app: typer.Typer, settings: Callable[[], Settings]) -> None:
    staff_app = typer.Typer(
        help="Staff accounts: sign-in at the crew handhelds and the desk.", no_args_is_help=True
    )
    app.add_typer(staff_app, name="staff")

    def run(job: Job[T], change: str = "") -> T:
        return _run(settings(), job, change)

    @staff_app.command("add")
    def add(
        number: Annotated[str, typer.Argument(help="The staff number (what the badge types).")],
        name: Annotated[str, typer.Option(help="The person's name, as the records show it.")],
        role: Annotated[str, typer.Option(help="crew, desk or admin.")],
    ) -> None:
        """Add a staff account; its PIN (6 to 8 digits) is asked twice, or read from a pipe."""
        pin = read_pin(interactive=sys.stdin.isatty())

        async def job(sessions: StaffSessions, clock: Clock) -> StaffMember:
            return await sessions.staff.add(
                number=number, name=name, role=role, pin=pin, now=clock.now()
            )

        typer.echo(f"added {_line(run(job, 'added'))}")

    @staff_app.command("list")
    def list_staff() -> None:
        """List the staff accounts (never a PIN or its hash)."""

        async def job(sessions: StaffSessions, _: Clock) -> list[StaffMember]:
            return await sessions.staff.list()

        table = Table(title=f"staff of site {settings().site}")
        for col in ("number", "name", "role", "state", "changed"):
            table.add_column(col)
        for member in run(job):
            state = "disabled" if member.disabled else "active"
            fields = (member.number, member.name, member.role, state, member.changed)
            table.add_row(*map(cell, fields))
        Console().print(table)

    @staff_app.command("disable")
    def disable(number: Annotated[str, typer.Argument(help="The staff number.")]) -> None:
        """Disable an account: no more sign-ins, and its open sessions end at once."""
        changed, ended = run(_switch(number, disabled=True), "disabled")
        typer.echo(f"{_line(changed)}; {ended} open session(s) ended")

    @staff_app.command("enable")
    def enable(number: Annotated[str, typer.Argument(help="The staff number.")]) -> None:
        """Enable a disabled account again."""
        changed, _ = run(_switch(number, disabled=False), "enabled")
        typer.echo(_line(changed))

    @staff_app.command("reset-pin")
    def reset_pin(number: Annotated[str, typer.Argument(help="The staff number.")]) -> None:
        """Set a new PIN (asked twice, or read from a pipe): a lock after wrong PINs lifts,
        and open sessions end at once."""
        pin = read_pin(interactive=sys.stdin.isatty())

        async def job(sessions: StaffSessions, clock: Clock) -> tuple[StaffMember, int]:
            return await sessions.reset_pin(number, pin, clock.now())

        changed, ended = run(job, "pin reset")
        typer.echo(f"new PIN for {_line(changed)}; {ended} open session(s) ended")


def _run(conf: Settings, job: Job[T], change: str) -> T:
    """Run `job`; a `change` to an account also goes into the audit trail."""

    async def main() -> T:
        redis = redis_client(conf)
        try:
            clock = await settings_clock(conf, redis)  # sessions end on the daemon's clock
            keys = Keys(conf.key_prefix, conf.site)
            done = await job(StaffSessions(redis, keys, TokenStore(redis, keys)), clock)
            if change:
                member = done[0] if isinstance(done, tuple) else done
                assert isinstance(member, StaffMember)
                await _recorded(AuditStore(redis, keys), clock, member, change)
            return done
        finally:
            await redis.aclose()

    return asyncio.run(main())


def operator_name() -> str:
    """Who a command's audit records name: the operating-system account running it."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        login = f"uid {os.getuid()}"
    return f"{login} (command line)"


async def _recorded(audit: AuditStore, clock: Clock, member: StaffMember, change: str) -> None:
    """A staff-account change into the hash-chained audit trail, as the daemon's API records
    it; the actor is the operating-system account that ran the command (never the PIN)."""
    await audit.append(
        at=clock.now(),
        actor=operator_name(),
        kind=Kind.STAFF,
        payload={"staff": member.number, "change": change, "role": str(member.role)},
    )


def _switch(number: str, *, disabled: bool) -> Job[tuple[StaffMember, int]]:
    async def job(sessions: StaffSessions, clock: Clock) -> tuple[StaffMember, int]:
        member = await sessions.staff.set_disabled(number, disabled, clock.now())
        if not disabled:
            return member, 0
        return member, await sessions.end_all(number, clock.now(), reason="account disabled")

    return job
