"""The decoder on contract v2 events (`epoch` and `seq` in place of `id`), and the JSON
Schema's word for it: exactly one identity per event."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.telemetry import (
    MAX_SEQ,
    DecodeLimits,
    FloorEvent,
    Reason,
    Rejection,
    TelemetryDecoder,
    json_schemas,
)

JHB = ZoneInfo("Africa/Johannesburg")
NOW = dt.datetime(2026, 10, 3, 21, 0, tzinfo=JHB)
DEC = TelemetryDecoder(
    prefix="bonusd",
    site="gh",
    calendar=GamingCalendar(JHB, dt.time(8, 0)),
    limits=DecodeLimits(4096, dt.timedelta(minutes=5), dt.timedelta(days=7)),
)
EGM = "bonusd/gh/egm/EGM-0412/events"
GAME = {
    "type": "game",
    "ts": "2026-10-03T17:05:00.250+02:00",
    "card": "7001",
    "wager_cents": 500,
    "win_cents": 0,
    "points": 5,
}


def _body(**identity: object) -> dict[str, object]:
    return {**identity, **GAME}


def test_decodes_a_v2_game() -> None:
    event = DEC.decode(EGM, json.dumps(_body(epoch="boot-7f3a", seq=981)).encode(), NOW)
    assert isinstance(event, FloorEvent)
    assert (event.id, event.epoch, event.seq, event.device) == ("", "boot-7f3a", 981, "EGM-0412")
    v1 = DEC.decode(EGM, json.dumps(_body(id="g1")).encode(), NOW)
    assert isinstance(v1, FloorEvent) and (v1.id, v1.epoch, v1.seq) == ("g1", "", 0)


@pytest.mark.parametrize(
    ("identity", "detail"),
    [
        ({"id": "g1", "epoch": "b", "seq": 1}, "not both"),
        ({"id": "g1", "seq": 1}, "not both"),
        ({"epoch": "b"}, "`seq` is missing"),
        ({"seq": 3}, "`epoch` is missing"),
        ({}, "needs `id`"),
        ({"epoch": "b", "seq": 0}, ">= 1"),
        ({"epoch": "b", "seq": MAX_SEQ + 1}, "<= 9007199254740991"),
        ({"epoch": "b", "seq": 1.0}, "Expected `int`"),
        ({"epoch": "b", "seq": "1"}, "Expected `int`"),
        ({"epoch": "", "seq": 1}, "length >= 1"),
        ({"epoch": "e" * 65, "seq": 1}, "length <= 64"),
        ({"epoch": "boot\u202e1", "seq": 1}, "epoch holds an unprintable character U+202E"),
        ({"epoch": "boot\t1", "seq": 1}, "unprintable character U+0009"),
        ({"epoch": 7, "seq": 1}, "Expected `str`"),
    ],
)
def test_a_v2_identity_is_whole_or_refused(identity: dict[str, object], detail: str) -> None:
    body = {**identity, **GAME}
    rejected = DEC.decode(EGM, json.dumps(body).encode(), NOW)
    assert isinstance(rejected, Rejection)
    assert rejected.reason == Reason.INVALID
    assert detail in rejected.detail


def test_a_null_identity_field_is_invalid() -> None:
    rejected = DEC.decode(EGM, json.dumps({"epoch": None, "seq": 1, **GAME}).encode(), NOW)
    assert isinstance(rejected, Rejection) and rejected.reason == Reason.INVALID


@pytest.mark.parametrize(
    ("identity", "valid"),
    [
        ({"id": "g1"}, True),
        ({"epoch": "b", "seq": 1}, True),
        ({"id": "g1", "epoch": "b", "seq": 1}, False),
        ({"id": "g1", "epoch": "b"}, False),
        ({"epoch": "b"}, False),
        ({"seq": 1}, False),
        ({}, False),
    ],
)
def test_the_schema_says_the_same(identity: dict[str, object], valid: bool) -> None:
    game = json_schemas()["game"]["$defs"]["Game"]  # type: ignore[index]
    assert not {"id", "epoch", "seq"} & set(game["required"])
    body = {**identity, **GAME}
    assert _satisfies(game, body) is valid
    assert isinstance(DEC.decode(EGM, json.dumps(body).encode(), NOW), FloorEvent) is valid


def _satisfies(schema: dict[str, Any], body: dict[str, object]) -> bool:
    """JSON Schema's `required`, `not`, `anyOf` and `oneOf`: what the identity rule uses."""
    if not set(schema.get("required", ())) <= set(body):
        return False
    if "not" in schema and _satisfies(schema["not"], body):
        return False
    if "anyOf" in schema and not any(_satisfies(s, body) for s in schema["anyOf"]):
        return False
    return "oneOf" not in schema or sum(_satisfies(s, body) for s in schema["oneOf"]) == 1
