"""The figures of issue 14's ingest door, measured against real processes (never asserted
in a test): a throwaway redis-server and Mosquitto on free ports, and `bonusd run` as a
child process.

    .venv/bin/python loadtests/hostile_figures.py stalled-redis [--repeat 5]
    .venv/bin/python loadtests/hostile_figures.py memory [--packet-limit 0]

`stalled-redis`: Redis is SIGSTOPped (hung, not down) while the daemon is healthy; the
time until /health says `degraded`, polled every 10 ms; SIGCONT, and again.

`memory`: Redis SIGSTOPped, then 100 messages of 10 MB published at QoS 0 on a floor
topic; the daemon's RSS before, at its peak and 5 s after. `--packet-limit 0` (the
default) runs a broker whose `max_packet_size` is lifted (0 = MQTT's own maximum), the
case of a broker without bonusd's policy, where the daemon alone bounds what it takes;
`--packet-limit 8192` is the shipped policy. `--code DIR` runs the daemon from another
checkout (for a before/after comparison).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import paho.mqtt.client as mqtt
import psutil
from paho.mqtt.enums import CallbackAPIVersion

from simulators.local.services import LocalMosquitto, LocalRedis, free_port

PROJECT = Path(__file__).resolve().parent.parent


class _Broker(LocalMosquitto):
    """The shipped policy with `max_packet_size` replaced."""

    packet_limit = 8192

    def command(self) -> list[str]:
        cmd = super().command()
        conf = self.workdir / "mosquitto.conf"
        lines = [
            line for line in conf.read_text().splitlines() if not line.startswith("max_packet")
        ]
        if self.packet_limit:
            lines.append(f"max_packet_size {self.packet_limit}")
        conf.write_text("\n".join(lines) + "\n")
        return cmd


def _daemon(
    code: Path, site: str, redis: LocalRedis, broker: LocalMosquitto, port: int
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis.url,
        "BONUSD_MQTT_URL": broker.url,
        "BONUSD_HTTP_PORT": str(port),
        "BONUSD_BACKOFF_MAX_S": "1",
        "BONUSD_REDIS_CHECK": "off",  # a throwaway Redis, no persistence (docs/deploy.md)
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bonusd", "run"],
        cwd=code,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _health(port: int) -> dict[str, object]:
    return dict(httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json())


def _until_ok(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _health(port)["status"] == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"the daemon on {port} never became healthy")


def stalled_redis(code: Path, repeat: int) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalRedis(Path(tmp) / "r") as redis,
        _Broker(Path(tmp) / "m") as broker,
    ):
        port = free_port()
        daemon = _daemon(code, f"fig{os.getpid()}", redis, broker, port)
        try:
            _until_ok(port)
            assert redis.proc is not None
            for n in range(repeat):
                time.sleep(1.0)
                redis.proc.send_signal(signal.SIGSTOP)
                stopped = time.monotonic()
                while _health(port)["status"] != "degraded":
                    time.sleep(0.01)
                took = time.monotonic() - stopped
                redis.proc.send_signal(signal.SIGCONT)
                print(f"run {n + 1}: /health degraded {took:.2f} s after SIGSTOP")
                _until_ok(port)
        finally:
            daemon.terminate()
            daemon.wait(20)


def memory(code: Path, packet_limit: int, count: int, size: int) -> None:
    _Broker.packet_limit = packet_limit
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalRedis(Path(tmp) / "r") as redis,
        _Broker(Path(tmp) / "m") as broker,
    ):
        port, site = free_port(), f"fig{os.getpid()}"
        daemon = _daemon(code, site, redis, broker, port)
        try:
            _until_ok(port)
            rss = psutil.Process(daemon.pid)
            before = rss.memory_info().rss
            assert redis.proc is not None
            redis.proc.send_signal(signal.SIGSTOP)
            pub = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
            pub.connect("127.0.0.1", broker.port)
            pub.loop_start()
            payload = b"x" * size
            peak, sent = before, 0
            for _ in range(count):
                info = pub.publish(f"bonusd/{site}/egm/EGM-1/events", payload, qos=0)
                try:
                    info.wait_for_publish(30)
                except (RuntimeError, ValueError):
                    break  # the broker refused the packet and disconnected us
                sent += 1
                peak = max(peak, rss.memory_info().rss)
            published_by = time.monotonic()
            while time.monotonic() - published_by < 5:
                peak = max(peak, rss.memory_info().rss)
                time.sleep(0.05)
            after = rss.memory_info().rss
            pub.loop_stop()
            health = _health(port)
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            dropped = re.findall(
                r'bonusd_messages_dropped_total\{reason="inbox_full"\} (\S+)', metrics
            )
            redis.proc.send_signal(signal.SIGCONT)
            mb = 1024 * 1024
            limit = packet_limit or "lifted"
            print(
                f"broker max_packet_size {limit}; {sent} of {count} x {size:,} bytes "
                f"published at QoS 0 with Redis stopped: daemon RSS {before / mb:.0f} MB "
                f"before, peak {peak / mb:.0f} MB, {after / mb:.0f} MB 5 s later; /health "
                f"{health['status']} (redis {health['redis']}); QoS 0 refused by the "
                f"inbox: {dropped[0] if dropped else 0}"
            )
        finally:
            if redis.proc is not None:
                redis.proc.send_signal(signal.SIGCONT)
            daemon.terminate()
            daemon.wait(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("figure", choices=["stalled-redis", "memory"])
    parser.add_argument("--code", type=Path, default=PROJECT, help="the checkout to run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--packet-limit", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--size", type=int, default=10_000_000)
    args = parser.parse_args()
    if args.figure == "stalled-redis":
        stalled_redis(args.code, args.repeat)
    else:
        memory(args.code, args.packet_limit, args.count, args.size)


if __name__ == "__main__":
    main()
