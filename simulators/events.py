"""The simulator's unit of output: one telemetry event, when and where it happens."""

from __future__ import annotations

from typing import NamedTuple

Payload = dict[str, str | int]


class SimEvent(NamedTuple):
    """One telemetry event: when (epoch ms), from which device, and its JSON object."""

    t_ms: int
    kind: str
    """`egm` or `table`: the topic segment."""
    device: str
    payload: Payload
