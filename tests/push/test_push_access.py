"""Who may watch which stream, and what a client may send: 4401/4403 on both streams
(roles, sites, a screen's area), garbage frames closed with 4400 and no server error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import websockets

from bonusd.access.auth import Role
from bonusd.settings import Settings
from tests.daemon_helpers import Daemon
from tests.push.helpers import Message, closed_with, connect, draw_day, golden_horse, recv, token


@pytest.fixture
async def day(
    settings: Settings, tmp_path: Path, redis_url: str, site: str
) -> AsyncIterator[Daemon]:
    async with draw_day(golden_horse(settings, tmp_path, site), redis_url, site) as d:
        yield d


# -- who may watch what ---------------------------------------------------------------------------


async def test_tokens_roles_sites_and_areas(day: Daemon) -> None:
    d = day
    tokens = {role: await token(d, role) for role in Role}
    main_screen = await token(d, Role.SIGNAGE, "main")
    site = d.service.settings.site

    async def code(path: str, hello: Message | str | bytes | None, **query: str) -> int | None:
        ws = await connect(d, path, hello, **query)
        try:
            message = await recv(ws)
        except websockets.ConnectionClosed:
            return ws.close_code
        assert message["type"] == "snapshot", message
        await ws.close()
        return 0

    for path in ("/ws/signage", "/ws/crew"):
        area = {"area": "main"} if path == "/ws/signage" else {}
        assert await code(path, {"nope": 1}, **area) == 4401
        assert await code(path, {"token": ""}, **area) == 4401
        assert await code(path, {"token": "bd_x_y"}, **area) == 4401
        assert await code(path, {"token": "not-a-token"}, **area) == 4401
        assert await code(path, {"token": tokens[Role.KIOSK]}, **area) == 4403
    assert await code("/ws/signage", {"token": tokens[Role.CREW]}, area="main") == 4403
    assert await code("/ws/signage", {"token": tokens[Role.DESK]}, area="main") == 4403
    assert await code("/ws/crew", {"token": tokens[Role.SIGNAGE]}) == 4403
    assert await code("/ws/crew", {"token": main_screen}) == 4403
    assert await code("/ws/crew", {"token": tokens[Role.CREW]}) == 0
    assert await code("/ws/crew", {"token": tokens[Role.DESK]}, site=site) == 0
    assert await code("/ws/crew", {"token": tokens[Role.CREW]}, site="elsewhere") == 4403
    # a screen's token fixes its area; one without an area says which it shows
    assert await code("/ws/signage", {"token": main_screen}) == 0
    assert await code("/ws/signage", {"token": main_screen}, area="main") == 0
    assert await code("/ws/signage", {"token": main_screen}, area="smoking") == 4403
    assert await code("/ws/signage", {"token": tokens[Role.SIGNAGE]}, area="smoking") == 0
    assert await code("/ws/signage", {"token": tokens[Role.SIGNAGE]}) == 4400
    assert await code("/ws/signage", {"token": tokens[Role.ADMIN]}, area="prive") == 0
    # the signage page may put its token on the URL instead
    assert await code("/ws/signage", None, token=main_screen) == 0
    assert await code("/ws/signage", None, token=main_screen, area="prive") == 4403
    assert await code("/ws/signage", None, token="bd_x_y", area="main") == 4401
    # an expired or revoked token is refused like a wrong one
    await d.service.tokens.revoke(main_screen.split("_")[1], d.service.clock.now())
    assert await code("/ws/signage", {"token": main_screen}) == 4401


# -- what a client may send -----------------------------------------------------------------------


async def test_garbage_from_a_client_closes_it_cleanly(
    day: Daemon, caplog: pytest.LogCaptureFixture
) -> None:
    d = day
    hello = {"token": await token(d, Role.CREW)}
    for frame, why in (
        ("not json at all", "not JSON"),
        (b"\x00\x01binary", "not binary"),
        ("[1, 2, 3]", "JSON object"),
        ('{"token": 42}', "token"),
        ("x" * 5000, "too long"),
        (json.dumps({**hello, "resume": {"epoch": 1, "seq": "a"}}), "resume"),
    ):
        ws = await connect(d, "/ws/crew", frame)
        code, reason = await closed_with(ws)
        assert code in (4400, 4401), (frame, code, reason)
        assert why.split()[-1] in reason, (frame, reason)
    # garbage after a good start
    ws = await connect(d, "/ws/crew", hello)
    assert (await recv(ws))["type"] == "snapshot"
    await ws.send(json.dumps({"type": "ping"}))  # allowed, ignored
    await ws.send("}{")
    code, reason = await closed_with(ws)
    assert (code, "not JSON" in reason) == (4400, True)
    ws = await connect(d, "/ws/crew", hello)
    await recv(ws)
    await ws.send(json.dumps({"type": "subscribe", "stream": "crew:elsewhere"}))
    assert (await closed_with(ws))[0] == 4400
    # a frame over the daemon's limit (64 KiB) is refused by the websocket layer itself
    ws = await connect(d, "/ws/crew", hello)
    await recv(ws)
    await ws.send("y" * 100_000)
    assert (await closed_with(ws))[0] == 1009
    # silence instead of a token: closed once the handshake time is over
    d.service.push.handshake_s = 0.2
    ws = await connect(d, "/ws/crew", None)
    assert await closed_with(ws) == (4408, "no token frame within 0.2 s")
    # the daemon serves on, and nothing was logged as a server error
    ws = await connect(d, "/ws/crew", hello)
    assert (await recv(ws))["type"] == "snapshot"
    await ws.close()
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
