"""`bonusd clock`: show and steer the shared simulated clock of a site (docs/clock.md).

    bonusd clock show | pause | resume | jump 2h | speed 600 | set 2026-10-03T16:55:00+02:00

Every command acts on the clock of `BONUSD_SITE` in `BONUSD_REDIS_URL`; every daemon and
the simulator sharing it follow within a second (at once, through the change channel).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Awaitable, Callable
from typing import Annotated

import redis.asyncio as aioredis
import typer

from bonusd.cli.text import safe_lines
from bonusd.clocks.clock import Clock
from bonusd.clocks.clockstate import ClockState, instant_of
from bonusd.errors import ClockError
from bonusd.infra.redisclient import redis_client
from bonusd.infra.sharedclock import SharedClock, clock_from
from bonusd.settings import Settings

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> dt.timedelta:
    """`2h`, `90m`, `1d12h`, `1h30m`, `45s` -> a timedelta; a `ClockError` otherwise."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ClockError(
            f"cannot read the duration {text!r}: use a number and a unit s, m, h or d, "
            "e.g. 2h, 90m, 1d12h"
        )
    delta = dt.timedelta()
    for number, unit in parts:
        delta += dt.timedelta(**{_UNITS[unit]: float(number)})
    return delta


def prefix_of(settings: Settings) -> str:
    return SharedClock.site_prefix(settings.key_prefix, settings.site)


async def settings_clock(settings: Settings, redis: aioredis.Redis) -> Clock:
    """The clock the settings name, ready to read: a shared one is opened (and created
    from `BONUSD_CLOCK_START` / `BONUSD_CLOCK_SPEED` if it does not exist yet)."""
    clock = clock_from(
        settings.clock_start,
        settings.clock_speed,
        settings.clock,
        redis=redis,
        prefix=prefix_of(settings),
        changed_by="cli",
    )
    if isinstance(clock, SharedClock):
        await clock.open()
    return clock


def describe(clock: SharedClock, settings: Settings) -> str:
    """What `bonusd clock show` prints."""
    state: ClockState = clock.state
    now = clock.now()
    wall = instant_of(state.origin_wall * 1000.0)
    return "\n".join(
        [
            f"clock    {clock.key}",
            f"now      {now.isoformat(timespec='seconds')}"
            f"  ({now.astimezone(settings.zone).isoformat(timespec='seconds')} local)",
            f"state    {'paused' if state.paused else 'running'} at x{state.speed:g}",
            f"version  {state.version} (epoch {state.epoch})",
            f"changed  by {state.changed_by or '?'} at {wall.isoformat(timespec='seconds')} (wall)",
        ]
    )


def add_clock_commands(app: typer.Typer, settings: Callable[[], Settings]) -> None:
    """Register `bonusd clock ...` on the main command."""
    clock_app = typer.Typer(help="The shared simulated clock (docs/clock.md).")
    app.add_typer(clock_app, name="clock", no_args_is_help=True)

    def act(change: Callable[[SharedClock], Awaitable[object]] | None) -> None:
        cfg = settings()

        async def main() -> str:
            redis = redis_client(cfg)
            try:
                clock = SharedClock(redis, prefix_of(cfg), changed_by="cli")
                await clock.open_existing()
                if change is not None:
                    await change(clock)
                return describe(clock, cfg)
            finally:
                await redis.aclose()

        typer.echo(safe_lines(asyncio.run(main())))  # 'changed by' is from Redis

    @clock_app.command("show")
    def show() -> None:
        """The simulated instant (UTC and local), speed, paused or running, last change."""
        act(None)

    @clock_app.command("pause")
    def pause() -> None:
        """Stop simulated time (every daemon and the simulator wait)."""
        act(lambda c: c.pause())

    @clock_app.command("resume")
    def resume() -> None:
        """Let simulated time run again from where it stood."""
        act(lambda c: c.resume())

    @clock_app.command("jump")
    def jump(
        duration: Annotated[str, typer.Argument(help="Forward by: 2h, 90m, 1d12h, 45s.")],
    ) -> None:
        """Move the clock forward; actions jumped over run late, once each, in order."""
        delta = parse_duration(duration)
        act(lambda c: c.jump(delta))

    @clock_app.command("speed")
    def speed(
        factor: Annotated[float, typer.Argument(help="Simulated seconds per second, 1-10000.")],
    ) -> None:
        """Change the speed-up (x1 to x10,000)."""
        act(lambda c: c.set_speed(factor))

    @clock_app.command("set")
    def set_(
        instant: Annotated[str, typer.Argument(help="RFC 3339 with offset, not before now.")],
    ) -> None:
        """Move the clock forward to an instant (never back)."""
        try:
            target = dt.datetime.fromisoformat(instant)
        except ValueError as exc:
            raise ClockError(
                f"cannot read the instant {instant!r}: use RFC 3339 with an offset, "
                "e.g. 2026-10-03T16:55:00+02:00"
            ) from exc
        act(lambda c: c.jump_to(target))
