"""The soak's helpers around the daemon: its log watched as it grows, kiosks activating
entries, and the retention sweeper run in the soak's process when the daemon does not
run it (loadtests/soak.py)."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import redis
import redis.asyncio as aioredis
from floorload import prepare
from floorload.scenarios import ROOT

from bonusd.clocks.clock import GamingCalendar
from bonusd.infra.keys import Keys
from bonusd.infra.sharedclock import SharedClock
from bonusd.service.retention import RetentionSweeper
from bonusd.settings import load_settings

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # the daemon's
PROMOTION_ID = "soak-five-minute-draws"


def log_sweeper_to(path: Path) -> None:
    """Write the in-process sweeper's log to `path`, in the daemon's format."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.getLogger("bonusd").addHandler(handler)
    logging.getLogger("bonusd").setLevel(logging.INFO)


class LogWatch:
    """Counts the daemon log's levels and keeps its warnings and errors (read as it grows)."""

    LINE = re.compile(r"^\S+ \S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.rounds = 0
        self.sweeps: list[str] = []

    def read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read()
        self.offset += len(chunk)
        for line in chunk.decode(errors="replace").splitlines():
            m = self.LINE.match(line)
            level = m.group(1) if m else ""
            if level in ("ERROR", "CRITICAL") or line.startswith("Traceback"):
                self.errors.append(line[:300])
            elif level == "WARNING":
                self.warnings.append(line[:300])
            if re.search(r" round \d+ drawn", line):
                self.rounds += 1
            if "retention sweep:" in line:
                self.sweeps.append(line.split("retention sweep:", 1)[1].strip()[:200])

    def summary(self) -> dict[str, Any]:
        return {
            "errors": len(self.errors),
            "error_lines": self.errors[:20],
            "warnings": len(self.warnings),
            "warning_lines": self.warnings[:20],
        }


class SweeperThread:
    """The retention sweeper in this process (when the daemon does not run it), on the
    site's shared clock, in a thread with its own event loop."""

    def __init__(self, env: dict[str, str]) -> None:
        fields = {k[len("BONUSD_") :].lower(): v for k, v in env.items() if k.startswith("BONUSD_")}
        self.settings = load_settings(**fields)
        self.stop: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self.sweeps = 0

    async def _main(self) -> None:
        s = self.settings
        self.loop, self.stop = asyncio.get_running_loop(), asyncio.Event()
        r = aioredis.Redis.from_url(s.redis_url, decode_responses=True)
        prefix = SharedClock.site_prefix(s.key_prefix, s.site)
        clock = SharedClock(r, prefix, changed_by="soak")
        await clock.open_existing()
        sweeper = RetentionSweeper.from_settings(
            s,
            redis=r,
            keys=Keys(s.key_prefix, s.site),
            clock=clock,
            calendar=GamingCalendar(s.zone, s.gaming_day_start),
            promotions=lambda: (),
        )
        sweeper.policy = sweeper.policy.with_promotions(())
        watch = asyncio.create_task(clock.watch(self.stop))
        try:
            await sweeper.run(self.stop)
        finally:
            self.sweeps = sweeper.sweeps
            watch.cancel()
            await r.aclose()

    def __enter__(self) -> SweeperThread:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self.loop is not None and self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)


def daemon_runs_sweeper() -> bool:
    return "RetentionSweeper" in (ROOT / "bonusd" / "service" / "root.py").read_text()


class Kiosks:
    """Members on the floor activating entries at kiosks, in a thread of their own so a
    slow answer never delays a sample: every `every_s` seconds, `n` cards for the draw
    whose bin closes next. Refusals and timeouts are counted, not fatal."""

    def __init__(self, base: str, token: str, r: redis.Redis, site: prepare.Site) -> None:
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
        self.r, self.active = r, f"{site.keys.base}active:egm:main"
        self.draw = "d001"
        self.counts = {"ok": 0, "refused": 0, "failed": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self, n: int = 10, every_s: float = 10.0) -> None:
        while not self._stop.wait(every_s):
            for raw in self.r.zrandmember(self.active, n) or []:
                card = raw.decode() if isinstance(raw, bytes) else str(raw)
                if self._stop.is_set():
                    return
                try:
                    resp = self.http.post(
                        f"/promotions/{PROMOTION_ID}/draws/{self.draw}/activations",
                        json={"card": card, "channel": "kiosk"},
                    )
                except httpx.HTTPError:
                    self.counts["failed"] += 1
                    continue
                self.counts["ok" if resp.status_code < 300 else "refused"] += 1

    def __enter__(self) -> Kiosks:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)
        if not self._thread.is_alive():  # else it ends with its last request
            self.http.close()
