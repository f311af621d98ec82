"""`bonusd staff add|list|disable|enable|reset-pin` (bonusd/cli/staff.py) as an operator runs
them, against the real Redis: the PIN comes from stdin and is never printed; a name with
a control character is refused; disabling and a PIN reset end the open sessions; each
change is in the audit trail with who ran it."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from redis.asyncio import Redis
from typer.testing import CliRunner

from bonusd.access.auth import AuthError, TokenStore
from bonusd.access.sessions import StaffSessions
from bonusd.access.staff import StaffError
from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.cli import main as cli
from bonusd.clocks.clock import WallClock
from bonusd.infra.keys import Keys


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, site: str, redis_url: str) -> None:
    monkeypatch.setenv("BONUSD_SITE", site)
    monkeypatch.setenv("BONUSD_REDIS_URL", redis_url)
    monkeypatch.delenv("BONUSD_CLOCK", raising=False)
    monkeypatch.delenv("BONUSD_CLOCK_START", raising=False)


async def staff(*args: str, stdin: str = "") -> str:
    result = await asyncio.to_thread(CliRunner().invoke, cli.app, ["staff", *args], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.usefixtures("env")
async def test_add_list_disable_and_reset_pin(aredis: Redis, site: str) -> None:
    added = await staff(
        "add", "1042", "--name", "Naledi Mahlangu", "--role", "desk", stdin="24681357\n"
    )
    assert "added staff 1042: 'Naledi Mahlangu', desk, active" in added
    assert "24681357" not in added
    listed = await staff("list")
    assert "1042" in listed and "Naledi Mahlangu" in listed and "argon2" not in listed
    keys = Keys("bonusd", site)
    sessions = StaffSessions(aredis, keys, TokenStore(aredis, keys))
    now = WallClock().now()
    _, first = await sessions.sign_in("1042", "24681357", now)
    disabled = await staff("disable", "1042")
    assert "disabled; 1 open session(s) ended" in disabled
    with pytest.raises(AuthError, match="account disabled"):
        await sessions.tokens.check(first.token, now + dt.timedelta(seconds=1))
    assert "active" in await staff("enable", "1042")
    _, second = await sessions.sign_in("1042", "24681357", now)
    reset = await staff("reset-pin", "1042", stdin="97531864\n")
    assert "1 open session(s) ended" in reset and "97531864" not in reset
    with pytest.raises(AuthError, match="PIN reset"):
        await sessions.tokens.check(second.token, now + dt.timedelta(seconds=1))
    await sessions.sign_in("1042", "97531864", now)
    trail = [r for r in await AuditStore(aredis, keys).records() if r.kind == Kind.STAFF]
    assert [(r.payload["staff"], r.payload["change"]) for r in trail] == [
        ("1042", "added"),
        ("1042", "disabled"),
        ("1042", "enabled"),
        ("1042", "pin reset"),
    ]
    assert all(r.actor.endswith("(command line)") for r in trail)
    assert not any(pin in r.to_json() for r in trail for pin in ("24681357", "97531864"))


@pytest.mark.usefixtures("env")
async def test_bad_input_is_refused_and_the_pin_never_shown() -> None:
    with pytest.raises(StaffError, match="control or text-direction") as bad_name:
        await staff("add", "7", "--name", "Eve\u202elivE", "--role", "crew", stdin="24681357\n")
    assert "24681357" not in str(bad_name.value)
    with pytest.raises(StaffError, match="6 to 8 digits") as short:
        await staff("add", "7", "--name", "Eve", "--role", "crew", stdin="1234\n")
    assert "1234" not in str(short.value)
    with pytest.raises(StaffError, match="crew, desk or admin"):
        await staff("add", "7", "--name", "Eve", "--role", "kiosk", stdin="24681357\n")
