"""The rehearsal's floor: the simulator as a child process, publishing on command.

`simulators.stepped` generates the floor's events and publishes them over MQTT only up
to the bound it is given (its module docstring has the line protocol). Running it in its
own process puts event generation on the other core while the daemon ingests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bonusd.errors import BonusdError

if TYPE_CHECKING:
    from simulators.rehearsal.plan import Prepared

START_S = 120.0  # building a large floor and connecting take a while


class FeedError(BonusdError):
    """The simulator child process failed or answered out of protocol."""


class Feed:
    """One `simulators.stepped` child process."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    @classmethod
    async def start(
        cls, prepared: Prepared, *, promotion_file: Path, mqtt_url: str, prefix: str
    ) -> Feed:
        """Start the simulator for the rehearsal's floor and span; returns once it is
        connected to the broker."""
        plan, p = prepared.plan, prepared.promotion
        duration_s = int((prepared.floor_end - prepared.start).total_seconds())
        args = [
            "-m",
            "simulators.stepped",
            f"--floor={prepared.floor_ref}",
            f"--seed={plan.seed}",
            f"--start={prepared.start.isoformat()}",
            f"--duration={duration_s}s",
            f"--promotion={promotion_file}",
            f"--play-minutes={plan.play_minutes:g}",
            f"--mqtt-url={mqtt_url}",
            f"--prefix={prefix}",
            f"--site={p.site}",
        ]
        if plan.events_log is not None:
            args.append(f"--log={plan.events_log}")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=1 << 20,
        )
        feed = cls(proc)
        reply = await feed._reply(START_S)
        if reply != "ready":
            await feed.kill()
            raise FeedError(f"the simulator did not start (it said {reply!r}); see its log above")
        return feed

    async def _reply(self, within_s: float | None = None) -> str:
        assert self._proc.stdout is not None
        try:
            async with asyncio.timeout(within_s):
                line = await self._proc.stdout.readline()
        except TimeoutError:
            raise FeedError(f"the simulator did not answer within {within_s:g} s") from None
        if not line:
            code = await self._proc.wait()
            raise FeedError(f"the simulator stopped (exit status {code}); see its log above")
        return line.decode().strip()

    async def _send(self, line: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{line}\n".encode())
        await self._proc.stdin.drain()

    async def until(self, bound_ms: int, limit: int) -> tuple[int, int]:
        """Publish the events stamped before `bound_ms`, at most `limit` of them; returns
        (events published so far, time of the next one or -1 when there are no more)."""
        await self._send(f"until {bound_ms} {max(1, limit)}")
        reply = await self._reply()
        word, published, nxt = [*reply.split(), "", "", ""][:3]
        if word != "at":
            raise FeedError(f"the simulator answered {reply!r} to until")
        return int(published), int(nxt)

    async def close(self) -> dict[str, Any]:
        """Finish: every publish acknowledged by the broker; returns the simulator's
        figures (events per type, its peak RSS)."""
        await self._send("end")
        reply = await self._reply(120.0)
        await self._proc.wait()
        word, _, text = reply.partition(" ")
        if word != "done":
            raise FeedError(f"the simulator answered {reply!r} to end")
        figures: dict[str, Any] = json.loads(text)
        return figures

    async def kill(self) -> None:
        """Stop the child at once if it still runs (after a failure)."""
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            await self._proc.wait()
