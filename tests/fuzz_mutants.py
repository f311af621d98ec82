"""Mutations of valid contract-v1 messages that the contract refuses, each with the
dead-letter reason it must get (the fuzz tests'; the valid messages and the floor snapshot
are `tests.fuzz_helpers`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from bonusd.floor.telemetry import Reason
from tests.fuzz_helpers import (
    INTEGERS,
    MAX_PAYLOAD,
    NOW,
    PASSED_BY_THE_BROKER,
    REQUIRED,
    SKEW,
    STRINGS,
    WINDOW,
    devices,
    dump,
    kind_of,
    offsets_ms,
    stamp,
    valid_bodies,
)

# -- mutations the contract refuses -----------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """A message made bad on purpose, and the reason it must be dead-lettered with."""

    what: str
    topic_tail: str  # after `{prefix}/{site}/`
    payload: bytes
    reason: Reason


Mutation = Callable[[st.DrawFn, dict[str, Any], str], Mutant]


def _topic(body: dict[str, Any], device: str) -> str:
    return f"{kind_of(body['type'])}/{device}/events"


def _missing_field(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    name = draw(st.sampled_from([f for f in REQUIRED[body["type"]] if f != "type"]))
    rest = {k: v for k, v in body.items() if k != name}
    return Mutant(f"missing {name}", _topic(body, device), dump(rest), Reason.INVALID)


_not_strings = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_not_integers = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6).map(
        lambda x: float(int(x))  # 5.0 is a float, not an integer, in the contract
    ),
    st.lists(st.integers(), max_size=2),
)


def _wrong_type(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    name = draw(st.sampled_from([f for f in body if f in STRINGS + INTEGERS]))
    value = draw(_not_strings if name in STRINGS else _not_integers)
    return Mutant(
        f"{name} as {type(value).__name__}",
        _topic(body, device),
        dump({**body, name: value}),
        Reason.INVALID,
    )


def _out_of_range(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    numbers = [f for f in body if f in INTEGERS]
    if not numbers:
        return _missing_field(draw, body, device)
    name = draw(st.sampled_from(numbers))
    limit = {"points": 10**9, "games": 10_000, "seat": 99}.get(name, 10**12)
    low = 1 if name in ("games", "seat") else 0
    value = draw(
        st.one_of(
            st.integers(max_value=low - 1),
            st.integers(min_value=limit + 1),
            st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**40]),
        )
    )
    return Mutant(
        f"{name}={value}", _topic(body, device), dump({**body, name: value}), Reason.INVALID
    )


def _huge_number_token(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    """Numbers no 64-bit integer or double holds, written into the text itself."""
    numbers = [f for f in body if f in INTEGERS]
    if not numbers:
        return _missing_field(draw, body, device)
    name = draw(st.sampled_from(numbers))
    token = draw(st.sampled_from(["1e400", "-1e400", "9" * 400, "1E2", "5.0", "-0.0", "1e-400"]))
    text = dump({**body, name: "@@"}).replace(b'"@@"', token.encode())
    return Mutant(f"{name}={token[:12]}", _topic(body, device), text, Reason.INVALID)


def _nan_token(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    name = draw(st.sampled_from(list(body)))
    token = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "nan", "inf", "undefined"]))
    text = dump({**body, name: "@@"}).replace(b'"@@"', token.encode())
    return Mutant(f"{name}={token}", _topic(body, device), text, Reason.NOT_JSON)


def _bad_text(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    """Card and area outside their character sets: unicode, spaces, control characters,
    a trailing newline, too long."""
    name = draw(st.sampled_from(["card", "area"]))
    value = draw(
        st.one_of(
            st.sampled_from(["7001\n", "7001 ", " 7001", "70\u00a001", "７００１", "main\n", ""]),
            st.text(min_size=1, max_size=8).filter(
                lambda s: any(not (c.isascii() and (c.isalnum() or c == "-")) for c in s)
            ),
            st.text("abc123", min_size=33, max_size=40),
        )
    )
    if (
        name == "area"
        and value
        and all(c in "abcdefghijklmnopqrstuvwxyz0123456789_-" for c in value)
    ):
        value += "!"
    return Mutant(
        f"{name}={value!r}", _topic(body, device), dump({**body, name: value}), Reason.INVALID
    )


def _bad_ts(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    """Timestamps the contract refuses: no offset, not a time, far past, far future."""
    when = NOW + dt.timedelta(milliseconds=draw(offsets_ms))
    choice = draw(st.sampled_from(["naive", "garbage", "old", "future", "ancient", "far"]))
    if choice == "naive":
        text, reason = when.replace(tzinfo=None).isoformat(), Reason.INVALID
    elif choice == "garbage":
        text = draw(
            st.sampled_from(
                ["yesterday", "", "2026-13-01T00:00:00Z", "2026-10-03T25:00:00Z", "17:05", "0"]
            )
        )
        reason = Reason.INVALID
    elif choice == "old":
        age = dt.timedelta(milliseconds=draw(st.integers(1, 10**10)))
        text, reason = stamp(NOW - WINDOW - age), Reason.TOO_OLD
    elif choice == "ancient":
        text, reason = "0001-01-01T00:10:00+00:00", Reason.TOO_OLD
    elif choice == "future":
        ahead = dt.timedelta(milliseconds=draw(st.integers(1, 10**10)))
        text, reason = stamp(NOW + SKEW + ahead), Reason.FUTURE
    else:
        text, reason = "9999-12-31T23:59:59.999+00:00", Reason.FUTURE
    mutated = {**body, "ts": text}
    if body["type"] == "play" and reason in (Reason.TOO_OLD, Reason.FUTURE):
        mutated["since"] = stamp(dt.datetime.fromisoformat(text) - dt.timedelta(minutes=1))
    return Mutant(f"ts {choice}", _topic(body, device), dump(mutated), reason)


def _bad_interval(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    if body["type"] != "play":
        return _bad_ts(draw, body, device)
    ts = dt.datetime.fromisoformat(body["ts"])
    gap = draw(st.sampled_from([0, -1000, 15 * 60 * 1000 + 1, 10**9]))
    since = stamp(ts - dt.timedelta(milliseconds=gap))
    return Mutant(
        f"interval {gap}ms", _topic(body, device), dump({**body, "since": since}), Reason.INVALID
    )


def _unknown_type(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    other = draw(
        st.text(max_size=12).filter(lambda t: t not in REQUIRED)
        | st.sampled_from(["GAME", "jackpot_hit", "card-in", " game", "game\n"])
    )
    return Mutant(
        f"type {other!r}", _topic(body, device), dump({**body, "type": other}), Reason.UNKNOWN_TYPE
    )


def _wrong_kind(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    other = "table" if kind_of(body["type"]) == "egm" else "egm"
    return Mutant("wrong kind", f"{other}/{device}/events", dump(body), Reason.WRONG_DEVICE_KIND)


def _truncated(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    text = dump(body)
    cut = draw(st.integers(0, len(text) - 1))
    return Mutant(f"cut at {cut}", _topic(body, device), text[:cut], Reason.NOT_JSON)


def _not_utf8(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    text = dump({**body, "id": "@@"})
    junk = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]))
    return Mutant("not utf-8", _topic(body, device), text.replace(b"@@", junk), Reason.NOT_JSON)


def _not_an_object(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    value = draw(st.sampled_from([[body], [], 7, "game", None, True, 1.5]))
    return Mutant("not an object", _topic(body, device), dump(value), Reason.INVALID)


def _too_large(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    pad = draw(st.integers(MAX_PAYLOAD, MAX_PAYLOAD + 3000))
    return Mutant(
        "too large", _topic(body, device), dump({**body, "pad": "x" * pad}), Reason.TOO_LARGE
    )


def _deep_nesting(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    """Arrays or objects nested past the contract's depth in an unknown field (issue 14:
    1,000 levels made msgspec raise RecursionError and stopped the ingest); past the
    size limit, the size is what counts."""
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}"), ("[1,", "]")]))
    room = (PASSED_BY_THE_BROKER - len(dump(body)) - 10) // len(opener + closer)
    levels = draw(st.one_of(st.integers(32, 200), st.integers(900, room), st.just(1000)))
    levels = min(levels, room)
    nest = opener * levels + "0" + closer * levels
    text = dump({**body, "x": "@@"}).replace(b'"@@"', nest.encode())
    reason = Reason.TOO_LARGE if len(text) > MAX_PAYLOAD else Reason.TOO_DEEP
    return Mutant(f"nested {levels}", _topic(body, device), text, reason)


# what no id, card or area may hold: controls, bidi and other format characters, line
# and paragraph separators (they drive terminals, break logs, reverse text on screens)
_unprintable = st.one_of(
    st.sampled_from(["\n", "\x1b[2J", "\x1b]0;t\x07", "\u202e", "\u2066", "\u200f", "\x00"]),
    st.characters(categories=("Cc", "Cf", "Zl", "Zp")),
)


def _unprintable_text(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    name = draw(st.sampled_from(["id", "card", "area"]))
    value = str(body.get(name, "main"))[:20]
    at = draw(st.integers(0, len(value)))
    value = value[:at] + draw(_unprintable) + value[at:]
    return Mutant(
        f"{name} unprintable", _topic(body, device), dump({**body, name: value}), Reason.INVALID
    )


def _bad_topic(draw: st.DrawFn, body: dict[str, Any], device: str) -> Mutant:
    """Topics the daemon's subscription lets through (`{site}/+/+/events`) that are still
    not the contract's: an unknown device kind, an empty or over-long device id."""
    kind = kind_of(body["type"])
    tail = draw(
        st.sampled_from(
            [
                f"{kind}//events",
                f"{kind}/{'D' * 65}/events",
                f"slot/{device}/events",
                f"EGM/{device}/events",
                f"{kind}s/{device}/events",
                f"/{device}/events",
            ]
        )
    )
    return Mutant(f"topic {tail[:20]}", tail, dump(body), Reason.BAD_TOPIC)


MUTATIONS: tuple[Mutation, ...] = (
    _missing_field,
    _wrong_type,
    _out_of_range,
    _huge_number_token,
    _nan_token,
    _bad_text,
    _bad_ts,
    _bad_interval,
    _unknown_type,
    _wrong_kind,
    _truncated,
    _not_utf8,
    _not_an_object,
    _too_large,
    _bad_topic,
    _deep_nesting,
    _unprintable_text,
)


@st.composite
def mutants(draw: st.DrawFn) -> Mutant:
    """A valid message, then one mutation the contract refuses."""
    body = draw(valid_bodies())
    device = draw(devices)
    mutation = draw(st.sampled_from(MUTATIONS))
    return mutation(draw, body, device)


def duplicated_key(body: dict[str, Any], name: str, first: object) -> bytes:
    """`body` as JSON text with `name` given twice: `first`, then the body's own value."""
    text = dump(body)
    return b'{"' + name.encode() + b'": ' + dump(first) + b", " + text[1:]
