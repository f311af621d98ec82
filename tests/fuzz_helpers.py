"""Shared by the fuzz tests: valid contract-v1 messages, mutations of them that the
contract refuses (each with the dead-letter reason it must get), and a snapshot of a
site's floor in Redis to prove that refused input changed nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast
from zoneinfo import ZoneInfo

import redis.asyncio as aioredis
from hypothesis import strategies as st

from bonusd.clocks.clock import GamingCalendar, ManualClock
from bonusd.floor.store import DeadLetter, FloorStore
from bonusd.floor.telemetry import DecodeLimits, FloorEvent, Reason, Rejection, TelemetryDecoder
from bonusd.infra.keys import Keys

SAST = dt.timezone(dt.timedelta(hours=2))
# the floor clock of the fuzzed decoders and of the `daemon` fixture (tests/conftest.py)
NOW = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)
WINDOW = dt.timedelta(days=7)  # BONUSD_DEDUP_WINDOW_S, the default
SKEW = dt.timedelta(minutes=5)  # BONUSD_MAX_FUTURE_SKEW_S, the default
MAX_PAYLOAD = 4096
# the largest payload the shipped broker passes (max_packet_size 8192 in
# deploy/mosquitto/bonusd.conf, less the topic and header): a bigger one disconnects
# the publisher instead of reaching the daemon
PASSED_BY_THE_BROKER = 7600
CAL = GamingCalendar(ZoneInfo("Africa/Johannesburg"), dt.time(8, 0))  # SAST all year

EGM_TYPES = ("card_in", "card_out", "game", "play")
TABLE_TYPES = ("rating_start", "rating_update", "rating_end")
REQUIRED = {
    "card_in": ("id", "type", "ts", "card"),
    "card_out": ("id", "type", "ts", "card"),
    "game": ("id", "type", "ts", "card", "wager_cents", "win_cents", "points"),
    "play": ("id", "type", "ts", "card", "since", "games", "wager_cents", "win_cents", "points"),
    "rating_start": ("id", "type", "ts", "card", "seat", "avg_bet_cents"),
    "rating_update": ("id", "type", "ts", "card", "seat", "avg_bet_cents", "wager_cents", "points"),
    "rating_end": ("id", "type", "ts", "card", "seat", "avg_bet_cents", "wager_cents", "points"),
}
STRINGS = ("id", "ts", "card", "since")
INTEGERS = ("wager_cents", "win_cents", "points", "games", "seat", "avg_bet_cents")
CENTS = ("wager_cents", "win_cents", "avg_bet_cents")


def kind_of(event_type: str) -> str:
    return "egm" if event_type in EGM_TYPES else "table"


def stamp(instant: dt.datetime) -> str:
    return instant.isoformat(timespec="milliseconds")


# While a test runs, Hypothesis raises the interpreter's recursion limit by about 1,000
# frames (so that its own recursive strategies have room), which hides exactly the fault
# of issue 14: msgspec raised RecursionError at ~1,000 levels of nesting in the daemon,
# never under Hypothesis. Code under test runs with the limit the daemon has.
DAEMON_RECURSION_LIMIT = 1000  # Python's default; bonusd never changes it


@contextlib.contextmanager
def daemon_recursion_limit() -> Iterator[None]:
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(DAEMON_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


# -- valid messages ---------------------------------------------------------------------

# printable text: the contract refuses control, format (bidi) and separator characters
ids = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(str.isprintable)
cards = st.from_regex(r"\A[A-Za-z0-9-]{1,12}\Z")
devices = st.sampled_from(["EGM-1", "EGM-2", "EGM-0412", "RT-07", "T1"])
# inside the accepted range: up to 7 days back, up to 5 minutes ahead of NOW
offsets_ms = st.integers(-(WINDOW // dt.timedelta(milliseconds=1)) + 1000, 4 * 60 * 1000)
zones = st.sampled_from([dt.UTC, SAST, dt.timezone(dt.timedelta(hours=-5, minutes=-30))])


@st.composite
def valid_bodies(draw: st.DrawFn, event_type: str | None = None) -> dict[str, Any]:
    """A message body the contract accepts at NOW (on a topic of its device kind)."""
    kind = event_type or draw(st.sampled_from(EGM_TYPES + TABLE_TYPES))
    ts = NOW + dt.timedelta(milliseconds=draw(offsets_ms))
    body: dict[str, Any] = {
        "id": draw(ids),
        "type": kind,
        "ts": stamp(ts.astimezone(draw(zones))),
        "card": draw(cards),
    }
    if draw(st.booleans()):
        body["area"] = draw(st.sampled_from(["main", "smoking", "prive", "vip_2"]))
    if kind in ("game", "play", "rating_update", "rating_end"):
        body["wager_cents"] = draw(st.integers(0, 10**12))
        body["points"] = draw(st.integers(0, 10**9))
    if kind in ("game", "play"):
        body["win_cents"] = draw(st.integers(0, 10**12))
    if kind == "play":
        body["games"] = draw(st.integers(1, 10_000))
        body["since"] = stamp(ts - dt.timedelta(seconds=draw(st.integers(1, 900))))
    if kind in TABLE_TYPES:
        body["seat"] = draw(st.integers(1, 99))
        body["avg_bet_cents"] = draw(st.integers(0, 10**12))
    return body


def dump(body: object) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


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


# -- the floor in Redis -----------------------------------------------------------------

# Not floor state: what a refused message is supposed to change (the dead letters and the
# counters), the API's tokens (issued by the tests themselves) and the leader lease (held
# by whichever daemon of the site leads, docs/leader.md).
# not the floor: dead letters, counters, tokens and their last use, the leader lease, the
# stored layout version
NOT_FLOOR = ("deadletters", "stats", "token:", "tokens", "usage", "leader", "layout", "sms:")


async def floor_snapshot(
    redis: aioredis.Redis, base: str, *, skip: tuple[str, ...] = ()
) -> dict[str, object]:
    """Every key of a site but the dead letters, counters and the leader's own bookkeeping
    (the SMS outbox's cursor, written when its task gets to it), and those starting with one
    of `skip`, with its type and value."""
    out: dict[str, object] = {}
    for key in await redis.keys(f"{_glob(base)}*"):  # one pass, where SCAN takes several
        rel = key[len(base) :]
        if rel.startswith(NOT_FLOOR + skip):
            continue
        kind = await redis.type(key)
        value: object
        if kind == "hash":
            value = await redis.hgetall(key)
        elif kind == "set":
            value = sorted(await redis.smembers(key))
        elif kind == "zset":
            value = await redis.zrange(key, 0, -1, withscores=True)
        elif kind == "list":
            value = await redis.lrange(key, 0, -1)
        elif kind == "stream":
            value = await redis.xrange(key)
        else:
            value = await redis.get(key)
        out[rel] = (kind, value)
    return out


def _glob(text: str) -> str:
    """`text` with the glob characters of SCAN MATCH escaped (the site's `{…}` is safe)."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


class Floor:
    """One site's floor store, fed batch by batch the way the ingest feeds it."""

    def __init__(self, redis: aioredis.Redis, site: str, now: dt.datetime = NOW) -> None:
        self.redis = redis
        self.site = site
        self.keys = Keys("bonusd", site)
        self.store = FloorStore(
            redis,
            self.keys,
            dedup_ttl_s=int(WINDOW.total_seconds()) + 3600,
            deadletter_maxlen=1000,
            deadletter_payload_bytes=2048,
        )
        self.clock = ManualClock(now)
        self.decoder = TelemetryDecoder(
            prefix="bonusd", site=site, calendar=CAL, limits=DecodeLimits(4096, SKEW, WINDOW)
        )

    async def batch(self, *msgs: Any) -> tuple[int, int, int]:
        """Decode and apply one batch of messages, each with a `topic_tail` (after
        `bonusd/{site}/`) and a `body` (a dict, or the payload's bytes)."""
        now = self.clock.now()
        events: list[FloorEvent] = []
        dead: list[DeadLetter] = []
        for m in msgs:
            topic = f"bonusd/{self.site}/{m.topic_tail}"
            payload = m.body if isinstance(m.body, bytes) else json.dumps(m.body).encode()
            out = self.decoder.decode(topic, payload, now)
            if isinstance(out, Rejection):
                ms = int(now.timestamp() * 1000)
                dead.append(DeadLetter(out.reason, topic, payload, out.detail, ms))
            else:
                events.append(out)
        r = await self.store.apply_batch(events, dead)
        return r.applied, r.duplicates, r.dead_letters

    async def feed(self, batches: Sequence[Sequence[Any]]) -> None:
        for b in batches:
            await self.batch(*b)

    async def placement(self) -> dict[str, tuple[str, str, int | None]]:
        """Who is active where: card -> (kind, device, seat), from the sessions, checked
        against the floor's other indexes of the same fact."""
        cards = sorted(cast(list[str], await self.redis.zrange(self.keys.lastseen, 0, -1)))
        out: dict[str, tuple[str, str, int | None]] = {}
        for card in cards:
            s = await self.store.session(card)
            assert s is not None, card
            out[card] = (s["kind"], s["device"], s["seat"])
            slot = s["device"] if s["seat"] is None else f"{s['device']}#{s['seat']}"
            assert await self.redis.get(self.keys.at(slot)) == card
        active = await self.store.active()
        assert sorted(a["card"] for a in active) == cards
        places = await self.redis.hgetall(self.keys.base + "floor-place")
        assert sorted(places) == cards
        return out

    async def day(self, card: str, day: str = "2026-10-03") -> dict[str, Any]:
        return await self.store.member_day(card, dt.date.fromisoformat(day))

    async def stats(self) -> dict[str, int]:
        return await self.store.stats()

    async def close(self) -> None:
        match = f"bonusd:{{{self.site}}}:*"
        keys = await self.redis.keys(match)
        if keys:
            await self.redis.delete(*keys)
