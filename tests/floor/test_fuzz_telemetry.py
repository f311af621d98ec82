"""Fuzzing the telemetry decoder (no services): random bytes, random JSON, mutations of
valid messages and nested JSON of any depth (structure-aware) never make it raise; every refusal carries the documented reason and a
detail; whatever it accepts satisfies the contract (docs/telemetry.md).

The default suite runs a few hundred examples per property; `make test-slow` runs the
`_deep` twins with thousands (docs/robustness.md).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.telemetry import (
    ALLOWED_TYPES,
    MAX_DEPTH,
    DecodeLimits,
    FloorEvent,
    Reason,
    Rejection,
    TelemetryDecoder,
    nesting_depth,
)
from tests.fuzz_helpers import (
    INTEGERS,
    MAX_PAYLOAD,
    NOW,
    SKEW,
    WINDOW,
    daemon_recursion_limit,
    devices,
    dump,
    kind_of,
    valid_bodies,
)
from tests.fuzz_mutants import Mutant, duplicated_key, mutants

SITE = "gh"
HEAD = f"bonusd/{SITE}/"
CAL = GamingCalendar(ZoneInfo("Africa/Johannesburg"), dt.time(8, 0))
DEC = TelemetryDecoder(
    prefix="bonusd",
    site=SITE,
    calendar=CAL,
    limits=DecodeLimits(MAX_PAYLOAD, SKEW, WINDOW),
)
FUZZ = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
DEEP = settings(max_examples=5000, suppress_health_check=[HealthCheck.too_slow])

CARD = re.compile(r"[A-Za-z0-9-]{1,32}")
AREA = re.compile(r"[a-z0-9_-]{1,32}")


def _decode(topic: str, payload: bytes) -> FloorEvent | Rejection:
    with daemon_recursion_limit():  # not Hypothesis's raised one (tests/fuzz_helpers.py)
        out = DEC.decode(topic, payload, NOW)
    assert isinstance(out, FloorEvent | Rejection)
    if isinstance(out, Rejection):
        assert isinstance(out.reason, Reason)
        assert out.detail.strip(), out
    else:
        _holds_the_contract(out)
    return out


def _holds_the_contract(ev: FloorEvent) -> None:
    """What every accepted event satisfies, whatever it was decoded from."""
    assert 1 <= len(ev.id) <= 128
    assert ev.type in ALLOWED_TYPES[ev.kind]
    assert CARD.fullmatch(ev.card), ev.card
    assert ev.area == "" or AREA.fullmatch(ev.area), ev.area
    assert ev.device and "/" not in ev.device and len(ev.device) <= 64
    assert 0 <= ev.wager_cents <= 10**12
    assert 0 <= ev.win_cents <= 10**12
    assert 0 <= ev.points <= 10**9
    assert 1 <= ev.games <= 10_000
    assert (1 <= ev.seat <= 99) if ev.kind == "table" else ev.seat == 0
    ts = dt.datetime.fromtimestamp(ev.ts_ms / 1000, dt.UTC)
    assert NOW - WINDOW - dt.timedelta(milliseconds=1) <= ts <= NOW + SKEW
    assert ev.gaming_day == CAL.gaming_day(ts).isoformat()


# -- mutations of valid messages --------------------------------------------------------


def _refused_as_documented(m: Mutant) -> None:
    out = _decode(HEAD + m.topic_tail, m.payload)
    assert isinstance(out, Rejection), (m.what, m.payload[:200])
    assert out.reason is m.reason, (m.what, out, m.payload[:200])


@FUZZ
@given(mutants())
# the contract's character sets are whole-string: a trailing newline is not a card
@example(
    Mutant(
        "card newline",
        "egm/EGM-1/events",
        dump({"id": "n", "type": "card_in", "ts": "2026-10-03T19:59:00+02:00", "card": "7001\n"}),
        Reason.INVALID,
    )
)
@example(
    Mutant(
        "area newline",
        "egm/EGM-1/events",
        dump(
            {
                "id": "n",
                "type": "card_in",
                "ts": "2026-10-03T19:59:00+02:00",
                "card": "7",
                "area": "main\n",
            }
        ),
        Reason.INVALID,
    )
)
def test_mutated_messages_are_refused_with_their_reason(m: Mutant) -> None:
    _refused_as_documented(m)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@DEEP
@given(mutants())
def test_mutated_messages_are_refused_with_their_reason_deep(m: Mutant) -> None:
    _refused_as_documented(m)


# -- valid messages ---------------------------------------------------------------------


def _accepted_as_sent(body: dict[str, Any], device: str) -> None:
    out = _decode(f"{HEAD}{kind_of(body['type'])}/{device}/events", dump(body))
    assert isinstance(out, FloorEvent), (body, out)
    ts = dt.datetime.fromisoformat(body["ts"])
    assert (out.id, out.type, out.card, out.device) == (
        body["id"],
        body["type"],
        body["card"],
        device,
    )
    assert out.kind == kind_of(body["type"])
    assert out.ts_ms == int(ts.timestamp() * 1000)
    assert out.area == body.get("area", "")
    for name in ("wager_cents", "win_cents", "points", "seat"):
        assert getattr(out, name) == body.get(name, 0)
    assert out.games == body.get("games", 1)


@FUZZ
@given(valid_bodies(), devices)
def test_valid_messages_decode_as_sent(body: dict[str, Any], device: str) -> None:
    _accepted_as_sent(body, device)


# -- random input -----------------------------------------------------------------------

_topics = st.one_of(
    st.text(max_size=80),
    st.builds(
        lambda kind, device, tail: f"{HEAD}{kind}/{device}/{tail}",
        st.sampled_from(["egm", "table", "", "EGM", "slot"]),
        st.text(max_size=70),
        st.sampled_from(["events", "events/x", "", "meters"]),
    ),
)
FIELDS: tuple[str, ...] = (
    "id",
    "type",
    "ts",
    "card",
    "area",
    "seat",
    "since",
    "games",
    "points",
    "x",
)
FIELDS += ("wager_cents", "win_cents", "avg_bet_cents")
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(FIELDS) | st.text(max_size=8),
            inner,
            max_size=10,
        )
    ),
    max_leaves=20,
)


@FUZZ
@given(_topics, st.binary(max_size=5000))
def test_random_bytes_on_random_topics_never_raise(topic: str, payload: bytes) -> None:
    _decode(topic, payload)


@FUZZ
@given(_topics, _json)
def test_random_json_on_random_topics_never_raise(topic: str, value: object) -> None:
    _decode(topic, json.dumps(value).encode())


@st.composite
def _half_valid(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid body with random fields overwritten by random JSON: mostly refused, and
    whatever is accepted must still hold the contract."""
    body = draw(valid_bodies())
    for name in draw(st.lists(st.sampled_from([*body, "area", "seat", "games"]), max_size=3)):
        body[name] = draw(_json)
    return f"{HEAD}{kind_of(body['type'])}/{draw(devices)}/events", dump(body)


@FUZZ
@given(_half_valid())
def test_partly_random_messages_never_raise(message: tuple[str, bytes]) -> None:
    _decode(*message)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@DEEP
@given(st.one_of(_half_valid(), st.tuples(_topics, st.binary(max_size=5000))))
def test_random_input_never_raises_deep(message: tuple[str, bytes]) -> None:
    _decode(*message)


# -- duplicated keys --------------------------------------------------------------------


@FUZZ
@given(valid_bodies(), st.data())
def test_a_repeated_key_is_validated_each_time_and_the_last_counts(
    body: dict[str, Any], data: st.DataObject
) -> None:
    """docs/telemetry.md: a key given twice is not refused for that, but every value must
    be valid, and the last one counts (a repeated `type` must name the same type)."""
    name = data.draw(st.sampled_from([k for k in body if k != "type"]))
    if name in INTEGERS:
        first: object = data.draw(st.integers(-10, 10**13))
    else:
        first = data.draw(st.sampled_from([body[name], "", "7001", 5, None]))
    topic = f"{HEAD}{kind_of(body['type'])}/EGM-1/events"
    out = _decode(topic, duplicated_key(body, name, first))
    alone = _decode(topic, dump({**body, name: first}))
    if isinstance(alone, Rejection) and alone.reason is Reason.INVALID:
        assert isinstance(out, Rejection)
        assert out.reason is Reason.INVALID
    else:
        assert out == _decode(topic, dump(body))


def test_a_repeated_type_must_name_the_same_type() -> None:
    body = {"id": "t", "type": "card_in", "ts": "2026-10-03T19:59:00+02:00", "card": "7"}
    topic = f"{HEAD}egm/EGM-1/events"
    assert isinstance(_decode(topic, duplicated_key(body, "type", "card_in")), FloorEvent)
    out = _decode(topic, duplicated_key(body, "type", "card_out"))
    assert isinstance(out, Rejection)
    assert out.reason is Reason.INVALID


# -- the edges of time ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "accepted"),
    [
        (-WINDOW, True),  # exactly as old as the window: still exactly-once
        (-WINDOW - dt.timedelta(milliseconds=1), False),
        (SKEW, True),
        (SKEW + dt.timedelta(milliseconds=1), False),
    ],
)
def test_the_window_edges(offset: dt.timedelta, accepted: bool) -> None:
    ts = (NOW + offset).isoformat(timespec="milliseconds")
    body = {"id": "edge", "type": "card_in", "ts": ts, "card": "7"}
    out = _decode(f"{HEAD}egm/EGM-1/events", dump(body))
    assert isinstance(out, FloorEvent) is accepted
    if not accepted:
        assert isinstance(out, Rejection)
        assert out.reason is (Reason.FUTURE if offset > dt.timedelta(0) else Reason.TOO_OLD)


@pytest.mark.parametrize(
    "device",
    ["EGM#1", "EGM+1", "#", "+"],
)
def test_wildcard_characters_are_not_device_ids(device: str) -> None:
    """The contract's device ids have no `/`, `#` or `+` (MQTT wildcards): a topic that
    somehow carries one is `bad_topic`, never a floor slot like `EGM#1`, which the
    store would read as seat 1 of device EGM."""
    body = {"id": "w", "type": "card_in", "ts": "2026-10-03T19:59:00+02:00", "card": "7"}
    out = _decode(f"{HEAD}egm/{device}/events", dump(body))
    assert isinstance(out, Rejection)
    assert out.reason is Reason.BAD_TOPIC


# -- structure-aware: nested JSON (issue 14) ---------------------------------------------
# The fuzzers above never nest deeper than a few levels: `_json` is a `st.recursive` of
# at most 20 leaves, random bytes almost never balance a thousand brackets, and the
# mutations start from flat valid messages. msgspec recurses once per level and raises
# RecursionError near 1,000, so none of them could reach it. These build the nesting on
# purpose, at every depth up to 100,000, in every place a message can hold it.

# (opener, closer, levels): arrays, objects, and mixtures of them
LAYERS = (
    ("[", "]", 1),
    ('{"a":', "}", 1),
    ('{"": ', "}", 1),
    ("[1,", "]", 1),
    ('[{"k":[', "]}]", 3),
    ('{"x":"]}\\"[",  "y":', "}", 1),  # brackets and an escaped quote in a string
)
INNER = ("1", '"x"', "null", "[]", "{}", '"[[[[{{{{"', '"\\\\"')
_far = st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 999, 1000, 1001, 100_000])


@dataclass(frozen=True)
class Nested:
    payload: bytes
    where: str


@st.composite
def nested_messages(draw: st.DrawFn) -> Nested:
    """A message holding nesting, alone, in an unknown field, in a field of the contract
    or as the `type`; closed, or cut off anywhere. Its depth is drawn against the size
    budget: up to the most that fits in the payload limit (where a parser that recurses
    per level is at its deepest, past 1,000 levels with arrays), or anywhere up to
    100,000 levels (refused for their size)."""
    pattern = draw(st.lists(st.sampled_from(LAYERS), min_size=1, max_size=3))
    where = draw(st.sampled_from(["unknown field", "alone", "card", "wager_cents", "type"]))
    inner = draw(st.sampled_from(INNER))
    body = json.dumps({**draw(valid_bodies("game")), where: "@@"})
    room = MAX_PAYLOAD - (len(body) - 4 if where != "alone" else 0) - len(inner)
    cycle = sum(len(o) + len(c) for o, c, _ in pattern)
    fit = max(0, room // cycle) * sum(n for *_, n in pattern)  # levels that fit, about
    target = draw(
        st.one_of(
            st.just(fit),
            st.integers(max(0, fit - 60), fit),
            st.integers(0, fit),
            st.integers(0, 5000),
            _far,
        )
    )
    openers, closers, levels = [], [], 0
    while levels < target:
        opener, closer, n = pattern[len(openers) % len(pattern)]
        openers.append(opener)
        closers.append(closer)
        levels += n
    value = "".join(openers) + inner + "".join(reversed(closers))
    text = value if where == "alone" else body.replace('"@@"', value)
    payload = text.encode()
    if draw(st.booleans()):  # cut off: the unclosed brackets still count
        payload = payload[: draw(st.integers(0, len(payload)))]
    return Nested(payload, where)


def _nested_is_refused_by_its_bound(m: Nested) -> None:
    out = _decode(f"{HEAD}egm/EGM-1/events", m.payload)  # never raises
    if len(m.payload) > MAX_PAYLOAD:
        assert isinstance(out, Rejection) and out.reason is Reason.TOO_LARGE, out
    elif nesting_depth(m.payload) > MAX_DEPTH:
        assert isinstance(out, Rejection) and out.reason is Reason.TOO_DEEP, out
    elif isinstance(out, Rejection):
        assert out.reason is not Reason.UNPROCESSABLE, (m.where, out)  # parsed, not crashed


@FUZZ
@given(nested_messages())
@example(Nested(('{"x":' + "[" * 1000 + "]" * 1000 + "}").encode(), "issue 14"))
def test_nested_json_never_raises_and_is_bounded(m: Nested) -> None:
    _nested_is_refused_by_its_bound(m)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@DEEP
@given(nested_messages())
def test_nested_json_never_raises_and_is_bounded_deep(m: Nested) -> None:
    _nested_is_refused_by_its_bound(m)


# the depth counter against real structures: strings full of brackets, quotes and
# backslashes, keys too, at random widths and depths
_tricky_text = st.text(alphabet='[]{}"\\ab\u202e', max_size=6)
_any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_tricky_text, inner, max_size=3),
    max_leaves=60,
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@FUZZ
@given(_any_json, st.integers(0, 3000), st.sampled_from(["[", '{"k":']))
def test_the_depth_bound_counts_the_real_structure(value: object, extra: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = (opener * extra + json.dumps(value) + closer * extra).encode()
    depth = _depth(value) + extra
    if text.count(b"[") + text.count(b"{") > MAX_DEPTH:  # else it is not counted at all
        assert nesting_depth(text) == depth
    assert (nesting_depth(text) > MAX_DEPTH) is (depth > MAX_DEPTH)
    out = _decode(f"{HEAD}egm/EGM-1/events", text)
    if len(text) <= MAX_PAYLOAD and depth > MAX_DEPTH:
        assert isinstance(out, Rejection) and out.reason is Reason.TOO_DEEP
