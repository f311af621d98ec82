"""Hostile input at the websocket doors (issue 14, item 7): every query parameter and every
frame a client sends on `/ws/signage` and `/ws/crew` is checked before anything acts on
it. Bad input closes with 4400 and a reason, logs at most one short line, never an
exception. A real daemon (uvicorn, Redis, Mosquitto); raw URLs and frames sent with the
`websockets` library, with no token needed for the query cases.

The pure checks themselves (`bonusd.push.input`) are exercised case by case at the end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import websockets

from bonusd.access.auth import Role
from bonusd.push.input import (
    CREW_PARAMS,
    SIGNAGE_PARAMS,
    Query,
    Refused,
    check_ping,
    json_object,
    parse_hello,
    parse_query,
)
from bonusd.settings import Settings
from tests.daemon_helpers import Daemon
from tests.push.helpers import closed_with, draw_day, golden_horse, recv, token

VALID = "bd_0123456789ab_" + "A" * 43  # the shape of a token (unknown: refused 4401)
EPOCH = "0123456789abcdef"

SIGNAGE_QUERIES = [
    f"token={VALID}&epoch=e&seq=%C2%B2",  # the reported one: a Unicode superscript two
    f"token={VALID}&epoch={EPOCH}&seq=%D9%A1",  # an Arabic-Indic digit one
    f"token={VALID}&epoch={EPOCH}&seq=12a",  # not digits
    f"token={VALID}&epoch={EPOCH}&seq=-1",
    f"token={VALID}&epoch={EPOCH}&seq=" + "9" * 40,  # a huge number
    f"token={VALID}&epoch={EPOCH}&seq=99999999999999999999",  # 20 digits: past 64 bits
    f"token={VALID}&epoch=&seq=1",  # an empty epoch
    f"token={VALID}&epoch={EPOCH}",  # epoch without seq
    f"area=main&epoch={EPOCH}&seq=1",  # a resume without a URL token
    "token=" + "a" * 200,  # an overlong token
    "token=" + "a" * 5000,  # an overlong query string
    "token=bd_x%0A_y",  # a newline in the token
    f"token={VALID}%00",
    "area=ma%00in",  # control characters
    "area=main%0A",  # a trailing newline ($ in a regex would let it through)
    "area=%1B%5B2J",  # a terminal escape
    "area=%E2%80%AEmain",  # a right-to-left override
    "area=%FF%FE",  # not UTF-8
    "area=" + "a" * 33,
    "area=MAIN",
    "area=main&area=smoking",  # repeated
    f"token={VALID}&token={VALID}",
    "area=main&site=de%0Amo",
    "area=main&site=",
    "area=main&debug=1",  # a parameter no stream takes
    "area=main&area",  # a name without a value
    "%00=1&area=main",
    "area=main&" + "&".join(f"x{n}=1" for n in range(200)),  # over 512 bytes
    "&".join(f"area={n}" for n in range(9)),  # nine: more than any stream takes
]
CREW_QUERIES = [
    "site=a&site=b",
    f"token={VALID}",  # the crew sends its token in the first frame, never on the URL
    f"epoch={EPOCH}&seq=1",
    "area=main",
    "site=%00",
    "site=%C2%B2",
    "site=" + "s" * 40,
    "site=" + "s" * 5000,
]


def raw_resume(tok: str, seq: str) -> str:
    """A hello whose resume seq is `seq` as written (what `json.dumps` would not write)."""
    return json.dumps({"token": tok, "resume": {"epoch": EPOCH, "seq": 0}})[:-3] + seq + "}}"


def first_frames(tok: str) -> list[str | bytes]:
    resume = {"epoch": EPOCH, "seq": 1}
    return [
        b"\x00\x01binary",
        b'{"token": "x"}',  # JSON, but binary
        "x" * 60_000,  # under the websocket layer's 64 KiB, over the 4,096 characters
        "not json at all",
        "{",
        "[" * 2000 + "]" * 2000,  # deep JSON within 4,096 characters
        '{"a":' * 600 + "1" + "}" * 600,
        '{"token": ' + "[" * 5 + "]" * 5 + "}",
        json.dumps({"token": "\ud800"}),  # an escaped lone surrogate
        json.dumps({"token": "bd_\u0000_x"}),
        json.dumps({"token": "bd_x_\u202eevil"}),
        json.dumps({"token": "a" * 3000}),
        json.dumps({"token": tok, "x": 1}),
        json.dumps({"token": tok, "resume": [1]}),
        json.dumps({"token": tok, "resume": {"epoch": EPOCH}}),
        json.dumps({"token": tok, "resume": {**resume, "seq": 10**200}}),
        json.dumps({"token": tok, "resume": {**resume, "seq": 2**63}}),
        json.dumps({"token": tok, "resume": {**resume, "seq": 1.5}}),
        json.dumps({"token": tok, "resume": {**resume, "seq": True}}),
        json.dumps({"token": tok, "resume": {**resume, "seq": "1"}}),
        raw_resume(tok, "NaN"),
        json.dumps({"token": tok, "resume": {**resume, "epoch": "\u0000"}}),
        json.dumps({"token": tok, "resume": {**resume, "epoch": "e" * 65}}),
        json.dumps({"token": tok, "resume": {**resume, "extra": 1}}),
        raw_resume(tok, "1e999"),
        raw_resume(tok, "9" * 3900),  # a number Python parses (under 4,300 digits)
    ]


LATER_FRAMES: list[str | bytes] = [
    b"\x00",
    "x" * 60_000,
    "}{",
    "[" * 2000 + "]" * 2000,
    '{"type": "ping", "x": 1}',
    '{"type": "subscribe", "stream": "crew:elsewhere"}',
    json.dumps({"type": "ping" * 1000}),
    "[]",
    "null",
]


@pytest.fixture
async def day(
    settings: Settings, tmp_path: Path, redis_url: str, site: str
) -> AsyncIterator[Daemon]:
    async with draw_day(golden_horse(settings, tmp_path, site), redis_url, site) as d:
        d.service.push.handshake_s = 3  # a door that waits for a frame is not what is tested
        yield d


def base(d: Daemon) -> str:
    return str(d.http.base_url).replace("http://", "ws://").rstrip("/")


def quiet(caplog: pytest.LogCaptureFixture, connections: int) -> None:
    """No ERROR (no exception) anywhere; at most one short line per refused connection."""
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage()[:200] for r in errors[:3]]
    door = [
        r
        for r in caplog.records
        if r.name.startswith(("bonusd.api.push", "bonusd.push.hub", "uvicorn", "websockets"))
    ]
    assert len(door) <= connections, [r.getMessage()[:200] for r in door[:5]]
    assert all(len(r.getMessage()) < 200 for r in door)


async def test_hostile_query_strings_close_4400_on_every_route(
    day: Daemon, caplog: pytest.LogCaptureFixture
) -> None:
    d = day
    caplog.set_level(logging.DEBUG, logger="bonusd.api.push")
    caplog.clear()
    cases = [("/ws/signage", q) for q in SIGNAGE_QUERIES] + [("/ws/crew", q) for q in CREW_QUERIES]
    for path, query in cases:
        ws = await websockets.connect(f"{base(d)}{path}?{query}", max_size=None)
        code, reason = await closed_with(ws)  # no frame sent: refused on the query alone
        assert code == 4400, (path, query[:80], code, reason)
        assert reason and query[:20] not in reason, (query[:80], reason)
    quiet(caplog, len(cases))
    # the daemon serves on: a good screen still gets its snapshot
    good = await token(d, Role.SIGNAGE, "main")
    ws = await websockets.connect(
        f"{base(d)}/ws/signage?token={good}&site={d.service.settings.site}"
    )
    assert (await recv(ws))["type"] == "snapshot"
    await ws.close()


@pytest.mark.parametrize("path", ["/ws/signage?area=main", "/ws/crew"])
async def test_hostile_frames_close_4400_on_every_route(
    day: Daemon, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    d = day
    role = Role.SIGNAGE if path.startswith("/ws/signage") else Role.CREW
    tok = await token(d, role)
    caplog.set_level(logging.DEBUG, logger="bonusd.api.push")
    caplog.clear()
    connections = 0
    for frame in first_frames(tok):
        ws = await websockets.connect(f"{base(d)}{path}", max_size=None)
        connections += 1
        await ws.send(frame)
        code, reason = await closed_with(ws)
        assert code == 4400 and reason, (str(frame)[:80], code, reason)
    for frame in LATER_FRAMES:  # after a good start
        ws = await websockets.connect(f"{base(d)}{path}", max_size=None)
        connections += 1
        await ws.send(json.dumps({"token": tok}))
        assert (await recv(ws))["type"] == "snapshot"
        await ws.send('{"type": "ping"}')  # allowed, ignored
        await ws.send(frame)
        code, reason = await closed_with(ws)
        assert code == 4400 and reason, (str(frame)[:80], code, reason)
    # over the websocket layer's 64 KiB: closed by uvicorn itself (1009, "message too big")
    ws = await websockets.connect(f"{base(d)}{path}", max_size=None)
    await ws.send("y" * 100_000)
    assert (await closed_with(ws))[0] == 1009
    quiet(caplog, connections + 1)
    assert d.service.push.subscribers == 0


# -- the checks alone -----------------------------------------------------------------------------


def test_the_query_checks() -> None:
    def query(raw: str, allowed: frozenset[str] = SIGNAGE_PARAMS) -> Query:
        return parse_query(raw.encode(), allowed)

    q = query(f"token={VALID}&epoch={EPOCH}&seq=42&area=main&site=demo")
    assert q.hello is not None and q.hello.resume == (EPOCH, 42)
    assert (q.area, q.site) == ("main", "demo")
    assert query("area=main").hello is None
    assert query("site=demo", CREW_PARAMS).site == "demo"
    for raw in SIGNAGE_QUERIES:
        with pytest.raises(Refused) as refused:
            query(raw)
        assert refused.value.code == 4400
    for raw in CREW_QUERIES:
        with pytest.raises(Refused):
            query(raw, CREW_PARAMS)


def test_the_frame_checks() -> None:
    def frame(text: str | bytes) -> dict[str, object]:
        return json_object({"text": text} if isinstance(text, str) else {"bytes": text})

    hello = parse_hello(frame(json.dumps({"token": VALID, "resume": {"epoch": EPOCH, "seq": -1}})))
    assert hello.resume == (EPOCH, -1)  # a seq that cannot be replayed: a snapshot
    assert parse_hello(frame(json.dumps({"token": VALID}))).resume is None
    for text in first_frames(VALID):
        with pytest.raises(Refused) as refused:
            parse_hello(frame(text))
        assert refused.value.code == 4400, text[:80]
    with pytest.raises(Refused) as refused:
        parse_hello(frame('{"nope": 1}'))
    assert refused.value.code == 4401  # no token at all
    check_ping(frame('{"type": "ping"}'))
    for text in LATER_FRAMES:
        with pytest.raises(Refused):
            check_ping(frame(text))
