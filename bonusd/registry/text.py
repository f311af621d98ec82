"""Text from outside shown to people: the two rules every door applies before a name or
an id reaches a screen, a log or an operator's terminal. Pure.

- A name (a member's, a proxy's, an area's label) may hold any printable letter, also
  no-break spaces and the joiners of emoji and scripts, but no control character, line
  or paragraph separator, bidi embedding, override or isolate (a U+202E shows "Anna" as
  "annA"), and no lone surrogate (`plain_text`).
- An id (an event id, a device id, a card) must be printable through and through: no
  control, format, bidi or separator character but the plain space (`unprintable`).
"""

from __future__ import annotations

import re

# C0 and C1 controls (newline, ESC, BEL, ...), line and paragraph separators, the bidi
# embeddings, overrides and isolates, lone surrogates
_UNSAFE_IN_NAMES = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def plain_text(value: str) -> str:
    """`value` unchanged, or `ValueError` naming the first control or direction character."""
    bad = _UNSAFE_IN_NAMES.search(value)
    if bad is not None:
        raise ValueError(
            f"contains the control or text-direction character U+{ord(bad.group()):04X} "
            f"at position {bad.start() + 1}; remove it (names are shown on screens as they are)"
        )
    return value


def unprintable(field: str, text: str) -> str:
    """Why the id `text` may not be shown as it is, or "" if it may. Such characters in an
    id reach operators' terminals, logs and screens: a right-to-left override reverses
    what follows it, an escape sequence drives the terminal."""
    if text.isprintable():
        return ""
    at, char = next((n, c) for n, c in enumerate(text) if not c.isprintable())
    return (
        f"{field} holds an unprintable character U+{ord(char):04X} at position {at} "
        "(control, format, bidi or separator characters are refused)"
    )
