"""The RAPS floor snapshot archived as a difference from a base (docs/fairness.md, section
10, form 2): a jackpot's floor written as the lines that changed since a whole snapshot the
daemon archived a moment before the jackpot's instant, so the pick moves and hashes the
few hundred rows that changed in those seconds instead of the whole floor.

    bonusd-raps-floor 2 <jackpot instant, epoch ms> <the base's SHA-256>\\n
    <a whole snapshot line: the card's line at the instant, replacing the base's or added>
    <card>\\n        (a card of the base that left the floor before the instant)

The base is a whole snapshot (form 1) archived beside it under its own SHA-256; its header's
instant is ignored. A card appears at most once in the difference. The floor at the instant
is the base's lines with each card's line replaced, added or removed as the difference
says; its SHA-256 is the difference file's (it names the base's, so one hash binds both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAGIC2 = "bonusd-raps-floor 2"
_HEADER2 = re.compile(rf"{MAGIC2} (\d{{1,15}}) ([0-9a-f]{{64}})")
_WIDTH = 10  # fields of a whole snapshot line (snapshot.COLUMNS)


class DeltaError(ValueError):
    """A difference file, or its base, not in the documented form."""


@dataclass(frozen=True)
class FloorDelta:
    """The difference part of a form-2 file: the base it applies to and its lines."""

    base_sha256: str
    text: str  # the lines after the header, each ending in LF ("" when nothing changed)

    def file(self, at_ms: int) -> bytes:
        """The archived file of a jackpot at `at_ms`."""
        return f"{MAGIC2} {at_ms} {self.base_sha256}\n{self.text}".encode()


def is_delta(raw: bytes) -> bool:
    """Whether an archived floor file is a difference (form 2)."""
    return raw.startswith(MAGIC2.encode() + b" ")


def base_named(raw: bytes) -> str:
    """The SHA-256 of the base a difference file names."""
    header = raw.split(b"\n", 1)[0].decode("ascii", "replace")
    found = _HEADER2.fullmatch(header)
    if found is None:
        raise DeltaError(f"not a RAPS floor snapshot (a difference, header {header[:90]!r})")
    return found.group(2)


def parse_delta(raw: bytes) -> tuple[int, FloorDelta]:
    """The instant and the difference of a form-2 file (its lines checked for their shape;
    that they apply to the base is checked by `apply_delta`)."""
    header, sep, body = raw.decode().partition("\n")
    found = _HEADER2.fullmatch(header)
    if not sep or found is None:
        raise DeltaError(f"not a RAPS floor snapshot (a difference, header {header[:90]!r})")
    if body and not body.endswith("\n"):
        raise DeltaError("a RAPS floor difference ends with a line feed")
    return int(found.group(1)), FloorDelta(found.group(2), body)


def apply_delta(base_body: str, delta: FloorDelta) -> str:
    """The floor's lines: `base_body` (a whole snapshot's lines) with the difference
    applied. Refused: a line that is neither a whole line nor a card alone, a card twice
    in the difference, a removal of a card the base does not hold."""
    lines = base_body.split("\n")[:-1] if base_body else []
    where = {line.partition("\t")[0]: at for at, line in enumerate(lines)}
    seen: set[str] = set()
    added: list[str] = []
    for line in delta.text.split("\n")[:-1] if delta.text else []:
        fields = line.count("\t") + 1
        card = line.partition("\t")[0]
        if fields not in (1, _WIDTH) or not card:
            raise DeltaError(f"a RAPS floor difference line has {fields} fields (1 or {_WIDTH})")
        if card in seen:
            raise DeltaError("a card appears twice in a RAPS floor difference")
        seen.add(card)
        at = where.get(card)
        if fields == 1:
            if at is None:
                raise DeltaError("a RAPS floor difference removes a card its base does not hold")
            lines[at] = ""
        elif at is None:
            added.append(line)
        else:
            lines[at] = line
    kept = [line for line in lines if line] + added
    return "".join(line + "\n" for line in kept)
