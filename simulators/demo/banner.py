"""What `bonusd demo` prints once the floor opens (simulators/demo/main.py): the floor's
size, the pages (people sign in with the staff numbers and PINs printed after it; machines
hold tokens), then what to watch and when, in simulated time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from bonusd.access.auth import Role
from bonusd.promotions import Action, Promotion, TimedAction
from bonusd.registry.records import Device, Member

WATCHED = {
    Action.MULTIPLIER_STARTS: "a points multiplier window opens",
    Action.JACKPOT: "a RAPS bonus jackpot: the crew is alerted to the winner's machine",
    Action.DRAW_ROUND: "a draw round: its winners on the signage, the crew works the claims",
}


def floor_sizes(devices: Sequence[Device], members: Sequence[Member]) -> str:
    """The floor in a few words: its EGMs, tables and members."""
    egms = sum(d.kind == "egm" for d in devices)
    return f"{egms:,} EGMs, {len(devices) - egms:,} tables, {len(members):,} members"


def banner(
    *,
    site: str,
    floor_name: str,
    sizes: str,
    promotion: Promotion,
    start: dt.datetime,
    speed: float,
    crew_after: float,
    base: str,
    tokens: Mapping[Role, str],
    timetable: Sequence[TimedAction],
) -> str:
    """What the demo prints: the pages (and the machines' tokens), then what to watch."""
    p = promotion
    crew = (
        f"the demo's crew takes a claim nobody touched for {crew_after:g} s "
        "(--crew-after): beat it on /crew"
        if crew_after > 0
        else "nobody but you works the claims, on /crew (--crew-after 0)"
    )
    lines = [
        f"bonusd demo: site {site}, {floor_name} ({sizes}), promotion {p.id} ({p.name})",
        f"Simulated time from {start:%a %d %b %Y %H:%M} at x{speed:g}, x1 while a "
        "winner's claim is open. Every run starts over.",
        "",
        f"  signage          {base}/signage   shows a code to pair, by hand: on the desk's "
        "Screens tab (area main), or",
        '                   bonusd screens pair CODE --area main --name "Demo screen"',
        f"  crew handheld    {base}/crew   sign in: staff number and PIN below",
        f"  promotions desk  {base}/desk   sign in: staff number and PIN below",
        f"  API docs         {base}/docs   admin token: {tokens[Role.ADMIN]}",
        f"  eHost kiosk      {base}/kiosk   token: {tokens[Role.KIOSK]}"
        "   (type a card number and Enter, as its card reader does; cards and PINs below)",
        f"  the casino's app {base}/app/members/CARD   app token: {tokens[Role.APP]}"
        "   (docs/app-api.md)",
        f"  health           {base}/health",
        f"  e.g. curl -H 'Authorization: Bearer {tokens[Role.ADMIN]}' {base}/floor/active",
        "",
        "What to watch (simulated time; at x60 a simulated minute is a wall second):",
    ]
    todo = dict(WATCHED)
    for item in timetable:
        if item.action in todo:
            lines.append(f"  {item.at.astimezone(p.zone):%H:%M}  {todo.pop(item.action)}")
    lines += [f"  ... and more; {crew}.", "Ctrl-C stops everything."]
    return "\n".join(lines)
