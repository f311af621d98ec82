"""`bonusd run` keeps the contract of deploy/systemd/bonusd@.service without systemd: a
stand-in for the notify socket sees READY=1 only once Redis's policy is checked and HTTP
answers, WATCHDOG=1 at half of WATCHDOG_USEC, STOPPING=1 on SIGTERM and a clean exit
well inside TimeoutStopSec; with BONUSD_LOG_FORMAT=json every line it writes is a JSON
object; /metrics carries the gauges deploy/prometheus/ alerts on. Against a real
redis-server with deploy/redis/bonusd.conf and the suite's Mosquitto."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bonusd.infra.allocator import jemalloc_library
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import wait_healthy
from tests.deploy.helpers import NotifySocket, PolicyRedis, make_certificates, tool

STOP_WITHIN_S = 30  # the unit's TimeoutStopSec


def _metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


def test_bonusd_run_under_the_units_contract(
    broker: LocalMosquitto, site: str, tmp_path: Path
) -> None:
    tool("redis-server", "redis-server")
    certs = make_certificates(tmp_path / "tls", days=40)
    notify = NotifySocket()
    port = free_port()
    with PolicyRedis(tmp_path / "redis", policy=True) as redis:
        env = {
            **os.environ,
            "BONUSD_SITE": site,
            "BONUSD_REDIS_URL": redis.url,
            "BONUSD_REDIS_CHECK": "refuse",
            "BONUSD_MQTT_URL": broker.url,
            "BONUSD_MQTT_CLIENT_ID": f"bonusd-{site}",
            "BONUSD_HTTP_PORT": str(port),
            "BONUSD_LOG_FORMAT": "json",
            "BONUSD_CERT_FILES": str(certs.chain),
            "NOTIFY_SOCKET": str(notify.path),
            "WATCHDOG_USEC": "1000000",  # WatchdogSec=1s: a ping every half second
        }
        log = tmp_path / "daemon.log"
        with log.open("wb") as out:
            daemon = subprocess.Popen(
                [sys.executable, "-m", "bonusd", "run"], env=env, cwd=tmp_path, stderr=out
            )
        try:
            messages = notify.until("READY=1", timeout=30)
            ready = next(m for m in messages if "READY=1" in m.splitlines())
            assert f"STATUS=serving site {site}" in ready
            assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
            pings = [m for m in notify.read_for(1.6) if m == "WATCHDOG=1"]
            assert len(pings) >= 2, notify.messages
            wait_healthy(port)

            text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
            assert _metric(text, "bonusd_redis_policy_ok") == 1
            assert _metric(text, "bonusd_redis_maxmemory_bytes") == 8 * 1024**3
            assert _metric(text, "bonusd_claim_timers_overdue_seconds") == 0
            assert _metric(text, "bonusd_ingest_lag_seconds") == 0
            expiry = _metric(
                text, f'bonusd_certificate_expiry_timestamp_seconds{{file="{certs.chain}"}}'
            )
            assert expiry == certs.expires.timestamp()
            # started again on jemalloc (BONUSD_ALLOCATOR's default): the same process
            maps = Path(f"/proc/{daemon.pid}/maps").read_text()
            assert ("libjemalloc" in maps) == (jemalloc_library() is not None)
            assert _metric(text, 'bonusd_heap_bytes{part="in_use"}') > 1_000_000

            stopping = time.monotonic()
            daemon.send_signal(signal.SIGTERM)
            assert daemon.wait(timeout=STOP_WITHIN_S) == 0
            assert time.monotonic() - stopping < 10
            notify.until("STOPPING=1", timeout=1)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
            notify.close()

    lines = log.read_text().splitlines()
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all(set(e) >= {"time", "level", "logger", "message"} for e in entries)
    said = [e["message"] for e in entries]
    assert any("keeps what bonusd needs" in m for m in said)
    assert any(m.startswith("bonusd running for site") for m in said)
    assert any(m.startswith("bonusd stopped") for m in said)
    assert not [e for e in entries if e["level"] in ("ERROR", "CRITICAL")]
