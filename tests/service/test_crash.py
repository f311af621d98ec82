"""`kill -9` of the daemon in the middle of a telemetry burst loses and doubles nothing, in
telemetry contract v1 (events de-duplicated by id) and v2 (by each device's sequence)."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import paho.mqtt.client as mqtt
import pytest
import redis
from paho.mqtt.enums import CallbackAPIVersion

from bonusd.clocks.clock import GamingCalendar
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import daemon_process, wait_healthy

N_EVENTS = 20_000
N_CARDS = 50


def _identity(i: int, contract: str) -> str:
    if contract == "v2":  # EGM-{i % N_CARDS} numbers its events from 1
        return f'"epoch":"burst","seq":{i // N_CARDS + 1}'
    return f'"id":"burst-{i}"'


def _publish_burst(broker: LocalMosquitto, site: str, now: dt.datetime, contract: str) -> None:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"pub-{site}")
    client.max_inflight_messages_set(500)
    client.max_queued_messages_set(0)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    infos = []
    ts = now.isoformat(timespec="milliseconds")
    for i in range(N_EVENTS):
        card = str(5000 + i % N_CARDS)
        body = (
            f'{{{_identity(i, contract)},"type":"game","ts":"{ts}","card":"{card}",'
            f'"wager_cents":{100 + i % 7},"win_cents":0,"points":{1 + i % 3}}}'
        )
        infos.append(client.publish(f"bonusd/{site}/egm/EGM-{i % N_CARDS}/events", body, qos=1))
    for info in infos:
        info.wait_for_publish(30)
    client.loop_stop()
    client.disconnect()


@pytest.mark.slow  # ~30-40 s of daemon restarts: `make test-slow`
@pytest.mark.parametrize("contract", ["v1", "v2"])
def test_kill_9_mid_burst_then_restart_totals_exact(
    broker: LocalMosquitto, site: str, redis_url: str, tmp_path: object, contract: str
) -> None:
    port = free_port()
    env = {
        **os.environ,
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_MQTT_URL": broker.url,
        "BONUSD_HTTP_PORT": str(port),
        "BONUSD_MQTT_CLIENT_ID": f"bonusd-{site}",
    }
    log = f"{tmp_path}/daemon.log"
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    stats = f"bonusd:{{{site}}}:stats"
    now = dt.datetime.now(dt.UTC)

    daemon = daemon_process(env, log)
    try:
        wait_healthy(port)
        token = subprocess.run(
            [
                sys.executable,
                "-m",
                "bonusd",
                "tokens",
                "issue",
                "--role=desk",
                "--name=crash test",
                "--quiet",
            ],
            env=env,
            capture_output=True,
            check=True,
            text=True,
        ).stdout.strip()
        auth = {"Authorization": f"Bearer {token}"}
        publisher = threading.Thread(target=_publish_burst, args=(broker, site, now, contract))
        publisher.start()
        deadline = time.monotonic() + 30
        while int(r.hget(stats, "applied") or 0) < N_EVENTS // 5:
            assert time.monotonic() < deadline, "ingest did not start"
            time.sleep(0.005)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        applied_at_kill = int(r.hget(stats, "applied") or 0)
        assert applied_at_kill < N_EVENTS, "the burst finished before the kill; nothing tested"
        publisher.join(60)

        daemon = daemon_process(env, log)
        wait_healthy(port)
        deadline = time.monotonic() + 60
        while int(r.hget(stats, "applied") or 0) < N_EVENTS:
            assert time.monotonic() < deadline, f"stuck at {r.hget(stats, 'applied')}"
            time.sleep(0.05)
        time.sleep(0.5)  # anything more would be a double application
        assert int(r.hget(stats, "applied") or 0) == N_EVENTS

        day = GamingCalendar(Settings().zone, dt.time(8, 0)).gaming_day(now).isoformat()
        spend = points = games = 0
        for c in range(N_CARDS):
            url = f"http://127.0.0.1:{port}/members/{5000 + c}/days/{day}"
            totals = httpx.get(url, headers=auth).json()
            spend += totals["spend_cents"]
            points += totals["slots_points"]
            games += totals["games"]
        assert games == N_EVENTS
        assert spend == sum(100 + i % 7 for i in range(N_EVENTS))
        assert points == sum(1 + i % 3 for i in range(N_EVENTS))
        if contract == "v2":  # redelivered after the kill: nothing lost, nothing refused
            for device in ("EGM-0", f"EGM-{N_CARDS - 1}"):
                url = f"http://127.0.0.1:{port}/devices/{device}/sequence"
                state = httpx.get(url, headers=auth).json()
                assert (state["current"]["seq"], state["gaps"]) == (N_EVENTS // N_CARDS, 0)
            assert not [f for f in r.hkeys(stats) if f.startswith("deadletter:")]
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(15)
        r.close()
