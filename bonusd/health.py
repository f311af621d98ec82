"""What the daemon knows about its own connections and backlog, for /health and logs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal


@dataclass
class Health:
    """Mutable status shared by the ingest and the API (single event loop, no locks)."""

    mqtt_connected: bool = False
    redis_ok: bool = False
    mqtt_error: str = ""
    redis_error: str = ""
    pending: int = 0
    oldest_pending_mono: float | None = None
    last_commit_mono: float | None = None
    started_mono: float = field(default_factory=time.monotonic)
    leader_token: int | None = None  # the fencing token while this daemon leads the site

    def ingest_lag_s(self) -> float:
        """Age of the oldest message received but not yet committed (0 when none waits)."""
        if self.oldest_pending_mono is None:
            return 0.0
        return max(0.0, time.monotonic() - self.oldest_pending_mono)

    @property
    def role(self) -> Literal["leader", "standby"]:
        """The daemon's part in its site: the leader runs the scheduler, the claim timers,
        the SMS notices and the idle sweep; a standby waits to take over (docs/leader.md)."""
        return "standby" if self.leader_token is None else "leader"

    def status(self) -> str:
        return "ok" if self.mqtt_connected and self.redis_ok else "degraded"
