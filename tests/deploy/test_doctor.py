"""`bonusd doctor` as an operator runs it (the real command in its own process): against
a default Debian-like Redis (no AOF, no memory limit) and Mosquitto (Debian's main file:
persistence on, the default queue limit, no packet limit) it names each problem with its
fix and exits 2; against the project's configuration (deploy/redis/bonusd.conf,
deploy/mosquitto/bonusd.conf) every check is OK and it exits 0. Every server is the
test's own, on a spare loopback port."""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from bonusd.infra.keys import Keys
from simulators.local.services import free_port, wait_for_port
from tests.daemon_helpers import PROJECT
from tests.deploy.helpers import DEPLOY, PolicyRedis, make_certificates, tool

BONUSD = [sys.executable, "-m", "bonusd"]
SITE = "montecasino"
PROMOTION = PROJECT / "promotions" / "montecasino-festa-fortuna.toml"
# Debian's /etc/mosquitto/mosquitto.conf, with the test's folders and port
DEBIAN_MOSQUITTO = "persistence true\npersistence_location {data}/\nlog_dest file {log}\n"


@contextmanager
def mosquitto(folder: Path, *, project: bool) -> Iterator[tuple[int, Path]]:
    """A broker from a main file like Debian's whose include_dir holds the project's
    deploy/mosquitto/bonusd.conf (`project`) or nothing; its port and main file."""
    binary = tool("mosquitto", "mosquitto")
    port, conf_d, data = free_port(), folder / "conf.d", folder / "data"
    conf_d.mkdir(parents=True)
    data.mkdir()
    if project:
        (conf_d / "bonusd.conf").symlink_to(DEPLOY / "mosquitto" / "bonusd.conf")
    main = folder / "mosquitto.conf"
    main.write_text(
        DEBIAN_MOSQUITTO.format(data=data, log=folder / "mosquitto.log")
        + f"listener {port} 127.0.0.1\nallow_anonymous true\nuser {getpass.getuser()}\n"
        + f"include_dir {conf_d}\n"
    )
    process = subprocess.Popen([binary, "-c", str(main)], stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, what="mosquitto")
        yield port, main
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def project_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The project's Redis and broker configuration, and the settings of a site on them."""
    tool("redis-server", "redis-server")
    root = tmp_path_factory.mktemp("doctor-project")
    with (
        PolicyRedis(root / "redis", policy=True) as server,
        mosquitto(root / "mosquitto", project=True) as (port, conf),
    ):
        yield _env(root, server.url, port, conf)


@pytest.fixture(scope="module")
def default_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tool("redis-server", "redis-server")
    root = tmp_path_factory.mktemp("doctor-default")
    with (
        PolicyRedis(root / "redis", policy=False) as server,
        mosquitto(root / "mosquitto", project=False) as (port, conf),
    ):
        yield _env(root, server.url, port, conf)


def _env(root: Path, redis_url: str, mqtt_port: int, broker_conf: Path) -> dict[str, str]:
    promotions = root / "promotions"
    promotions.mkdir()
    shutil.copy(PROMOTION, promotions)
    certs = make_certificates(root / "tls", days=60)
    return {
        "BONUSD_SITE": SITE,
        "BONUSD_KEY_PREFIX": f"doctor{os.getpid()}",
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_MQTT_URL": f"mqtt://127.0.0.1:{mqtt_port}",
        "BONUSD_PROMOTIONS": str(promotions),
        "BONUSD_RETENTION_AUDIT_ARCHIVE": str(root / "audit-archive"),
        "BONUSD_CERT_FILES": str(certs.chain),
        "BONUSD_LOG_LEVEL": "WARNING",
        "BROKER_CONF": str(broker_conf),
    }


def doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    conf = env.get("BROKER_CONF")
    options = ["--broker-config", conf] if conf else []
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BONUSD_")}
    return subprocess.run(
        [*BONUSD, "doctor", *options, *args],
        env={**clean, **env, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def statuses(output: str) -> dict[str, set[str]]:
    """Check name -> the statuses its lines have."""
    found: dict[str, set[str]] = {}
    for line in output.splitlines():
        status, _, rest = line.partition(" ")
        if status in {"OK", "WARN", "FAIL"}:
            found.setdefault(rest.split(":", 1)[0], set()).add(status)
    return found


def test_a_default_redis_and_mosquitto_are_failed_with_fixes(default_site: dict[str, str]) -> None:
    done = doctor(default_site)
    print(done.stdout)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    failed = [line for line in lines if line.startswith(("FAIL", "WARN"))]
    assert all(" — fix: " in line for line in failed), failed
    text = done.stdout
    assert "appendonly is no" in text and "set appendonly yes" in text
    assert "appendfsync is everysec" in text and "set appendfsync always" in text
    assert "maxmemory is 0" in text  # a WARN: monitoring is blind
    found = statuses(text)
    assert found["redis"] == {"FAIL"} and found["broker queue"] == {"FAIL"}
    assert "max_queued_messages is 1000" in text and "set max_queued_messages 10000000" in text
    assert found["broker packet size"] == {"WARN"}  # no limit, in the file and in CONNACK
    assert found["broker persistence"] == {"OK"}  # Debian's main file turns it on
    for check in ("clock", "timezone", "tokens", "promotions", "certificates", "audit archive"):
        assert found[check] == {"OK"}, (check, text)
    assert lines[-1].startswith("doctor: ") and "FAIL" in lines[-1]


def test_the_project_configuration_is_clean(project_site: dict[str, str]) -> None:
    done = doctor(project_site)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(line.startswith("OK ") for line in done.stdout.splitlines()[:-1]), done.stdout
    found = statuses(done.stdout)
    for check in (
        "redis",
        "redis memory",
        "broker",
        "broker queue",
        "broker persistence",
        "broker packet size",
        "clock",
        "archive disk",
        "certificates",
    ):
        assert found.get(check) == {"OK"}, (check, done.stdout)

    report = json.loads(doctor(project_site, "--json").stdout)
    assert (report["status"], report["exit"], report["site"]) == ("OK", 0, SITE)
    assert {c["check"] for c in report["checks"]} >= {"redis", "broker queue", "promotion rules"}


def test_rules_that_differ_and_a_token_near_expiry_are_named(
    project_site: dict[str, str],
) -> None:
    keys = Keys(project_site["BONUSD_KEY_PREFIX"], SITE)
    client = redis.Redis.from_url(project_site["BONUSD_REDIS_URL"], decode_responses=True)
    expires = dt.datetime.now(dt.UTC) + dt.timedelta(days=3)
    try:
        client.set(keys.rules, "0" * 64)  # what another daemon's files gave
        client.sadd(keys.tokens, "t0doctor")
        client.hset(
            keys.token("t0doctor"),
            mapping={
                "role": "desk",
                "name": "Desk Jane Doe",
                "area": "",
                "revoked": "",
                "expires": expires.isoformat(),
                "digest": "x",
            },
        )
        done = doctor(project_site)
    finally:
        client.delete(keys.rules, keys.tokens, keys.token("t0doctor"))
        client.close()
    print(done.stdout)
    assert done.returncode == 2, done.stdout + done.stderr
    found = statuses(done.stdout)
    assert found["promotion rules"] == {"FAIL"} and found["tokens"] == {"WARN"}
    assert "t0doctor (desk," in done.stdout and "Jane" not in done.stdout  # ids, not names
    assert "deploy the same promotion files on every daemon" in done.stdout


def test_an_unreachable_redis_is_a_problem_and_its_password_is_never_shown(
    project_site: dict[str, str],
) -> None:
    env = {**project_site, "BONUSD_REDIS_URL": f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0"}
    done = doctor(env, "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "s3cret-pw" not in done.stdout + done.stderr
    report = json.loads(done.stdout)
    (redis_check,) = [c for c in report["checks"] if c["check"] == "redis"]
    assert redis_check["status"] == "FAIL" and ":***@" in redis_check["what"]
    assert redis_check["fix"]
