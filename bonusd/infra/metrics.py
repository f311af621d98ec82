"""Prometheus metrics of one daemon, in a registry of its own (no process-wide globals)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from bonusd.infra.heap import heap_figures


def _heap_part(part: str) -> float:
    """One of the C heap's figures (`bonusd.infra.heap`), NaN where it cannot be read."""
    figures = heap_figures()
    return float("nan") if figures is None else float(getattr(figures, part))


class Counted(Protocol):
    """A cache that counts what it holds (cachetools' `currsize`: bytes, as it sizes them)."""

    @property
    def currsize(self) -> float: ...


class Metrics:
    """The daemon's counters, gauges and histograms; `render()` is the /metrics body."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.events_applied = Counter(
            "bonusd_events_applied", "Telemetry events applied to the floor", registry=registry
        )
        self.duplicates = Counter(
            "bonusd_events_duplicate",
            "Events skipped because they were applied before (v1: their id; v2: their "
            "device, epoch and seq)",
            registry=registry,
        )
        self.sequence_gaps = Counter(
            "bonusd_sequence_gaps",
            "Contract v2 sequence numbers never received, counted once they can no longer "
            "arrive (behind the window, or of an epoch forgotten); per device: "
            "GET /devices/{device}/sequence",
            registry=registry,
        )
        self.dead_letters = Counter(
            "bonusd_dead_letters",
            "Messages rejected to the dead-letter stream",
            ["reason"],
            registry=registry,
        )
        self.dropped = Counter(
            "bonusd_messages_dropped",
            "Messages not applied nor dead-lettered: inbox_full (QoS 0 beyond the inbox "
            "bound), unrecordable (its dead letter could not be written either)",
            ["reason"],
            registry=registry,
        )
        self.ingest_latency = Histogram(
            "bonusd_ingest_latency_seconds",
            "From a message's arrival to its effect committed in Redis",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=registry,
        )
        self.batch_size = Histogram(
            "bonusd_ingest_batch_size",
            "Messages committed per Redis round trip",
            buckets=(1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500),
            registry=registry,
        )
        self.reconnects = Counter(
            "bonusd_reconnects",
            "Reconnection attempts after a lost connection",
            ["service"],
            registry=registry,
        )
        self.connected = Gauge(
            "bonusd_connected", "1 while the connection is up", ["service"], registry=registry
        )
        self.sessions_idled = Counter(
            "bonusd_sessions_idle_ended",
            "Sessions ended by the idle timeout (lost card-out)",
            registry=registry,
        )
        self.sms = Counter(
            "bonusd_sms_messages",
            "SMS outbox entries by outcome: queued, no_number, sent, retry, failed, expired",
            ["outcome"],
            registry=registry,
        )

        self.leader = Gauge(
            "bonusd_leader", "1 while this daemon leads the site, 0 on standby", registry=registry
        )
        self.leader_token = Gauge(
            "bonusd_leader_token",
            "The fencing token of this daemon's latest lease as leader",
            registry=registry,
        )
        self.leader_changes = Counter(
            "bonusd_leader_changes",
            "Leases taken (acquired) and given up (released on shutdown, or lost)",
            ["change"],
            registry=registry,
        )
        self._deployment(registry)

    def _deployment(self, registry: CollectorRegistry) -> None:
        """What the alert rules and the dashboard of deploy/ read besides the above, filled
        by `bonusd.service.opswatch` (docs/deploy.md, "Monitoring")."""
        self.ingest_lag = Gauge(
            "bonusd_ingest_lag_seconds",
            "Age of the oldest message received and not yet committed (0 when none waits)",
            registry=registry,
        )
        self.redis_used_memory = Gauge(
            "bonusd_redis_used_memory_bytes", "Redis used_memory (sampled)", registry=registry
        )
        self.redis_maxmemory = Gauge(
            "bonusd_redis_maxmemory_bytes", "Redis maxmemory; 0: no limit", registry=registry
        )
        self.redis_policy_ok = Gauge(
            "bonusd_redis_policy_ok",
            "1 while Redis's persistence and eviction policy keep bonusd's promises "
            "(deploy/redis/: AOF, appendfsync always, noeviction, AOF writes succeeding)",
            registry=registry,
        )
        self.claim_timers_overdue = Gauge(
            "bonusd_claim_timers_overdue_seconds",
            "How long the site's earliest passed claim deadline has waited (daemon clock)",
            registry=registry,
        )
        self.cert_expiry = Gauge(
            "bonusd_certificate_expiry_timestamp_seconds",
            "When the earliest certificate of the file expires (Unix time); 0: unreadable",
            ["file"],
            registry=registry,
        )
        self.push_clients = Gauge(
            "bonusd_push_clients", "Open screen and handheld websockets", registry=registry
        )
        self.push_dropped = Counter(
            "bonusd_push_clients_dropped",
            "Websockets the daemon closed because they stopped draining (4429)",
            registry=registry,
        )
        self.heap = Gauge(
            "bonusd_heap_bytes",
            "The C heap (glibc; absent elsewhere): in_use, free (kept by the allocator: "
            "BONUSD_HEAP_TRIM_S gives its pages back), mapped (large blocks, in use)",
            ["part"],
            registry=registry,
        )
        for part in ("in_use", "free", "mapped"):
            self.heap.labels(part=part).set_function(functools.partial(_heap_part, part))
        self.push_resyncs = Counter(
            "bonusd_push_resyncs",
            "Websockets that fell behind and were sent a fresh snapshot",
            registry=registry,
        )
        self.desk_cache = Gauge(
            "bonusd_desk_cache_bytes",
            "What the desks' caches hold, as they count it (bounded by BONUSD_DESK_*_MB): "
            "books, pool files (one cache for the daemon), RAPS floor snapshots, by runner",
            ["runner", "cache"],
            registry=registry,
        )
        self._watched: set[int] = set()
        self.floor_mirror_rows = Gauge(
            "bonusd_raps_floor_mirror_rows",
            "Cards the RAPS floor mirror holds (0 while it does not follow the floor)",
            registry=registry,
        )

    def watch_caches(self, runner: str, caches: Mapping[str, Counted]) -> None:
        """Report each of `caches` (a runner's, by name) by its `currsize`, once: a cache
        shared with a runner watched before is reported under that one."""
        for name, cache in caches.items():
            if id(cache) not in self._watched:
                self._watched.add(id(cache))
                size = functools.partial(getattr, cache, "currsize")
                self.desk_cache.labels(runner=runner, cache=name).set_function(size)

    def render(self) -> bytes:
        return generate_latest(self.registry)
