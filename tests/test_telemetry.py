"""The telemetry decoder and gaming-day arithmetic, without any service."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bonusd.clock import GamingCalendar
from bonusd.effects import Effects
from bonusd.floor import describe
from bonusd.telemetry import DecodeLimits, FloorEvent, Reason, Rejection, TelemetryDecoder

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


@pytest.mark.parametrize(
    ("instant", "day"),
    [
        ("2026-10-03T08:00:00+02:00", "2026-10-03"),
        ("2026-10-04T07:59:59.999+02:00", "2026-10-03"),  # still the previous gaming day
        ("2026-10-04T08:00:00+02:00", "2026-10-04"),
        ("2026-10-03T23:59:59+02:00", "2026-10-03"),  # midnight does not split a gaming day
        ("2026-10-04T00:00:00+02:00", "2026-10-03"),
        ("2026-10-04T05:59:59Z", "2026-10-03"),  # 07:59:59 local, given in UTC
        ("2026-10-04T06:00:00Z", "2026-10-04"),
    ],
)
def test_gaming_day_boundary(instant: str, day: str) -> None:
    assert CAL.gaming_day(dt.datetime.fromisoformat(instant)).isoformat() == day


def test_gaming_day_opens_and_closes_at_0800_local() -> None:
    day = dt.date(2026, 10, 3)
    assert CAL.day_opens(day).isoformat() == "2026-10-03T08:00:00+02:00"
    assert CAL.day_closes(day).isoformat() == "2026-10-04T08:00:00+02:00"


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
