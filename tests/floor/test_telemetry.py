"""The telemetry decoder and gaming-day arithmetic, without any service; every decode
path of the decoder with hostile input (issue 14)."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.effects import Effects
from bonusd.floor.rules import describe
from bonusd.floor.telemetry import (
    MAX_DEPTH,
    DecodeLimits,
    FloorEvent,
    Reason,
    Rejection,
    TelemetryDecoder,
    nesting_depth,
)
from tests.hostile_corpus import CORPUS, OVER_THE_PACKET_LIMIT, UNPRINTABLE, Hostile

JHB = ZoneInfo("Africa/Johannesburg")
CAL = GamingCalendar(JHB, dt.time(8, 0))
NOW = dt.datetime(2026, 10, 3, 21, 0, tzinfo=JHB)
LIMITS = DecodeLimits(4096, dt.timedelta(minutes=5), dt.timedelta(days=7))
DEC = TelemetryDecoder(prefix="bonusd", site="gh", calendar=CAL, limits=LIMITS)
EGM = "bonusd/gh/egm/EGM-0412/events"


def _game(**over: object) -> bytes:
    body: dict[str, object] = {
        "id": "g1",
        "type": "game",
        "ts": "2026-10-03T17:05:00.250+02:00",
        "card": "7001",
        "wager_cents": 500,
        "win_cents": 0,
        "points": 5,
    }
    body.update(over)
    return json.dumps(body).encode()


def test_decodes_a_game() -> None:
    ev = DEC.decode(EGM, _game(), NOW)
    assert ev == FloorEvent(
        id="g1",
        type="game",
        kind="egm",
        device="EGM-0412",
        card="7001",
        ts_ms=int(dt.datetime(2026, 10, 3, 15, 5, 0, 250000, tzinfo=dt.UTC).timestamp() * 1000),
        gaming_day="2026-10-03",
        area="",
        seat=0,
        wager_cents=500,
        win_cents=0,
        points=5,
    )


@pytest.mark.parametrize(
    ("topic", "payload", "reason"),
    [
        (EGM, b"x" * 5000, Reason.TOO_LARGE),
        (EGM, b"{not json", Reason.NOT_JSON),
        (EGM, _game(wager_cents=-1), Reason.INVALID),
        (EGM, _game(points=1.5), Reason.INVALID),
        (EGM, _game(ts="2026-10-03T17:05:00"), Reason.INVALID),  # no UTC offset
        (EGM, _game(type="bonus_round"), Reason.UNKNOWN_TYPE),
        (EGM, _game(ts="2026-10-03T21:06:00+02:00"), Reason.FUTURE),
        (EGM, _game(ts="2026-09-20T21:00:00+02:00"), Reason.TOO_OLD),
        ("bonusd/gh/table/T1/events", _game(), Reason.WRONG_DEVICE_KIND),
        ("bonusd/other/egm/EGM-1/events", _game(), Reason.BAD_TOPIC),
        ("bonusd/gh/egm/EGM-1/meters", _game(), Reason.BAD_TOPIC),
        ("bonusd/gh/egm//events", _game(), Reason.BAD_TOPIC),
    ],
)
def test_rejections_carry_a_reason(topic: str, payload: bytes, reason: Reason) -> None:
    out = DEC.decode(topic, payload, NOW)
    assert isinstance(out, Rejection)
    assert out.reason is reason
    assert out.detail


def test_small_clock_skew_is_accepted() -> None:
    assert isinstance(DEC.decode(EGM, _game(ts="2026-10-03T21:04:00+02:00"), NOW), FloorEvent)


@given(st.binary(max_size=600))
def test_decoder_never_raises_on_random_bytes(payload: bytes) -> None:
    out = DEC.decode(EGM, payload, NOW)
    assert isinstance(out, FloorEvent | Rejection)


@given(
    st.dictionaries(
        st.sampled_from(["id", "type", "ts", "card", "wager_cents", "win_cents", "points", "seat"]),
        st.one_of(st.none(), st.integers(-5, 10**13), st.text(max_size=30), st.booleans()),
    )
)
def test_decoder_never_raises_on_random_objects(body: dict[str, object]) -> None:
    out = DEC.decode(EGM, json.dumps(body).encode(), NOW)
    assert isinstance(out, FloorEvent | Rejection)
    if isinstance(out, FloorEvent):
        assert out.wager_cents >= 0
        assert out.points >= 0


def test_operations_keep_slots_and_tables_apart() -> None:
    egm = DEC.decode(EGM, _game(), NOW)
    table = DEC.decode(
        "bonusd/gh/table/T1/events",
        json.dumps(
            {
                "id": "r",
                "type": "rating_update",
                "ts": "2026-10-03T18:00:00+02:00",
                "card": "7001",
                "seat": 3,
                "avg_bet_cents": 1000,
                "wager_cents": 9000,
                "points": 90,
            }
        ).encode(),
        NOW,
    )
    assert isinstance(egm, FloorEvent)
    assert isinstance(table, FloorEvent)
    slots, tables = Effects(), Effects()
    describe(egm, slots)
    describe(table, tables)
    assert {f for _, f in slots.increments} >= {"slots_points", "slots_spend_cents"}
    assert not any(f.startswith("tables_") for _, f in slots.increments)
    assert {f for _, f in tables.increments} >= {"tables_points", "tables_spend_cents"}
    assert not any(f.startswith("slots_") for _, f in tables.increments)
    assert tables.sessions[0][3] == "T1#3"  # a table player sits at a seat


def test_effects_merge_a_batch() -> None:
    fx = Effects()
    for n in range(3):
        ev = DEC.decode(EGM, _game(id=f"g{n}", points=5, wager_cents=100), NOW)
        assert isinstance(ev, FloorEvent)
        describe(ev, fx)
    day = ("day:2026-10-03:7001", "slots_points")
    assert fx.increments[day] == 15  # three games, one increment
    assert len(fx.sessions) == 3  # session moves stay per event, in order


# -- hostile input: every decode path turns what it cannot take into a rejection ---------
# (issue 14: one 2 KB message of nested brackets raised RecursionError and stopped ingest)

POISON = ('{"x":' + "[" * 1000 + "]" * 1000 + "}").encode()
FLOOR_NOW = dt.datetime(2026, 10, 3, 20, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))


@pytest.mark.parametrize("item", CORPUS + OVER_THE_PACKET_LIMIT, ids=lambda h: h.what)
def test_the_hostile_corpus_is_refused_with_its_reason(item: Hostile) -> None:
    out = DEC.decode(f"bonusd/gh/{item.topic_tail}", item.payload, FLOOR_NOW)
    assert isinstance(out, Rejection), item.what
    assert out.reason is item.reason, (item.what, out)
    assert out.detail.strip()


def test_the_issue_poison_is_too_deep() -> None:
    out = DEC.decode(EGM, POISON, NOW)
    assert out == Rejection(Reason.TOO_DEEP, "JSON nested 1001 levels deep, limit 32")


@pytest.mark.parametrize("levels", [100, 1_000, 100_000])
def test_depth_is_bounded_before_parsing_whatever_the_size_limit(levels: int) -> None:
    """With the payload limit at its maximum (1 MiB), 100,000 levels reach the decoder:
    the depth bound refuses them before msgspec recurses."""
    wide = TelemetryDecoder(
        prefix="bonusd",
        site="gh",
        calendar=CAL,
        limits=DecodeLimits(1_048_576, LIMITS.max_future_skew, LIMITS.max_age),
    )
    payload = _game()[:-1] + b', "x": ' + b"[" * levels + b"]" * levels + b"}"
    out = wide.decode(EGM, payload, NOW)
    assert isinstance(out, Rejection)
    assert out.reason is Reason.TOO_DEEP
    assert f"{levels + 1} levels" in out.detail


def test_the_deepest_accepted_nesting_decodes() -> None:
    depth = MAX_DEPTH - 1  # inside the event object
    payload = _game()[:-1] + b', "x": ' + b"[" * depth + b"]" * depth + b"}"
    assert isinstance(DEC.decode(EGM, payload, NOW), FloorEvent)


@pytest.mark.parametrize(
    ("payload", "depth"),
    [
        (b"{}", 0),  # too few brackets to count
        (b"[" * 40, 40),  # unclosed
        (b"[" * 40 + b"]" * 40, 40),
        (b'["' + b"[" * 100 + b'"]', 1),  # brackets in a string are not nesting
        (b'["\\"' + b"[" * 100 + b'"]', 1),  # nor after an escaped quote in it
        (b'["\\\\", ' + b"[" * 40 + b"]" * 40 + b"]", 41),  # an escaped backslash ends
        (b"[]" * 3000, 1),
        (b'"' + b"[" * 40, 40),  # an unclosed string errs on the deep side
        (b"\xff\xfe[" * 40, 40),  # not UTF-8: still counted
    ],
)
def test_nesting_depth(payload: bytes, depth: int) -> None:
    assert nesting_depth(payload) == depth


def test_an_oversize_stub_is_refused_by_its_received_size() -> None:
    out = DEC.decode(EGM, _game(), NOW, size=10_000_000)
    assert out == Rejection(Reason.TOO_LARGE, "payload is 10000000 bytes, limit 4096")


class _Raises:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def decode(self, *_: object) -> object:
        raise self.exc

    def gaming_day(self, *_: object) -> object:
        raise self.exc


def _decoder(**parts: object) -> TelemetryDecoder:
    dec = TelemetryDecoder(prefix="bonusd", site="gh", calendar=CAL, limits=LIMITS)
    for name, value in parts.items():
        setattr(dec, name, value)
    return dec


@pytest.mark.parametrize(
    "exc",
    [RecursionError("deep"), MemoryError(), ValueError("Exceeds the limit (4300 digits)")],
)
def test_whatever_the_parser_raises_is_unprocessable(exc: Exception) -> None:
    out = _decoder(_decoder=_Raises(exc)).decode(EGM, _game(), NOW)
    assert isinstance(out, Rejection)
    assert out.reason is Reason.UNPROCESSABLE
    assert type(exc).__name__ in out.detail


def test_whatever_the_type_probe_raises_leaves_the_message_invalid() -> None:
    dec = _decoder(_probe=_Raises(RecursionError("deep")))
    out = dec.decode(EGM, _game(points="5"), NOW)
    assert isinstance(out, Rejection)
    assert out.reason is Reason.INVALID


def test_time_arithmetic_that_overflows_is_unprocessable() -> None:
    out = _decoder(_calendar=_Raises(OverflowError("date value out of range"))).decode(
        EGM, _game(), NOW
    )
    assert isinstance(out, Rejection)
    assert out.reason is Reason.UNPROCESSABLE
    assert "OverflowError" in out.detail


@pytest.mark.parametrize(
    "ts", ["9999-12-31T23:59:59.999-23:59", "0001-01-01T00:00:00+23:59", "0001-01-01T00:00:00Z"]
)
def test_the_ends_of_time_are_refused_not_raised(ts: str) -> None:
    out = DEC.decode(EGM, _game(ts=ts), NOW)
    assert isinstance(out, Rejection)
    assert out.reason in (Reason.FUTURE, Reason.TOO_OLD)


@pytest.mark.parametrize("name", sorted(UNPRINTABLE))
def test_unprintable_event_ids_are_refused(name: str) -> None:
    out = DEC.decode(EGM, _game(id=f"ev{UNPRINTABLE[name]}1"), NOW)
    assert isinstance(out, Rejection)
    assert out.reason is Reason.INVALID
    assert "id" in out.detail


def test_an_unprintable_device_id_is_a_bad_topic() -> None:
    out = DEC.decode("bonusd/gh/egm/EGM\u202e1/events", _game(), NOW)
    assert isinstance(out, Rejection)
    assert out.reason is Reason.BAD_TOPIC
    assert "U+202E" in out.detail


def test_printable_unicode_ids_are_accepted() -> None:
    out = DEC.decode(EGM, _game(id="Spiel-Ü-漢字 7"), NOW)
    assert isinstance(out, FloorEvent)
