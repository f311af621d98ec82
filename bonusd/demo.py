"""The main job for a newcomer: the daemon, a simulated casino floor publishing into it,
and the HTTP API, on simulated time, in one command (`bonusd demo`).

The floor registry (EGMs, tables, members) comes from the simulator with the same seed,
so every card and device the floor sends is known. The simulator runs as a child process
that publishes over MQTT, exactly as real interface boards would.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import logging
import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass

from rich.console import Console

from bonusd.auth import Role
from bonusd.clock import SimulatedClock
from bonusd.registry import Device, Member, parse_text
from bonusd.service import Service
from bonusd.settings import Settings
from simulators import FloorConfig, build_floor, write_devices_csv, write_members_csv

logger = logging.getLogger(__name__)
# simulated time runs fast (x60: a year in six days of wall time)
DEMO_TOKEN_LIFETIME = dt.timedelta(days=365)
JOHANNESBURG_LAUNCH = dt.datetime.fromisoformat("2026-10-03T16:55:00+02:00")


@dataclass(frozen=True, slots=True)
class DemoFloor:
    """The size and randomness of the demo's floor."""

    egms: int = 300
    tables: int = 12
    members: int = 3000
    seed: int = 42
    hours: float = 12.0


async def run_demo(settings: Settings, floor: DemoFloor, console: Console) -> None:
    """Import the floor, start the daemon and the simulator; run until Ctrl-C / SIGTERM."""
    start = settings.clock_start or JOHANNESBURG_LAUNCH
    speed = settings.clock_speed if settings.clock_speed != 1.0 else 60.0
    clock = SimulatedClock(start, speed)
    sim = build_floor(
        FloorConfig(egms=floor.egms, tables=floor.tables, members=floor.members),
        seed=floor.seed,
        as_of=start.date(),
    )
    # through the same CSV a casino would export, so the demo exercises the real import
    devices_csv, members_csv = io.StringIO(), io.StringIO()
    write_devices_csv(sim, devices_csv)
    write_members_csv(sim, members_csv)
    devices = parse_text(Device, devices_csv.getvalue(), source="simulated devices.csv")
    members = parse_text(Member, members_csv.getvalue(), source="simulated members.csv")
    async with Service(settings, clock=clock) as service:
        await service.store.import_devices(devices)
        await service.store.import_members(members)
        base = f"http://{settings.http_host}:{settings.http_port}"
        tokens = {}
        for role in (Role.ADMIN, Role.DESK, Role.CREW, Role.KIOSK, Role.SIGNAGE):
            issued = await service.tokens.issue(
                role=role,
                name=f"demo {role}",
                area="main" if role is Role.SIGNAGE else "",
                now=clock.now(),
                valid_for=DEMO_TOKEN_LIFETIME,
            )
            tokens[role] = issued.token
        console.print(
            f"[bold]bonusd demo[/bold] site [cyan]{settings.site}[/cyan]: "
            f"{len(devices)} devices, {len(members)} members, simulated time from "
            f"{start.isoformat()} at x{speed:g}\n"
            f"  API docs     {base}/docs\n"
            f"  health       {base}/health\n"
            f"  live floor   {base}/floor/active\n"
            f"  metrics      {base}/metrics\n"
            f"  promotions   {base}/promotions  (running: "
            f"{', '.join(p.id for p in service.promotions) or 'none for this site'})\n"
            "Tokens for this demo (a fresh set each run; `bonusd tokens list` shows them):\n"
            + "".join(f"  {role.value:8s} {token}\n" for role, token in tokens.items())
            + f"  e.g. curl -H 'Authorization: Bearer {tokens[Role.DESK]}' {base}/floor/active\n"
            "Ctrl-C stops everything."
        )
        simulator = _start_simulator(settings, floor, start, speed)
        try:
            await service.run()
        finally:
            if simulator.poll() is None:
                simulator.send_signal(signal.SIGTERM)
            simulator.wait(10)


def _start_simulator(
    settings: Settings, floor: DemoFloor, start: dt.datetime, speed: float
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "simulators",
        "run",
        f"--mqtt-url={settings.mqtt_url}",
        f"--site={settings.site}",
        f"--prefix={settings.topic_prefix}",
        f"--seed={floor.seed}",
        f"--egms={floor.egms}",
        f"--tables={floor.tables}",
        f"--members={floor.members}",
        f"--start={start.isoformat()}",
        f"--duration={int(floor.hours * 60)}m",
        f"--speed={speed:g}",
        # a fresh run id: a second demo run must not be a replay of the first
        f"--run-id=demo{secrets.token_hex(3)}",
    ]
    return subprocess.Popen(command, env=os.environ.copy())


def main(settings: Settings, floor: DemoFloor) -> None:
    asyncio.run(run_demo(settings, floor, Console()))
