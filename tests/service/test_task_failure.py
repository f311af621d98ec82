"""A task of the daemon that fails stops the whole daemon as SIGTERM does, within
seconds: every other task ends by its own stop path (the leader gives its lease back, the
consumer commits), then the failure is raised. The first such failure a floor meets is
an HTTP port another program holds: `bonusd run` says so and exits 2, instead of uvicorn
exiting the process from inside one task while the others run on."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.errors import ConfigError
from bonusd.infra.keys import Keys
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import run_until_exit

HANG_S = 60  # only a hang fails this (a stop takes well under a second here)


def held_port() -> socket.socket:
    """A listening socket on a loopback port: what another program holding it looks like."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


async def test_a_failed_task_stops_every_other_one_and_is_raised(
    settings: Settings, redis_url: str
) -> None:
    keys = Keys(settings.key_prefix, settings.site)
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    async with Service(settings) as service:

        async def breaks_once_leading(stop: asyncio.Event) -> None:
            while service.health.leader_token is None:  # the leader's work is running
                await asyncio.sleep(0.01)
            raise RuntimeError("the rules task broke")

        service.rules.run = breaks_once_leading  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="the rules task broke"):
            async with asyncio.timeout(HANG_S):
                await service.run(install_signal_handlers=False)
        assert service.stop_event.is_set()
        assert [name for name, _ in service._failed] == ["rules"]
        assert await r.get(keys.leader) is None  # given back on the way out, not left to lapse
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert not [t for t in left if not t.done()], left
    await r.aclose()


async def test_a_taken_http_port_ends_the_daemon_with_the_port_named(
    settings: Settings, redis_url: str
) -> None:
    holder = held_port()
    port = holder.getsockname()[1]
    taken = settings.model_copy(update={"http_port": port})
    keys = Keys(settings.key_prefix, settings.site)
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        async with Service(taken) as service:
            with pytest.raises(ConfigError, match=f"could not listen on 127.0.0.1:{port}"):
                async with asyncio.timeout(HANG_S):
                    await service.run(install_signal_handlers=False)
            assert service.stop_event.is_set()
            assert [name for name, _ in service._failed] == ["http"]
        assert await r.get(keys.leader) is None
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not [t for t in left if not t.done()], left
    finally:
        holder.close()
        await r.aclose()


def test_bonusd_run_on_a_taken_port_exits_2_saying_so(
    broker: LocalMosquitto, redis_url: str, site: str, tmp_path: Path
) -> None:
    holder = held_port()
    port = holder.getsockname()[1]
    env = {
        **os.environ,
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_MQTT_URL": broker.url,
        "BONUSD_MQTT_CLIENT_ID": f"bonusd-{site}",
        "BONUSD_HTTP_PORT": str(port),
        "BONUSD_SEED_KEY_FILE": str(tmp_path / "seed-key"),
        "BONUSD_RECEIPT_KEY_FILE": str(tmp_path / "receipt-key"),
    }
    try:
        done = run_until_exit(env, tmp_path, HANG_S)
    finally:
        holder.close()
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"could not listen on 127.0.0.1:{port}" in done.stderr
    assert "BONUSD_HTTP_PORT" in done.stderr
    assert "Task was destroyed" not in done.stderr
