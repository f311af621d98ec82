"""Whether the broker session is alive, several times a second, for /health: paho
connected, and the broker answering. A connection can be up and the broker hung; only an
answered ping tells them apart."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bonusd.infra.health import Health

BROKER_PROBE_S = 1.0  # ping the broker when nothing has come from it for this long
BROKER_TIMEOUT_S = 1.0  # a ping unanswered for this long: the broker does not count as alive
LIVENESS_EVERY_S = 0.25


async def confirm_alive(paho: Any, health: Health) -> None:
    """Tell /health, several times a second, whether the broker session is alive:
    paho connected, and the broker answering. When nothing has come from it for
    `BROKER_PROBE_S`, it is pinged (MQTT PINGREQ); a ping unanswered for
    `BROKER_TIMEOUT_S` (a hung broker, a dead link) makes it not alive until it
    answers. paho's own keepalive still ends a connection that stays silent."""
    while True:
        now = time.monotonic()
        pinged = paho._ping_t  # when paho sent the PINGREQ not yet answered; 0 if none
        if not paho.is_connected():
            health.mqtt_error = "the broker connection is closed"
        elif pinged and now - pinged > BROKER_TIMEOUT_S:
            health.mqtt_error = f"the broker has not answered a ping for {now - pinged:.1f}s"
        else:
            if not pinged and now - paho._last_bytes_received > BROKER_PROBE_S:
                paho._send_pingreq()
            health.mqtt_error = ""
            health.mqtt_alive_mono = now
        await asyncio.sleep(LIVENESS_EVERY_S)
