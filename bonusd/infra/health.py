"""What the daemon knows about its own connections and backlog, for /health and logs.

Nothing here is taken on trust: the broker counts as connected only while the ingest
keeps confirming that its session is alive (a dead or stuck ingest stops confirming, so
it never reads as connected), and the ingest counts as stalled when a received message
has waited uncommitted longer than `INGEST_STALL_S`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

# The ingest confirms the broker session every fraction of a second; a confirmation
# older than this means the ingest is not running (or not answering), whatever it said.
MQTT_CONFIRM_STALE_S = 2.0
# A healthy ingest commits what it receives within milliseconds; a message waiting this
# long uncommitted means the ingest is stuck (Redis hung, a batch that never ends).
INGEST_STALL_S = 5.0


@dataclass
class Health:
    """Mutable status shared by the ingest and the API (single event loop, no locks)."""

    mqtt_connected: bool = False  # the session is subscribed (set and cleared by the ingest)
    redis_ok: bool = False
    mqtt_error: str = ""
    redis_error: str = ""
    pending: int = 0
    oldest_pending_mono: float | None = None
    last_commit_mono: float | None = None
    mqtt_alive_mono: float | None = None  # when the ingest last confirmed the session alive
    started_mono: float = field(default_factory=time.monotonic)
    leader_token: int | None = None  # the fencing token while this daemon leads the site

    def ingest_lag_s(self) -> float:
        """Age of the oldest message received but not yet committed (0 when none waits)."""
        if self.oldest_pending_mono is None:
            return 0.0
        return max(0.0, time.monotonic() - self.oldest_pending_mono)

    def mqtt_alive(self) -> bool:
        """Subscribed, and the ingest confirmed the broker answering a moment ago."""
        if not self.mqtt_connected or self.mqtt_alive_mono is None:
            return False
        return time.monotonic() - self.mqtt_alive_mono <= MQTT_CONFIRM_STALE_S

    def mqtt_problem(self) -> str:
        """Why the broker does not count as connected ("" when it does)."""
        if self.mqtt_alive():
            return ""
        if self.mqtt_error:
            return self.mqtt_error
        if self.mqtt_connected and self.mqtt_alive_mono is not None:
            age = time.monotonic() - self.mqtt_alive_mono
            return f"the ingest has not confirmed the broker session for {age:.1f}s"
        return "not connected to the broker yet"

    def ingest_stalled(self) -> bool:
        return self.ingest_lag_s() > INGEST_STALL_S

    def ingest_problem(self) -> str:
        """Why the ingest counts as stalled ("" when it does not)."""
        if not self.ingest_stalled():
            return ""
        return (
            f"ingest stalled: the oldest received message has waited "
            f"{self.ingest_lag_s():.1f}s uncommitted (limit {INGEST_STALL_S:.0f}s)"
        )

    @property
    def role(self) -> Literal["leader", "standby"]:
        """The daemon's part in its site: the leader runs the scheduler, the claim timers,
        the SMS notices and the idle sweep; a standby waits to take over (docs/leader.md)."""
        return "standby" if self.leader_token is None else "leader"

    def status(self) -> Literal["ok", "degraded"]:
        healthy = self.mqtt_alive() and self.redis_ok and not self.ingest_stalled()
        return "ok" if healthy else "degraded"
