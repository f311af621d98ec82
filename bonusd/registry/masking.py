"""Public forms of a member's name and card for floor screens (POPIA): "T. M****" and
"****3456". Pure.

A public form keeps the first letter of the first and of the last word of a name, and
at most the last four characters of a card, always hiding at least four: a card of four
characters or fewer is shown as "****" alone. Whatever the input (a one-letter name, a
name that is itself an initial, digits inside a name, a name equal to the end of the
card), a public form never contains the full name or the full card: where the short form
would, the field is hidden entirely.
"""

from __future__ import annotations

STARS = "****"
SHOWN_CARD_CHARS = 4
HIDDEN_CARD_CHARS = 4


def _contains(haystack: str, needle: str) -> bool:
    needle = needle.strip()
    if not needle:
        return False
    return needle in haystack or needle.casefold() in haystack.casefold()


def _safe(candidates: tuple[str, ...], *secrets: str) -> str:
    """The first candidate that contains none of `secrets` (the last, "", always does)."""
    for text in candidates:
        if not any(_contains(text, s) for s in secrets):
            return text
    return ""


def mask_name(name: str) -> str:
    """`Thandi Mokoena` -> `T. M****`; `Cher` -> `C****`; blank -> ``."""
    words = name.split()
    if not words:
        return ""
    short = f"{words[0][0]}. {words[-1][0]}{STARS}" if len(words) > 1 else words[0][0] + STARS
    return _safe((short, STARS, ""), name)


def mask_card(card: str) -> str:
    """`6001009123456` -> `****3456`; `12345` -> `****5`; `1234` -> `****`; blank -> ``."""
    card = card.strip()
    if not card:
        return ""
    shown = min(SHOWN_CARD_CHARS, max(0, len(card) - HIDDEN_CARD_CHARS))
    short = STARS + (card[-shown:] if shown else "")
    return _safe((short, STARS, ""), card)


def public_member(name: str, card: str) -> dict[str, str]:
    """`{"name", "card"}` as a public screen may show them. Each field is also checked
    against the other's full value (a name that reads like the card's last digits)."""
    return {
        "name": _safe((mask_name(name), STARS, ""), name, card),
        "card": _safe((mask_card(card), STARS, ""), name, card),
    }
