"""The demo's staff accounts: one person per role who signs in at /crew and /desk with a
staff number and PIN (docs/security.md, "Staff sign-in"), and a second desk member for the
four-eyes approvals. Printed by `bonusd demo` instead of tokens; the demo's own crew and
kiosk are machines and keep their tokens, which are not printed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from bonusd.access.staff import StaffStore


@dataclass(frozen=True, slots=True)
class DemoStaff:
    number: str
    name: str
    role: str
    pin: str
    page: str  # where they sign in


# first names the simulated floor never gives its members (simulators/names.py), so no
# staff member shares a full name with a member
DEMO_STAFF = (
    DemoStaff("2001", "Vusi Mazibuko", "crew", "246810", "/crew"),
    DemoStaff("1001", "Nandi Ximba", "desk", "135790", "/desk"),
    DemoStaff("1002", "Zodwa Mkhize", "desk", "975310", "/desk (a second pair of eyes)"),
    DemoStaff("9001", "Ilse Olivier", "admin", "864200", "/desk (with its Staff tab)"),
)


async def add_demo_staff(store: StaffStore, now: dt.datetime) -> None:
    """The demo's staff accounts, on a site the demo has just emptied."""
    for person in DEMO_STAFF:
        await store.add(
            number=person.number, name=person.name, role=person.role, pin=person.pin, now=now
        )


def staff_lines(base: str) -> str:
    """What the demo prints about them: who signs in where, with which number and PIN."""
    lines = ["Sign in with a staff number and PIN (a badge reader types the number):"]
    lines += [
        f"  {p.role:<6} staff {p.number}  PIN {p.pin}  {p.name:<16} {base}{p.page}"
        for p in DEMO_STAFF
    ]
    return "\n".join(lines)
