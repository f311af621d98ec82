"""Revoking or expiring a token reaches its open websockets (issue 14, item 3): a real
daemon (uvicorn, Redis, Mosquitto) on the Golden Horse halfway draw day, clients
speaking docs/push.md with the `websockets` library.

- `bonusd tokens revoke ID` (the command, against the same Redis) closes every socket of
  that token with 4401 and a reason; the socket receives no delta after the revocation
  (a draw round is run right after it: its alerts with member names go to the other
  crew, never to the revoked one); the token cannot open or resume a stream again.
- A revocation nobody heard (published while the hub was not listening) is found when
  the hub looks the held tokens up again.
- A token whose expiry passes on the daemon's clock is closed with 4401 and a reason,
  and cannot resume; a longer-lived token on the same stream stays open.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import websockets
from typer.testing import CliRunner

from bonusd.access.auth import Role
from bonusd.cli import main as cli
from bonusd.clocks.clock import ManualClock
from bonusd.push.hub import PushHub
from bonusd.settings import Settings
from tests.daemon_helpers import Daemon
from tests.push.helpers import (
    NAMES,
    Message,
    closed_with,
    connect,
    draw_day,
    golden_horse,
    recv,
    run_round,
    token,
    until,
)


@pytest.fixture
async def day(
    settings: Settings, tmp_path: Path, redis_url: str, site: str
) -> AsyncIterator[Daemon]:
    async with draw_day(golden_horse(settings, tmp_path, site), redis_url, site) as d:
        yield d


def token_id(tok: str) -> str:
    return tok.split("_")[1]


async def revoke_with_the_command(d: Daemon, tok: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bonusd tokens revoke ID`, as an operator runs it: its own process settings and
    Redis connection, nothing shared with the daemon but Redis."""
    s = d.service.settings
    monkeypatch.setenv("BONUSD_SITE", s.site)
    monkeypatch.setenv("BONUSD_REDIS_URL", str(s.redis_url))
    monkeypatch.setenv("BONUSD_KEY_PREFIX", s.key_prefix)
    result = await asyncio.to_thread(
        CliRunner().invoke, cli.app, ["tokens", "revoke", token_id(tok)]
    )
    assert result.exit_code == 0, result.output
    assert f"revoked token {token_id(tok)}" in result.output


def no_recheck(hub: PushHub, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the notification can close a socket now: the hub's periodic look-up of held
    tokens is off (it is shown on its own below)."""

    async def nothing() -> None:
        return None

    monkeypatch.setattr(hub, "recheck_tokens", nothing, raising=False)


async def read_until_closed(ws: websockets.ClientConnection) -> tuple[list[Message], int | None]:
    """Everything the socket receives until the server closes it (pings keep an open one
    talking: 20 s is a failure), and the close code."""
    got: list[Message] = []
    try:
        async with asyncio.timeout(20):
            while True:
                got.append(await recv(ws))
    except websockets.ConnectionClosed:
        return got, ws.close_code


async def test_revoking_a_token_closes_its_sockets_and_sends_them_nothing_more(
    day: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = day
    no_recheck(d.service.push, monkeypatch)
    stolen = await token(d, Role.CREW)
    kept = await token(d, Role.CREW)
    # two sockets of the stolen handheld's token, one of another handheld
    thief = await connect(d, "/ws/crew", {"token": stolen})
    thief2 = await connect(d, "/ws/crew", {"token": stolen})
    other = await connect(d, "/ws/crew", {"token": kept})
    for ws in (thief, thief2, other):
        first = await recv(ws)
        assert first["type"] == "snapshot" and first["state"]["alerts"] == []
    epoch, seq = first["epoch"], first["seq"]

    await revoke_with_the_command(d, stolen, monkeypatch)
    winners = await run_round(d, 1)  # alerts with full names and cards, right after
    got, code = await read_until_closed(thief)
    assert code == 4401
    assert thief.close_reason == f"token {token_id(stolen)} was revoked"
    # nothing after the revocation: no delta (the round's alerts) reached the thief
    assert [m for m in got if m["type"] != "ping"] == []
    got2, code2 = await read_until_closed(thief2)
    assert code2 == 4401 and [m for m in got2 if m["type"] != "ping"] == []
    # the other handheld is open and gets the round, names and all
    seen = await until(other, lambda m: len(m.get("set", {}).get("alerts", [])) == 5)
    alerts = seen[-1]["set"]["alerts"]
    assert {a["card"] for a in alerts} == winners
    assert {a["name"] for a in alerts} == {NAMES[c] for c in winners}

    # the revoked token opens nothing again, with or without a resume
    for hello in (
        {"token": stolen},
        {"token": stolen, "resume": {"epoch": epoch, "seq": seq}},
    ):
        ws = await connect(d, "/ws/crew", hello)
        code, reason = await closed_with(ws)
        assert (code, "revoked" in reason) == (4401, True)
    assert d.service.push.subscribers == 1
    await other.close()


async def test_a_revoked_screen_cannot_resume_from_its_url(
    day: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = day
    no_recheck(d.service.push, monkeypatch)
    screen = await token(d, Role.SIGNAGE, "main")
    ws = await connect(d, "/ws/signage", None, token=screen)
    snap = await recv(ws)
    await revoke_with_the_command(d, screen, monkeypatch)
    assert (await read_until_closed(ws))[1] == 4401
    again = await connect(
        d, "/ws/signage", None, token=screen, epoch=snap["epoch"], seq=str(snap["seq"])
    )
    code, reason = await closed_with(again)
    assert (code, "revoked" in reason) == (4401, True)


async def test_a_revocation_nobody_heard_is_found_on_the_next_look(day: Daemon) -> None:
    """The record is revoked in Redis but the notification is lost (no daemon listened
    then): the hub's look-up of the held tokens (each `TOKEN_RECHECK_TICKS` ticks and
    after each resubscription) closes the socket."""
    d = day
    crew = await token(d, Role.CREW)
    ws = await connect(d, "/ws/crew", {"token": crew})
    await recv(ws)
    key = f"{d.service.keys.base}token:{token_id(crew)}"
    await d.service.redis.hset(key, "revoked", d.service.clock.now().isoformat())
    await d.service.push.recheck_tokens()
    got, code = await read_until_closed(ws)
    assert code == 4401 and ws.close_reason == f"token {token_id(crew)} was revoked"
    assert [m for m in got if m["type"] != "ping"] == []


async def test_a_token_expiring_on_the_daemons_clock_closes_its_socket(day: Daemon) -> None:
    d = day
    clock = d.service.clock
    assert isinstance(clock, ManualClock)
    issued = await d.service.tokens.issue(
        role=Role.CREW, name="short", now=clock.now(), valid_for=dt.timedelta(seconds=90)
    )
    short, longer = issued.token, await token(d, Role.CREW)
    ws = await connect(d, "/ws/crew", {"token": short})
    stays = await connect(d, "/ws/crew", {"token": longer})
    snap = await recv(ws)
    await recv(stays)
    clock.advance(89)  # not yet: the socket is open and the token still works
    probe = await connect(d, "/ws/crew", {"token": short})
    assert (await recv(probe))["type"] == "snapshot"
    await probe.close()
    clock.advance(1)  # the token's expiry: 18:56:30 on the daemon's clock
    got, code = await read_until_closed(ws)
    assert code == 4401
    expires = issued.principal.expires.isoformat()
    assert ws.close_reason == f"token {token_id(short)} expired at {expires}"
    # the socket was told of the first advance (a delta of the clock alone), and of
    # nothing at or after the expiry
    deltas = [m for m in got if m["type"] == "delta"]
    assert [m for m in deltas if m["set"] or m["events"]] == []
    assert all(dt.datetime.fromisoformat(m["at"]) < issued.principal.expires for m in deltas)
    # the other token's socket is open
    await stays.send('{"type": "ping"}')
    await run_round(d, 1)
    assert (await until(stays, lambda m: "alerts" in m.get("set", {})))[-1]["set"]["alerts"]
    # an expired token cannot resume
    again = await connect(
        d, "/ws/crew", {"token": short, "resume": {"epoch": snap["epoch"], "seq": snap["seq"]}}
    )
    code, reason = await closed_with(again)
    assert (code, "expired" in reason) == (4401, True)
    await stays.close()
