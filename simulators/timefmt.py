"""Fast local-time stamps for simulated events.

The generator keeps time as integer milliseconds since the Unix epoch and needs, for
every event, an RFC 3339 stamp in local time with the zone's offset and millisecond
precision (`2026-10-03T17:05:00.250+02:00`). Events come in time order, so the text up
to the minute is computed once per simulated minute and reused. Also parses the CLI's
durations (`2h`, `1h30m`).
"""

from __future__ import annotations

import datetime as dt
import re
from types import MappingProxyType
from typing import Final
from zoneinfo import ZoneInfo

_MINUTE_MS = 60_000


def to_ms(instant: dt.datetime) -> int:
    """Milliseconds since the Unix epoch of an aware datetime."""
    if instant.tzinfo is None:
        raise ValueError(f"instant must be timezone-aware, got {instant.isoformat()}")
    delta = instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return delta // dt.timedelta(milliseconds=1)


class LocalStamper:
    """Formats epoch milliseconds as local RFC 3339 text; tracks the local hour."""

    __slots__ = ("_hour", "_minute", "_prefix", "_suffix", "_zone")

    def __init__(self, zone: ZoneInfo) -> None:
        self._zone = zone
        self._minute = -1
        self._prefix = ""
        self._suffix = ""
        self._hour = 0

    def _load(self, minute: int) -> None:
        local = dt.datetime.fromtimestamp(minute * 60, tz=self._zone)
        self._minute = minute
        self._prefix = local.strftime("%Y-%m-%dT%H:%M:")
        self._hour = local.hour
        offset = local.utcoffset() or dt.timedelta(0)
        sign = "-" if offset < dt.timedelta(0) else "+"
        minutes = abs(offset) // dt.timedelta(minutes=1)
        self._suffix = f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"

    def stamp(self, t_ms: int) -> str:
        """`t_ms` as e.g. `2026-10-03T17:05:00.250+02:00`."""
        minute, rest = divmod(t_ms, _MINUTE_MS)
        if minute != self._minute:
            self._load(minute)
        seconds, millis = divmod(rest, 1000)
        return f"{self._prefix}{seconds:02d}.{millis:03d}{self._suffix}"

    def hour(self, t_ms: int) -> int:
        """The local hour of day (0..23) at `t_ms`."""
        minute = t_ms // _MINUTE_MS
        if minute != self._minute:
            self._load(minute)
        return self._hour


_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
_UNIT_SECONDS: Final = MappingProxyType({"d": 86_400, "h": 3_600, "m": 60, "s": 1})


def parse_duration(text: str) -> dt.timedelta:
    """`2h`, `90m`, `1h30m`, `45s`, `1.5d` as a timedelta."""
    compact = text.strip().lower().replace(" ", "")
    pieces = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in pieces) != compact:
        raise ValueError(f"duration {text!r} must look like 2h, 90m, 1h30m, 45s or 1.5d")
    return dt.timedelta(seconds=sum(float(n) * _UNIT_SECONDS[u] for n, u in pieces))
