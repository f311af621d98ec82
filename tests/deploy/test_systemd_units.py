"""The units of deploy/systemd/ pass `systemd-analyze verify` without a single warning:
the daemon's template (as an instance, with its binary pointed at this checkout's venv,
the only line that differs from a server's install) and the drop-ins over Debian's own
redis-server and mosquitto units. The hardening and lifecycle lines the deployment
promises are there, and agree with what the daemon does (`bonusd run`'s exit status for
a configuration error, its watchdog pings in tests/deploy/test_daemon_lifecycle.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.helpers import DEPLOY, tool

UNITS = DEPLOY / "systemd"
INSTALLED = "/opt/bonusd/venv/bin/bonusd"


def _verify(unit: str, *, unit_path: Path | None = None, cwd: Path | None = None) -> str:
    env = dict(os.environ)
    if unit_path is not None:
        env["SYSTEMD_UNIT_PATH"] = f"{unit_path}:"  # ours first, then the system's
    result = subprocess.run(
        [tool("systemd-analyze", "systemd"), "verify", unit],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0, output
    return output


def _settings(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def test_the_daemon_template_verifies_as_a_site_instance(tmp_path: Path) -> None:
    text = (UNITS / "bonusd@.service").read_text()
    assert text.count(INSTALLED) == 1
    venv_bonusd = Path(sys.executable).with_name("bonusd")
    assert venv_bonusd.is_file(), "the checkout's venv has no bonusd entry point"
    (tmp_path / "bonusd@montecasino.service").write_text(text.replace(INSTALLED, str(venv_bonusd)))
    assert _verify("./bonusd@montecasino.service", cwd=tmp_path) == ""


def test_a_mistake_in_a_unit_is_caught(tmp_path: Path) -> None:
    """The check is not vacuous: a misspelt key is reported."""
    text = (UNITS / "bonusd@.service").read_text().replace("WatchdogSec=", "WatchdogSecs=")
    (tmp_path / "bonusd@x.service").write_text(text.replace(INSTALLED, sys.executable))
    assert "Unknown key 'WatchdogSecs'" in _verify("./bonusd@x.service", cwd=tmp_path)


@pytest.mark.parametrize("unit", ["redis-server.service", "mosquitto.service"])
def test_the_drop_ins_verify_over_debians_units(unit: str, tmp_path: Path) -> None:
    if not any(Path(d, unit).is_file() for d in ("/lib/systemd/system", "/usr/lib/systemd/system")):
        pytest.skip(f"{unit} is not installed (Debian's {unit.removesuffix('.service')} package)")
    shutil.copytree(UNITS / f"{unit}.d", tmp_path / f"{unit}.d")
    assert _verify(unit, unit_path=tmp_path) == ""


def test_the_unit_runs_the_daemon_as_its_own_user_hardened() -> None:
    unit = _settings((UNITS / "bonusd@.service").read_text())
    expected = {
        "Type": "notify",
        "User": "bonusd",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "PrivateTmp": "yes",
        "CapabilityBoundingSet": "",
        "EnvironmentFile": "/etc/bonusd/%i.env",
        "Environment": "BONUSD_SITE=%i",
        "Restart": "on-failure",
        "KillSignal": "SIGTERM",
        # the daemon's graceful stop (5 s of HTTP drain, the ingest's commit, the lease
        # released) fits well inside it
        "TimeoutStopSec": "30s",
        # `bonusd run` exits 2 on a configuration error (bonusd/cli/main.py): not retried
        "RestartPreventExitStatus": "2",
    }
    assert {k: unit[k][-1] for k in expected} == expected
    # pinged at half of it by bonusd/service/hosting.py
    assert unit["WatchdogSec"] == ["30s"]
    users = (UNITS / "bonusd.sysusers.conf").read_text()
    assert any(line.split()[:2] == ["u", "bonusd"] for line in users.splitlines())


def test_redis_loads_the_policy_file_after_debians() -> None:
    drop_in = _settings((UNITS / "redis-server.service.d" / "bonusd.conf").read_text())
    assert drop_in["ExecStart"][0] == ""  # Debian's command replaced, not added to
    assert drop_in["ExecStart"][1].endswith(
        "/etc/redis/redis.conf --supervised systemd --daemonize no --include /etc/redis/bonusd.conf"
    )


def test_the_backup_service_and_its_timer_verify_as_a_site_instance(tmp_path: Path) -> None:
    text = (UNITS / "bonusd-backup@.service").read_text()
    assert text.count(INSTALLED) == 1
    venv_bonusd = Path(sys.executable).with_name("bonusd")
    (tmp_path / "bonusd-backup@montecasino.service").write_text(
        text.replace(INSTALLED, str(venv_bonusd))
    )
    shutil.copy(UNITS / "bonusd-backup@.timer", tmp_path / "bonusd-backup@montecasino.timer")
    assert _verify("./bonusd-backup@montecasino.timer", cwd=tmp_path) == ""
    assert _verify("./bonusd-backup@montecasino.service", cwd=tmp_path) == ""
    unit = _settings(text)
    assert unit["ExecStart"] == [f"{INSTALLED} backup /var/lib/bonusd-backups/%i --keep 48"]
    assert (unit["User"], unit["EnvironmentFile"]) == (["bonusd"], ["/etc/bonusd/%i.env"])
    assert _settings((UNITS / "bonusd-backup@.timer").read_text())["OnCalendar"] == ["hourly"]
