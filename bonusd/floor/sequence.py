"""A device's contract v2 sequence state, as `lua/seqstate.lua` keeps it: read for the API.

The script is the one writer (inside the atomic apply of a batch); this module only reads
the record it leaves in the site's `devseq` hash, one field per device. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOW = 128  # sequence numbers below an epoch's high-water mark still accepted (seqstate.lua)
_WORDS = WINDOW // 32
_FIELDS = 5 + _WORDS + 2 + _WORDS


@dataclass(frozen=True, slots=True)
class EpochState:
    """One epoch of a device: its name, its high-water mark and which of the `WINDOW`
    sequence numbers up to it were applied."""

    epoch: str
    high: int  # the highest `seq` applied
    applied: frozenset[int]  # the applied sequence numbers of (high - WINDOW, high]

    @property
    def missing(self) -> int:
        """Sequence numbers of the window not applied yet: they may still arrive."""
        low = max(1, self.high - WINDOW + 1)
        return self.high - low + 1 - len(self.applied)


@dataclass(frozen=True, slots=True)
class DeviceSequence:
    """What bonusd knows of a v2 device's event sequence."""

    gaps: int  # sequence numbers lost for good (behind the window, or of a forgotten epoch)
    epochs: int  # epochs seen (boots)
    current: EpochState
    first_ms: int  # the earliest event time applied in the current epoch
    previous: EpochState | None  # kept for its late events


def _applied(words: list[str], high: int) -> frozenset[int]:
    bits = 0
    for place, word in enumerate(words):
        bits |= (int(word) & 0xFFFF_FFFF) << (32 * place)
    low = max(1, high - WINDOW + 1)
    return frozenset(seq for seq in range(low, high + 1) if bits >> (seq % WINDOW) & 1)


def parse_state(raw: str) -> DeviceSequence:
    """The record of one device (ValueError if it is not one)."""
    fields = raw.split("\t")
    if len(fields) != _FIELDS:
        raise ValueError(f"a device sequence record has {_FIELDS} fields, got {len(fields)}")
    high = int(fields[3])
    current = EpochState(fields[2], high, _applied(fields[5 : 5 + _WORDS], high))
    at = 5 + _WORDS
    previous = None
    if fields[at]:
        prev_high = int(fields[at + 1])
        ring = fields[at + 2 : at + 2 + _WORDS]
        previous = EpochState(fields[at], prev_high, _applied(ring, prev_high))
    return DeviceSequence(int(fields[0]), int(fields[1]), current, int(fields[4]), previous)
