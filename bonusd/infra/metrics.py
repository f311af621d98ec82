"""Prometheus metrics of one daemon, in a registry of its own (no process-wide globals)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


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
            "Events skipped because their id was applied before",
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

    def render(self) -> bytes:
        return generate_latest(self.registry)
