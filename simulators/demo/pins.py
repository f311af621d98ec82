"""The demo's members with kiosk PINs: a few members of the simulated floor, chosen by a
fixed rule (so the same seed gives the same cards), each with a known PIN, hashed when the
demo builds its member file (`members.csv`'s `pin_hash` column) and printed with the
pages' tokens, so a newcomer can try the kiosk. One of them is excluded: after the PIN the
kiosk shows the neutral screen, as it does for every excluded member.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bonusd.access.pins import hash_pin


class _Member(Protocol):
    """A simulated member or an imported `bonusd.registry.records.Member`: both will do."""

    @property
    def card(self) -> str: ...
    @property
    def tier(self) -> str: ...
    @property
    def app_user(self) -> bool: ...
    @property
    def excluded(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class DemoPin:
    """One demo member's card and PIN, and what the kiosk will show for them."""

    card: str
    pin: str
    who: str


# (PIN, what the member is, the first member in floor order who is that): a playing
# member of each kind the kiosk words differently, and one it must not show at all
_CHOICES: tuple[tuple[str, str, str], ...] = (
    ("1234", "tier A member", "A"),
    ("2468", "app user (the app bonus on the kiosk)", "app"),
    ("1357", "tier 10 member", "10"),
    ("9999", "excluded member: the kiosk shows its neutral screen", "excluded"),
)


def _fits(member: _Member, kind: str) -> bool:
    if kind == "excluded":
        return member.excluded
    if member.excluded:
        return False
    return member.app_user if kind == "app" else str(member.tier) == kind


def demo_pins(members: Iterable[_Member]) -> tuple[DemoPin, ...]:
    """The demo's PIN members of `members` (in floor order): one per choice that some
    member fits, never one member twice."""
    members = list(members)
    taken: set[str] = set()
    chosen = []
    for pin, who, kind in _CHOICES:
        member = next((m for m in members if m.card not in taken and _fits(m, kind)), None)
        if member is not None:
            taken.add(member.card)
            chosen.append(DemoPin(member.card, pin, who))
    return tuple(chosen)


def pin_hashes(pins: Sequence[DemoPin]) -> Mapping[str, str]:
    """Card -> the hash of its PIN, for the member file (a few tens of ms each)."""
    return {p.card: hash_pin(p.pin) for p in pins}


def pin_lines(pins: Sequence[DemoPin]) -> str:
    """What the demo prints about them: each card, its PIN, and who the member is."""
    if not pins:
        return ""
    lines = ["Kiosk PINs of a few demo members (the card at the kiosk, then the PIN):"]
    lines += [f"  card {p.card}  PIN {p.pin}  {p.who}" for p in pins]
    return "\n".join(lines)
