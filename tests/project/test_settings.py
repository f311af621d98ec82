"""Settings come from BONUSD_* variables; bad values give one clear message."""

from __future__ import annotations

import datetime as dt

import pytest

from bonusd.clocks.clock import SimulatedClock, WallClock
from bonusd.errors import ConfigError
from bonusd.infra.sharedclock import clock_from
from bonusd.settings import load_settings


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BONUSD_SITE", "BONUSD_REDIS_URL", "BONUSD_MQTT_URL", "BONUSD_HTTP_PORT"):
        monkeypatch.delenv(name, raising=False)
    s = load_settings()
    assert s.redis_url == "redis://127.0.0.1:6379/0"
    assert s.mqtt_url == "mqtt://127.0.0.1:1883"
    assert s.site == "demo"
    assert (s.http_host, s.http_port) == ("127.0.0.1", 8000)
    assert s.timezone == "Africa/Johannesburg"
    assert s.gaming_day_start == dt.time(8, 0)
    assert s.clock_speed == 1
    assert s.client_id == "bonusd-demo"


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BONUSD_SITE", "montecasino")
    monkeypatch.setenv("BONUSD_CLOCK_START", "2026-10-03T16:55:00+02:00")
    monkeypatch.setenv("BONUSD_CLOCK_SPEED", "60")
    monkeypatch.setenv("BONUSD_GAMING_DAY_START", "06:00")
    s = load_settings()
    assert s.site == "montecasino"
    assert s.gaming_day_start == dt.time(6, 0)
    clock = clock_from(s.clock_start, s.clock_speed)
    assert isinstance(clock, SimulatedClock)
    assert abs((clock.now() - s.clock_start).total_seconds()) < 60  # type: ignore[operator]


def test_wall_clock_by_default() -> None:
    assert isinstance(clock_from(None, 1.0), WallClock)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("BONUSD_TIMEZONE", "Mars/Olympus", "unknown time zone"),
        ("BONUSD_CLOCK_START", "2026-10-03T16:55:00", "UTC offset"),
        ("BONUSD_CLOCK_SPEED", "0", "BONUSD_CLOCK_SPEED"),
        ("BONUSD_MQTT_URL", "http://broker", "mqtt://"),
        ("BONUSD_REDIS_URL", "127.0.0.1:6379", "redis://"),
        ("BONUSD_SITE", "Bad Site!", "BONUSD_SITE"),
    ],
)
def test_bad_values_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        load_settings()


def test_sms_webhook_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().sms_webhook_url == ""  # no webhook: texts stay in the outbox
    monkeypatch.setenv("BONUSD_SMS_WEBHOOK_URL", "ftp://sms.example")
    with pytest.raises(ConfigError, match="BONUSD_SMS_WEBHOOK_URL must look like https://"):
        load_settings()
    monkeypatch.setenv("BONUSD_SMS_WEBHOOK_URL", "https://sms.example/hook")
    with pytest.raises(ConfigError, match="BONUSD_SMS_WEBHOOK_SECRET must be set"):
        load_settings()
    monkeypatch.setenv("BONUSD_SMS_WEBHOOK_SECRET", "0123456789abcdef")
    settings = load_settings()
    assert settings.sms_webhook_secret.get_secret_value() == "0123456789abcdef"
    assert "0123456789abcdef" not in repr(settings)  # never in a log line
