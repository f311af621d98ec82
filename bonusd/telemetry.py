"""The telemetry contract v1: event types, topic layout and the decoder.

The decoder turns one MQTT message (topic and payload) into a `FloorEvent` or a
`Rejection` with a reason. It never raises for bad input: a bad message is data for the
dead-letter stream, not a fault. See docs/telemetry.md for the contract in prose.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec

from bonusd.clock import GamingCalendar

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
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


class _Base(msgspec.Struct, tag_field="type", frozen=True, kw_only=True):
    id: Id
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


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: Reason
    detail: str


@dataclass(frozen=True, slots=True)
class FloorEvent:
    """A validated event, normalised for the floor rules (amounts in cents, times in ms)."""

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

    def decode(self, topic: str, payload: bytes, now: dt.datetime) -> FloorEvent | Rejection:
        """Validate one message against the contract; `now` bounds future and late events."""
        if len(payload) > self._limits.max_payload_bytes:
            return Rejection(
                Reason.TOO_LARGE,
                f"payload is {len(payload)} bytes, limit {self._limits.max_payload_bytes}",
            )
        route = self._route(topic)
        if isinstance(route, Rejection):
            return route
        kind, device = route
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
            id=msg.id,
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
                Reason.BAD_TOPIC, f"device id {device!r} is empty, too long or has # or +"
            )
        kind: DeviceKind = "egm" if parts[0] == "egm" else "table"
        return kind, device

    def _classify(self, payload: bytes, detail: str) -> Rejection:
        """Tell an unknown `type` apart from a malformed known one."""
        try:
            raw = self._probe.decode(payload)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return Rejection(Reason.INVALID, detail)
        kind = raw.get("type")
        if isinstance(kind, str) and kind not in _TAGS:
            return Rejection(Reason.UNKNOWN_TYPE, f"unknown event type {kind!r}")
        return Rejection(Reason.INVALID, detail)


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


def json_schemas() -> dict[str, object]:
    """JSON Schema of each event type, generated from the types above (docs/schemas/)."""
    out: dict[str, object] = {}
    for cls in MESSAGE_TYPES:
        tag = cls.__struct_config__.tag
        out[str(tag)] = msgspec.json.schema(cls)
    return out
