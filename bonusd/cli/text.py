"""Untrusted text on the operator's terminal, made harmless: the one helper every command
uses for text that came from outside (telemetry, dead letters, imports, the audit trail,
tokens, draw reports).

A control character (ESC, BEL, a C1 control such as CSI) or a text-direction override in
such text could retitle or clear the terminal, hide lines or reverse what is read; each
is shown as a visible escape instead (`\\x1b`, `\\u202e`). Rich markup in it (`[link=…]`,
`[red]`) is shown literally: table cells are `rich.text.Text`, never markup.
"""

from __future__ import annotations

import re

from rich.text import Text

# C0 and C1 controls, line/paragraph separators, bidi marks, embeddings, overrides and
# isolates, lone surrogates
_UNSAFE = re.compile(
    "[\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e"
    "\\u2066-\\u2069\\ud800-\\udfff]"
)
_UNSAFE_BUT_LINES = re.compile(_UNSAFE.pattern.replace("\\x00-\\x1f", "\\x00-\\x09\\x0b-\\x1f"))


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object) -> str:
    """`text` as one line that is safe to print: every control and direction character
    replaced by its visible escape (newlines too)."""
    return _UNSAFE.sub(_visible, str(text))


def safe_lines(text: object) -> str:
    """Like `safe`, but line breaks (`\\n`) are kept: for reports and error messages."""
    return _UNSAFE_BUT_LINES.sub(_visible, str(text))


def cell(text: object) -> Text:
    """A Rich table cell (or printable) showing `text` literally: no markup, no escapes."""
    return Text(safe(text))


def block(text: object) -> Text:
    """Several lines for a Rich console, literally (error messages)."""
    return Text(safe_lines(text))
