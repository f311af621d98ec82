"""Two daemons in one MQTT v5 shared-subscription group split a floor, exactly once."""

from __future__ import annotations

import asyncio
import datetime as dt

from bonusd.clocks.clock import ManualClock
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import SAST, running
from tests.telemetry_helpers import Publisher, game

T = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)
N = 2000


async def test_two_daemons_share_the_floor(
    broker: LocalMosquitto, site: str, redis_url: str
) -> None:
    clock = ManualClock(T + dt.timedelta(hours=1))

    def settings(n: int) -> Settings:
        return Settings(
            site=site,
            redis_url=redis_url,
            mqtt_url=broker.url,
            mqtt_client_id=f"bonusd-{site}-{n}",
            mqtt_shared_group=f"g{site}",
            http_port=free_port(),
        )

    async with running(settings(1), clock) as one, running(settings(2), clock) as two:
        pub = Publisher(broker, site)
        for i in range(N):
            pub.egm(f"EGM-{i % 20}", game(str(1000 + i % 20), T + dt.timedelta(seconds=i), 100, 1))
        pub.close()
        async with asyncio.timeout(30):
            while one.service.ingest.committed + two.service.ingest.committed < N:
                await asyncio.sleep(0.02)
        assert one.service.ingest.committed > 0
        assert two.service.ingest.committed > 0
        stats = await one.service.store.stats()
        assert stats["applied"] == N
        assert stats.get("duplicates", 0) == 0
        games = 0
        for c in range(20):
            games += (await one.get(f"/members/{1000 + c}/days/2026-10-03"))["games"]
        assert games == N
