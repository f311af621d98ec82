"""What the ingest tells an operator when something goes wrong, and how it tells an outage
(wait and retry) from a fault of the batch (dead-letter it): the topics and devices in
hand, the first exception of a group, and the aiomqtt session's lost connection."""

from __future__ import annotations

from collections.abc import Sequence

import aiomqtt
import redis.exceptions

from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.ingest.inbox import Received

# Replies of a Redis that is there but cannot take writes now: an outage to wait out,
# never a reason to dead-letter the batch that met it.
_REDIS_BUSY: tuple[str, ...] = ("OOM", "BUSY", "LOADING", "READONLY", "MASTERDOWN")
_REDIS_BUSY += ("CLUSTERDOWN", "TRYAGAIN", "MISCONF", "NOREPLICAS", "NOQUORUM")


def is_outage(exc: Exception) -> bool:
    """Whether `exc` is Redis being away or unable to write now (wait and retry), rather
    than something about the batch itself."""
    if isinstance(exc, REDIS_ERRORS):
        return True
    if isinstance(exc, redis.exceptions.ResponseError):
        return str(exc).startswith(_REDIS_BUSY)
    return False


def where(batch: Sequence[Received]) -> str:
    """The topics and devices of a batch, for a log line an operator can act on."""
    if not batch:
        return "no message"
    shown = ", ".join(f"{m.topic[:160]!r} (device {device_of(m.topic)!r})" for m in batch[:3])
    more = f" and {len(batch) - 3} more" if len(batch) > 3 else ""
    return f"{len(batch)} message(s): {shown}{more}"


def device_of(topic: str) -> str:
    parts = topic.split("/")
    return parts[-2][:64] if len(parts) >= 2 else ""


def first_of(group: BaseExceptionGroup[Exception]) -> Exception:
    """The first exception of a (possibly nested) group: what to report."""
    found: BaseException = group
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found if isinstance(found, Exception) else RuntimeError(str(group))


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


async def until_disconnected(client: aiomqtt.Client) -> None:
    """Completes by raising `MqttError` when the connection is lost (our callback replaced
    aiomqtt's, so its queue stays empty and its iterator only ever reports disconnection)."""
    async for _ in client.messages:
        pass


def disconnection_seen(client: aiomqtt.Client) -> None:
    """Mark aiomqtt's record of a lost connection as read. When our consumer notices the
    loss first, the watcher is cancelled before it reads it, and asyncio would log
    "Future exception was never retrieved" at ERROR for a loss `run()` already handles."""
    lost = client._disconnected
    if lost.done() and not lost.cancelled():
        lost.exception()
