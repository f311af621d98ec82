"""A corpus of hostile telemetry (issue 14), each message with the dead-letter reason it
must get, shared by the decoder's unit tests and the test that publishes it to a running
daemon: deep nesting, huge numbers, NaN and Infinity, bidi and control characters, wrong
types at every field, oversize payloads, bad topics.

`OVER_THE_PACKET_LIMIT` holds what the shipped broker refuses at the door (a packet over
its `max_packet_size`, deploy/mosquitto/bonusd.conf): the publisher is disconnected and
the message never reaches the daemon.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bonusd.floor.telemetry import Reason

TS = "2026-10-03T19:59:00.000+02:00"  # a minute before the tests' floor clock


@dataclass(frozen=True)
class Hostile:
    what: str
    topic_tail: str  # after `bonusd/{site}/`
    payload: bytes
    reason: Reason


def body(kind: str = "game", **over: Any) -> dict[str, Any]:
    """A valid event of `kind` at TS; `over` replaces or adds fields."""
    out: dict[str, Any] = {"id": f"h-{kind}", "type": kind, "ts": TS, "card": "7001"}
    if kind in ("game", "play", "rating_update", "rating_end"):
        out |= {"wager_cents": 100, "points": 1}
    if kind in ("game", "play"):
        out["win_cents"] = 0
    if kind == "play":
        out |= {"games": 3, "since": "2026-10-03T19:58:00.000+02:00"}
    if kind.startswith("rating"):
        out |= {"seat": 2, "avg_bet_cents": 500}
    return out | over


def text(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def with_raw(fields: dict[str, Any], name: str, raw: str) -> bytes:
    """`fields` as JSON with the value of `name` written as `raw` JSON text."""
    return text({**fields, name: "@@"}).replace(b'"@@"', raw.encode())


def nested(levels: int, opener: str = "[", closer: str = "]", inner: str = "1") -> str:
    return opener * levels + inner + closer * levels


EGM = "egm/EGM-0001/events"
TABLE = "table/RT-01/events"


def _nesting() -> list[Hostile]:
    return [
        # the reproduction, byte for byte: 2,006 bytes that stopped the floor
        Hostile(
            "issue 14 poison",
            EGM,
            ('{"x":' + "[" * 1000 + "]" * 1000 + "}").encode(),
            Reason.TOO_DEEP,
        ),
        Hostile("100 levels", EGM, with_raw(body(), "x", nested(100)), Reason.TOO_DEEP),
        Hostile("1,000 levels", EGM, with_raw(body(), "x", nested(1000)), Reason.TOO_DEEP),
        Hostile(
            "600 levels of objects",
            EGM,
            with_raw(body(), "x", nested(600, '{"a":', "}")),
            Reason.TOO_DEEP,
        ),
        Hostile("1,500 unclosed", EGM, with_raw(body(), "x", "[" * 1500), Reason.TOO_DEEP),
        Hostile("top-level 1,000", EGM, nested(1000).encode(), Reason.TOO_DEEP),
        Hostile("nested in the id", EGM, with_raw(body(), "id", nested(500)), Reason.TOO_DEEP),
        Hostile("33 levels", EGM, with_raw(body(), "x", nested(32)), Reason.TOO_DEEP),
        # brackets inside a string are not nesting: this one is refused for its card only
        Hostile(
            "2,000 brackets inside a string",
            EGM,
            text(body(card="bad card", x="[" * 1000 + "{" * 1000)),
            Reason.INVALID,
        ),
    ]


def _numbers() -> list[Hostile]:
    out = []
    for raw in ("1e400", "-1e400", "9" * 3000, "18446744073709551616", "1.5", "-1", "1e2"):
        out.append(
            Hostile(f"wager {raw[:12]}", EGM, with_raw(body(), "wager_cents", raw), Reason.INVALID)
        )
    out.append(Hostile("points 2**63", EGM, text(body(points=2**63)), Reason.INVALID))
    out.append(
        Hostile("seat 10**30", TABLE, text(body("rating_start", seat=10**30)), Reason.INVALID)
    )
    for raw in ("NaN", "Infinity", "-Infinity"):
        out.append(
            Hostile(f"wager {raw}", EGM, with_raw(body(), "wager_cents", raw), Reason.NOT_JSON)
        )
        out.append(Hostile(f"x {raw}", EGM, with_raw(body(), "x", raw), Reason.NOT_JSON))
    return out


# Characters no id, card or area may hold: they drive terminals (ESC), break lines and
# logs (newline, U+2028), hide text (zero-width) or reverse it on screen (bidi).
UNPRINTABLE = {
    "RLO U+202E": "\u202e",
    "LRE U+202A": "\u202a",
    "PDF U+202C": "\u202c",
    "LRI U+2066": "\u2066",
    "PDI U+2069": "\u2069",
    "RLM U+200F": "\u200f",
    "ZWJ U+200D": "\u200d",
    "line separator U+2028": "\u2028",
    "newline": "\n",
    "escape": "\x1b[2J",
    "OSC title": "\x1b]0;pwned\x07",
    "NUL": "\x00",
    "DEL": "\x7f",
    "C1 CSI U+009B": "\x9b",
    "no-break space": "\u00a0",
}


def _text() -> list[Hostile]:
    out = []
    for name, char in UNPRINTABLE.items():
        out.append(Hostile(f"id {name}", EGM, text(body(id=f"ev{char}1")), Reason.INVALID))
        out.append(Hostile(f"card {name}", EGM, text(body(card=f"70{char}01")), Reason.INVALID))
        out.append(Hostile(f"area {name}", EGM, text(body(area=f"ma{char}in")), Reason.INVALID))
    out += [
        Hostile("id 129 chars", EGM, text(body(id="i" * 129)), Reason.INVALID),
        Hostile("id 3,900 chars", EGM, text(body(id="i" * 3900)), Reason.INVALID),
        Hostile("card 33 chars", EGM, text(body(card="7" * 33)), Reason.INVALID),
        Hostile("area 33 chars", EGM, text(body(area="a" * 33)), Reason.INVALID),
        Hostile("empty id", EGM, text(body(id="")), Reason.INVALID),
        Hostile("area <script>", EGM, text(body(area="<script>")), Reason.INVALID),
        Hostile("device RLO", "egm/EGM\u202e1000/events", text(body()), Reason.BAD_TOPIC),
        Hostile("device LRI", "egm/EGM\u20661/events", text(body()), Reason.BAD_TOPIC),
        Hostile("device 65 chars", f"egm/{'D' * 65}/events", text(body()), Reason.BAD_TOPIC),
        Hostile("kind slot", "slot/EGM-1/events", text(body()), Reason.BAD_TOPIC),
    ]
    return out


_WRONG: tuple[object, ...] = (None, True, [], {}, [1], {"a": 1}, 5.5)
_FIELDS = {
    "game": ("id", "type", "ts", "card", "area", "wager_cents", "win_cents", "points"),
    "play": ("since", "games"),
    "rating_start": ("seat", "avg_bet_cents"),
}


def _wrong_types() -> list[Hostile]:
    out = []
    for kind, fields in _FIELDS.items():
        tail = TABLE if kind.startswith("rating") else EGM
        for name in fields:
            strings = name in ("id", "type", "ts", "card", "area", "since")
            for value in (*_WRONG, 7 if strings else "7"):
                if name == "area" and value is None:
                    continue  # area is optional: null means absent
                out.append(
                    Hostile(
                        f"{kind}.{name}={value!r}",
                        tail,
                        text(body(kind, **{name: value})),
                        Reason.INVALID,
                    )
                )
    return out


def _other() -> list[Hostile]:
    return [
        Hostile("6 KB payload", EGM, text(body(pad="x" * 6000)), Reason.TOO_LARGE),
        Hostile("not UTF-8", EGM, text(body(id="@@")).replace(b"@@", b"\xff\xfe"), Reason.NOT_JSON),
        Hostile("empty", EGM, b"", Reason.NOT_JSON),
        Hostile("a bare string", EGM, b'"game"', Reason.INVALID),
        Hostile("a list of events", EGM, text([body()]), Reason.INVALID),
        Hostile("unknown type", EGM, text(body(type="jackpot")), Reason.UNKNOWN_TYPE),
        Hostile("table event on an EGM", EGM, text(body("rating_start")), Reason.WRONG_DEVICE_KIND),
        Hostile("ts year 9999", EGM, text(body(ts="9999-12-31T23:59:59.999-23:59")), Reason.FUTURE),
        Hostile("ts year 1", EGM, text(body(ts="0001-01-01T00:00:00+23:59")), Reason.TOO_OLD),
        Hostile("ts without offset", EGM, text(body(ts="2026-10-03T19:59:00")), Reason.INVALID),
        Hostile(
            "play since year 1",
            EGM,
            text(body("play", since="0001-01-01T00:00:00+00:00")),
            Reason.INVALID,
        ),
    ]


CORPUS: tuple[Hostile, ...] = (*_nesting(), *_numbers(), *_text(), *_wrong_types(), *_other())

OVER_THE_PACKET_LIMIT: tuple[Hostile, ...] = (
    Hostile("100,000 levels", EGM, with_raw(body(), "x", nested(100_000)), Reason.TOO_LARGE),
    Hostile("10 MB", EGM, text(body(pad="x" * 10_000_000)), Reason.TOO_LARGE),
)
