"""Response pieces several resources share: times as the API writes them, and a claim's
deadline. The resources' own response models live beside their routes."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, TypedDict

from pydantic import BaseModel, PlainSerializer, WithJsonSchema

IsoTime = Annotated[
    dt.datetime,
    PlainSerializer(lambda t: t.isoformat(), return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A time as ISO 8601 with its UTC offset (`2026-10-03T17:00:00+02:00`)."""

LocalTime = Annotated[
    dt.time,
    PlainSerializer(lambda t: t.isoformat(), return_type=str),
    WithJsonSchema({"type": "string", "pattern": r"^\d{2}:\d{2}(:\d{2}(\.\d+)?)?$"}),
]
"""A time of day on the floor's clock, without an offset (`20:00:00`)."""


class Deadline(BaseModel):
    deadline: IsoTime | None  # while a claim timer runs: when it ends
    seconds_left: float | None  # and the seconds left before it (0 when passed)


class DeadlineFields(TypedDict):
    deadline: dt.datetime | None
    seconds_left: float | None


def deadline_of(deadline: dt.datetime | None, now: dt.datetime) -> DeadlineFields:
    """A claim's deadline and the seconds left before it, as the pages show them."""
    if deadline is None:
        return {"deadline": None, "seconds_left": None}
    return {"deadline": deadline, "seconds_left": max(0.0, (deadline - now).total_seconds())}
