"""The telemetry contract (v1 with an event `id`, v2 with a device's `epoch` and `seq`):
event types, topic layout and the decoder.

The decoder turns one MQTT message (topic and payload) into a `FloorEvent` or a
`Rejection` with a reason. It never raises, whatever the payload: its size and nesting
depth are bounded before any parsing, and anything a parser or the time arithmetic could
still raise becomes a rejection. A bad message is data for the dead-letter stream, not a
fault. See docs/telemetry.md for the contract in prose.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Annotated, Literal

import msgspec

from bonusd.clocks.clock import GamingCalendar
from bonusd.registry.text import unprintable

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
# contract v2: a device names each boot (`epoch`) and numbers its events in it from 1
Epoch = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
MAX_SEQ = 2**53 - 1  # the largest integer JSON parsers (and Redis's Lua) hold exactly
Seq = Annotated[int, msgspec.Meta(ge=1, le=MAX_SEQ)]
# `(?!\n)$`: msgspec matches with Python's `re`, whose `$` also matches before a trailing
# newline, so `^…$` alone let "7001\n" through as a card; the guard is valid JSON Schema too.
Card = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9-]{1,32}(?!\n)$")]
Area = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9_-]{1,32}(?!\n)$")]
Cents = Annotated[int, msgspec.Meta(ge=0, le=10**12)]
Points = Annotated[int, msgspec.Meta(ge=0, le=10**9)]
Seat = Annotated[int, msgspec.Meta(ge=1, le=99)]
Instant = Annotated[dt.datetime, msgspec.Meta(tz=True)]
MAX_PLAY_GAMES = 10_000  # a `play` interval of 15 minutes at more than 11 games a second
Games = Annotated[int, msgspec.Meta(ge=1, le=MAX_PLAY_GAMES)]
# The longest interval one `play` event may cover: short enough that rating it at its end
# (`ts`) is fair, and that a simulator can keep intervals clear of multiplier edges.
MAX_PLAY_INTERVAL = dt.timedelta(minutes=15)
# A contract message is one flat object; unknown fields may hold a little structure. Deeper
# nesting is refused before parsing: msgspec recurses per level and raises RecursionError
# near 1,000 levels (issue 14: one 2 KB message of 1,000 brackets stopped the ingest).
MAX_DEPTH = 32


class _Base(msgspec.Struct, tag_field="type", frozen=True, kw_only=True):
    # v1 carries `id`, v2 `epoch` and `seq`, never both (`_identity_problem`)
    id: Id | msgspec.UnsetType = msgspec.UNSET
    epoch: Epoch | msgspec.UnsetType = msgspec.UNSET
    seq: Seq | msgspec.UnsetType = msgspec.UNSET
    ts: Instant
    card: Card
    area: Area | None = None


class CardIn(_Base, tag="card_in", frozen=True):
    """A player inserted the card at an EGM."""


class CardOut(_Base, tag="card_out", frozen=True):
    """A player removed the card from an EGM."""


class Game(_Base, tag="game", frozen=True):
    """One game played on an EGM by the carded player."""

    wager_cents: Cents
    win_cents: Cents
    points: Points


class Play(_Base, tag="play", frozen=True):
    """Aggregated play on an EGM: the meter deltas of `games` games by the carded player
    from `since` to `ts`. Applied as `games` games at `ts` whose totals are these amounts."""

    since: Instant
    games: Games
    wager_cents: Cents
    win_cents: Cents
    points: Points


class RatingStart(_Base, tag="rating_start", frozen=True):
    """The pit started rating a player at a table seat."""

    seat: Seat
    avg_bet_cents: Cents


class RatingUpdate(_Base, tag="rating_update", frozen=True):
    """Play since the previous event of this rating (increments)."""

    seat: Seat
    avg_bet_cents: Cents
    wager_cents: Cents
    points: Points


class RatingEnd(_Base, tag="rating_end", frozen=True):
    """The rating ended; carries the last increments."""

    seat: Seat
    avg_bet_cents: Cents
    wager_cents: Cents
    points: Points


TelemetryMessage = CardIn | CardOut | Game | Play | RatingStart | RatingUpdate | RatingEnd
MESSAGE_TYPES: tuple[type[_Base], ...] = (
    CardIn,
    CardOut,
    Game,
    Play,
    RatingStart,
    RatingUpdate,
    RatingEnd,
)
DeviceKind = Literal["egm", "table"]
ALLOWED_TYPES: dict[str, frozenset[str]] = {
    "egm": frozenset({"card_in", "card_out", "game", "play"}),
    "table": frozenset({"rating_start", "rating_update", "rating_end"}),
}


class Reason(enum.StrEnum):
    """Why a message was not applied; also the label of the dead-letter metric."""

    TOO_LARGE = "too_large"
    NOT_JSON = "not_json"
    INVALID = "invalid"
    UNKNOWN_TYPE = "unknown_type"
    BAD_TOPIC = "bad_topic"
    WRONG_DEVICE_KIND = "wrong_device_kind"
    FUTURE = "future"
    TOO_OLD = "too_old"
    TOO_DEEP = "too_deep"
    UNPROCESSABLE = "unprocessable"
    # contract v2, judged against the device's sequence state when the batch is applied
    BEHIND_WINDOW = "behind_window"
    OLD_EPOCH = "old_epoch"


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: Reason
    detail: str


@dataclass(frozen=True, slots=True)
class FloorEvent:
    """A validated event, normalised for the floor rules (amounts in cents, times in ms).
    A v1 event has its `id`; a v2 event has `id` "" and its `epoch` and `seq`."""

    id: str
    type: str
    kind: DeviceKind
    device: str
    card: str
    ts_ms: int
    gaming_day: str
    area: str
    seat: int
    wager_cents: int
    win_cents: int
    points: int
    games: int = 1  # the games a `play` event stands for; 1 for every other type
    epoch: str = ""
    seq: int = 0


_TAGS = frozenset(t.__struct_config__.tag for t in MESSAGE_TYPES)


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    max_payload_bytes: int
    max_future_skew: dt.timedelta
    max_age: dt.timedelta


class TelemetryDecoder:
    """Decodes telemetry for one site's topic prefix (`{prefix}/{site}/{kind}/{device}/events`)."""

    def __init__(self, *, prefix: str, site: str, calendar: GamingCalendar, limits: DecodeLimits):
        self._head = f"{prefix}/{site}/"
        self._calendar = calendar
        self._limits = limits
        self._decoder = msgspec.json.Decoder(TelemetryMessage)
        self._probe = msgspec.json.Decoder(dict[str, object])

    def topic_filter(self) -> str:
        return f"{self._head}+/+/events"

    @property
    def limits(self) -> DecodeLimits:
        return self._limits

    def decode(
        self, topic: str, payload: bytes, now: dt.datetime, *, size: int | None = None
    ) -> FloorEvent | Rejection:
        """Validate one message against the contract; `now` bounds future and late events.
        `size` is the payload's length as received when `payload` is only its first bytes
        (the ingest keeps a stub of an oversize message, never the whole of it)."""
        try:
            return self._decode(topic, payload, now, len(payload) if size is None else size)
        except Exception as exc:
            return Rejection(Reason.UNPROCESSABLE, f"the decoder failed: {_describe(exc)}")

    def _decode(
        self, topic: str, payload: bytes, now: dt.datetime, size: int
    ) -> FloorEvent | Rejection:
        if size > self._limits.max_payload_bytes:
            return Rejection(
                Reason.TOO_LARGE,
                f"payload is {size} bytes, limit {self._limits.max_payload_bytes}",
            )
        route = self._route(topic)
        if isinstance(route, Rejection):
            return route
        kind, device = route
        depth = nesting_depth(payload)
        if depth > MAX_DEPTH:
            return Rejection(Reason.TOO_DEEP, f"JSON nested {depth} levels deep, limit {MAX_DEPTH}")
        try:
            msg = self._decoder.decode(payload)
        except msgspec.ValidationError as exc:
            return self._classify(payload, str(exc))
        except msgspec.DecodeError as exc:
            return Rejection(Reason.NOT_JSON, str(exc))
        if msg.__struct_config__.tag not in ALLOWED_TYPES[kind]:
            return Rejection(
                Reason.WRONG_DEVICE_KIND,
                f"type {msg.__struct_config__.tag!r} is not sent by a {kind}",
            )
        if problem := _identity_problem(msg):
            return Rejection(Reason.INVALID, problem)
        if isinstance(msg, Play) and (problem := _interval_problem(msg)):
            return Rejection(Reason.INVALID, problem)
        if msg.ts - now > self._limits.max_future_skew:
            return Rejection(
                Reason.FUTURE, f"ts {msg.ts.isoformat()} is ahead of the floor clock {now}"
            )
        if now - msg.ts > self._limits.max_age:
            return Rejection(
                Reason.TOO_OLD,
                f"ts {msg.ts.isoformat()} is older than the de-duplication window "
                f"({self._limits.max_age}); it cannot be applied exactly once",
            )
        return FloorEvent(
            id="" if msg.id is msgspec.UNSET else msg.id,
            type=str(msg.__struct_config__.tag),
            kind=kind,
            device=device,
            card=msg.card,
            ts_ms=int(msg.ts.timestamp() * 1000),
            gaming_day=self._calendar.gaming_day(msg.ts).isoformat(),
            area=msg.area or "",
            seat=getattr(msg, "seat", 0),
            wager_cents=getattr(msg, "wager_cents", 0),
            win_cents=getattr(msg, "win_cents", 0),
            points=getattr(msg, "points", 0),
            games=getattr(msg, "games", 1),
            epoch="" if msg.epoch is msgspec.UNSET else msg.epoch,
            seq=0 if msg.seq is msgspec.UNSET else msg.seq,
        )

    def _route(self, topic: str) -> tuple[DeviceKind, str] | Rejection:
        if not topic.startswith(self._head):
            return Rejection(Reason.BAD_TOPIC, f"topic {topic!r} is not under {self._head}")
        parts = topic[len(self._head) :].split("/")
        if len(parts) != 3 or parts[2] != "events" or parts[0] not in ALLOWED_TYPES:
            return Rejection(
                Reason.BAD_TOPIC,
                f"topic {topic!r} is not {self._head}egm|table/DEVICE/events",
            )
        device = parts[1]
        if not device or len(device) > 64 or "#" in device or "+" in device:
            return Rejection(
                Reason.BAD_TOPIC, f"device id {device[:80]!r} is empty, too long or has # or +"
            )
        if problem := unprintable("device id", device):
            return Rejection(Reason.BAD_TOPIC, problem)
        kind: DeviceKind = "egm" if parts[0] == "egm" else "table"
        return kind, device

    def _classify(self, payload: bytes, detail: str) -> Rejection:
        """Tell an unknown `type` apart from a malformed known one."""
        try:
            raw = self._probe.decode(payload)
        except Exception:
            return Rejection(Reason.INVALID, detail)
        kind = raw.get("type")
        if isinstance(kind, str) and kind not in _TAGS:
            return Rejection(Reason.UNKNOWN_TYPE, f"unknown event type {kind!r}")
        return Rejection(Reason.INVALID, detail)


_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*+"')  # once escapes are gone; possessive: linear time
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
for _open, _close in (b"[]", b"{}"):
    _STEP[_open], _STEP[_close] = 1, -1


def nesting_depth(payload: bytes) -> int:
    """How deeply arrays and objects nest in `payload`, counting only brackets outside
    strings (0 when it has too few brackets to nest deeper than `MAX_DEPTH`). Linear in
    its length, safe on any bytes, valid JSON or not; an unclosed string counts the
    brackets after it, so it errs on the deep side."""
    if payload.count(b"[") + payload.count(b"{") <= MAX_DEPTH:
        return 0  # the common case: too few brackets to nest too deeply
    outside = _STRING.sub(b"", _ESCAPE.sub(b"", payload)).translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, outside)), default=0)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _identity_problem(msg: _Base) -> str:
    """Why the event's identity (v1 `id`, or v2 `epoch` and `seq`) is unacceptable, or ""."""
    v2 = msg.epoch is not msgspec.UNSET or msg.seq is not msgspec.UNSET
    if msg.id is not msgspec.UNSET:
        if v2:
            return "an event carries `id` (contract v1) or `epoch` and `seq` (v2), not both"
        return unprintable("id", msg.id)
    if msg.epoch is msgspec.UNSET or msg.seq is msgspec.UNSET:
        missing = "`epoch`" if msg.epoch is msgspec.UNSET else "`seq`"
        if not v2:
            return "an event needs `id` (contract v1) or `epoch` and `seq` (v2)"
        return f"a contract v2 event needs `epoch` and `seq`: {missing} is missing"
    return unprintable("epoch", msg.epoch)


def _interval_problem(msg: Play) -> str:
    """Why a `play` interval is unacceptable, or "" if it is fine."""
    if msg.since >= msg.ts:
        return (
            f"play interval is empty or reversed: since {msg.since.isoformat()} is not "
            f"before ts {msg.ts.isoformat()}"
        )
    if msg.ts - msg.since > MAX_PLAY_INTERVAL:
        return (
            f"play interval {msg.ts - msg.since} is longer than {MAX_PLAY_INTERVAL}: "
            "send one play event per interval of at most 15 minutes"
        )
    return ""


# Exactly one identity: v1's `id`, or v2's `epoch` with `seq` (what `_identity_problem`
# enforces, in JSON Schema's words)
_IDENTITY = {
    "oneOf": [
        {"required": ["id"], "not": {"anyOf": [{"required": ["epoch"]}, {"required": ["seq"]}]}},
        {"required": ["epoch", "seq"], "not": {"required": ["id"]}},
    ]
}


def json_schemas() -> dict[str, object]:
    """JSON Schema of each event type, generated from the types above (docs/schemas/)."""
    out: dict[str, object] = {}
    for cls in MESSAGE_TYPES:
        tag = cls.__struct_config__.tag
        schema = msgspec.json.schema(cls)
        schema["$defs"][cls.__name__].update(_IDENTITY)
        out[str(tag)] = schema
    return out
