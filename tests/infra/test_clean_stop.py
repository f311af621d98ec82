"""A stopped daemon leaves nothing open behind it: every Redis connection it opened, also
a pool grown by a burst of requests, is closed when the service stops.

A pool left open cost the test process ~200 sockets per burst; past 1,024 descriptors,
paho's select() in every MQTT client of the process fails and it drops its connection.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from tests.daemon_helpers import running


def _open_sockets() -> int:
    fds = Path("/proc/self/fd")
    count = 0
    for fd in os.listdir(fds):
        try:
            count += os.readlink(fds / fd).startswith("socket:")
        except OSError:
            continue  # closed while listing (the listing's own descriptor)
    return count


async def test_a_stopped_daemon_closes_every_redis_connection(
    settings: Settings, clock: ManualClock
) -> None:
    before = _open_sockets()
    async with running(settings, clock) as d:
        # 60 requests at once each take a pooled Redis connection: the pool grows
        answers = await asyncio.gather(*(d.http.get("/promotions") for _ in range(60)))
        assert {a.status_code for a in answers} == {200}
        assert _open_sockets() > before + 20
    await asyncio.sleep(0.1)  # closed transports give their descriptors back on the loop
    # at most as many as before: what earlier tests left to the collector may close too
    assert _open_sockets() <= before
