"""The ingest's bounds, without any service (issue 14): the inbox keeps a stub of an
oversize message, caps QoS 0 and reports a broker that exceeds Receive Maximum; /health
believes the broker connected only while the ingest confirms it; a stalled ingest says
so; what counts as a Redis outage rather than a poison batch."""

from __future__ import annotations

import logging
import time

import pytest
import redis.exceptions

from bonusd.infra.health import INGEST_STALL_S, MQTT_CONFIRM_STALE_S, Health
from bonusd.infra.metrics import Metrics
from bonusd.ingest.faults import is_outage
from bonusd.ingest.inbox import Inbox


def _dropped(metrics: Metrics, reason: str) -> float:
    value = metrics.registry.get_sample_value("bonusd_messages_dropped_total", {"reason": reason})
    return value or 0.0


def test_an_oversize_payload_is_kept_as_a_stub_with_its_size() -> None:
    inbox = Inbox(stub_bytes=4096, qos1_max=10, qos0_max=10, metrics=Metrics())
    assert inbox.add("t", b"x" * 10_000_000, 1, 1, 0.0)
    (msg,) = inbox.take(5)
    assert (len(msg.payload), msg.size) == (4096, 10_000_000)


def test_qos0_beyond_its_bound_is_dropped_counted_and_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    inbox = Inbox(stub_bytes=64, qos1_max=3, qos0_max=5, metrics=metrics)
    with caplog.at_level(logging.WARNING, logger="bonusd.ingest.inbox"):
        kept = [inbox.add(f"t/{n}", b"{}", 0, 0, float(n) / 100) for n in range(100)]
    assert kept == [True] * 5 + [False] * 95
    assert _dropped(metrics, "inbox_full") == 95
    # one WARNING for the burst (rate-limited), naming the count and where to look
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "bonusd_messages_dropped_total" in warnings[0]
    # QoS 1 is not squeezed out by QoS 0: its own bound is Receive Maximum
    assert all(inbox.add("t", b"{}", n, 1, 1.0) for n in range(3))
    # taking frees room for QoS 0 again
    assert len(inbox.take(100)) == 8
    assert inbox.add("t", b"{}", 0, 0, 2.0)


def test_qos1_beyond_receive_maximum_is_kept_and_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Refused, a QoS 1 message would wait unacknowledged until the next session."""
    metrics = Metrics()
    inbox = Inbox(stub_bytes=64, qos1_max=2, qos0_max=2, metrics=metrics)
    with caplog.at_level(logging.WARNING, logger="bonusd.ingest.inbox"):
        assert all(inbox.add("t", b"{}", n, 1, 0.0) for n in range(5))
    assert len(inbox) == 5
    (warning,) = caplog.records
    assert warning.getMessage().startswith("inbox full: the broker sent more than Receive Maximum")
    inbox.clear()
    assert len(inbox) == 0


def test_the_broker_is_connected_only_while_the_ingest_confirms_it() -> None:
    h = Health(redis_ok=True)
    assert not h.mqtt_alive()
    assert h.mqtt_problem() == "not connected to the broker yet"
    h.mqtt_connected = True
    h.mqtt_alive_mono = time.monotonic()
    assert h.mqtt_alive()
    assert h.status() == "ok"
    # the ingest stopped confirming (a dead or stuck task): not connected, whatever it set
    h.mqtt_alive_mono = time.monotonic() - MQTT_CONFIRM_STALE_S - 1
    assert not h.mqtt_alive()
    assert h.status() == "degraded"
    assert "has not confirmed the broker session" in h.mqtt_problem()
    h.mqtt_error = "the broker has not answered a ping for 1.3s"
    assert h.mqtt_problem() == h.mqtt_error


def test_a_message_waiting_too_long_uncommitted_is_a_stalled_ingest() -> None:
    h = Health(redis_ok=True, mqtt_connected=True, mqtt_alive_mono=time.monotonic())
    h.oldest_pending_mono = time.monotonic()
    assert not h.ingest_stalled()
    assert h.ingest_problem() == ""
    h.oldest_pending_mono = time.monotonic() - INGEST_STALL_S - 1
    assert h.ingest_stalled()
    assert h.status() == "degraded"
    assert h.ingest_problem().startswith("ingest stalled: the oldest received message has waited")


@pytest.mark.parametrize(
    ("exc", "outage"),
    [
        (redis.exceptions.ConnectionError("refused"), True),
        (redis.exceptions.TimeoutError("timed out"), True),
        (OSError("reset"), True),
        (redis.exceptions.BusyLoadingError("loading"), True),
        (redis.exceptions.ResponseError("OOM command not allowed when used memory"), True),
        (redis.exceptions.ReadOnlyError("READONLY You can't write against a replica"), True),
        (redis.exceptions.ResponseError("BUSY Redis is busy running a script"), True),
        (redis.exceptions.ResponseError("ERR user_script:40: attempt to index a nil"), False),
        (ValueError("a rule cannot take it"), False),
        (RecursionError("deep"), False),
    ],
)
def test_what_counts_as_an_outage(exc: Exception, outage: bool) -> None:
    """An outage is waited out with the batch unacknowledged; anything else is the
    batch's own, applied in halves down to the message that is dead-lettered."""
    assert is_outage(exc) is outage
