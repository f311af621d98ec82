"""The one settings object: every `BONUSD_*` environment variable, validated at start-up."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bonusd.clock import ClockMode, known_zone
from bonusd.errors import ConfigError


class Settings(BaseSettings):
    """Daemon configuration. Each field is read from `BONUSD_<FIELD>` (upper case)."""

    model_config = SettingsConfigDict(env_prefix="BONUSD_", extra="ignore", frozen=True)

    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_max_connections: int = Field(default=200, ge=8, le=10_000)
    mqtt_url: str = "mqtt://127.0.0.1:1883"
    site: str = Field(default="demo", pattern=r"^[a-z0-9][a-z0-9-]{0,31}$")
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8000, ge=0, le=65535)
    timezone: str = "Africa/Johannesburg"
    gaming_day_start: dt.time = dt.time(8, 0)
    # "" = wall, or simulated if a start or speed is set; "shared": docs/clock.md
    clock: ClockMode = ""
    clock_start: dt.datetime | None = None
    clock_speed: float = Field(default=1.0, gt=0, le=100_000)

    key_prefix: str = Field(default="bonusd", pattern=r"^[A-Za-z0-9_.-]{1,32}$")
    topic_prefix: str = Field(default="bonusd", pattern=r"^[A-Za-z0-9_.-]{1,32}$")
    mqtt_client_id: str = ""
    mqtt_shared_group: str = ""
    mqtt_session_expiry_s: int = Field(default=7 * 24 * 3600, ge=60)
    mqtt_receive_maximum: int = Field(default=1000, ge=1, le=65535)

    batch_max: int = Field(default=500, ge=1, le=10_000)
    max_payload_bytes: int = Field(default=4096, ge=256, le=1_048_576)
    max_future_skew_s: float = Field(default=300.0, ge=0)
    dedup_window_s: int = Field(default=7 * 24 * 3600, ge=3600)
    session_idle_timeout_s: int = Field(default=30 * 60, ge=60)
    deadletter_maxlen: int = Field(default=100_000, ge=100)
    deadletter_payload_bytes: int = Field(default=2048, ge=64)
    backoff_max_s: float = Field(default=30.0, gt=0)
    # a draw round or jackpot missed by more than this (daemon down) is left to the desk
    draw_grace_s: int = Field(default=600, ge=0)
    # SMS to winners who opted in (docs/notices.md); no webhook: kept in the local outbox
    sms_webhook_url: str = ""
    sms_webhook_secret: SecretStr = Field(default=SecretStr(""), validate_default=True)
    sms_timeout_s: float = Field(default=10.0, gt=0, le=120)
    sms_max_attempts: int = Field(default=10, ge=1, le=1000)
    sms_retry_max_s: float = Field(default=60.0, gt=0)
    # live push to screens and handhelds (docs/push.md)
    push_queue_size: int = Field(default=64, ge=4, le=100_000)  # messages a client may lag
    push_resume_deltas: int = Field(default=256, ge=0, le=100_000)  # kept per stream
    push_ping_s: int = Field(default=10, ge=1, le=300)
    push_handshake_s: float = Field(default=10.0, gt=0, le=300)
    push_deflate: bool = False  # per-message compression (docs/benchmarks.md, "Push")

    promotions: Path = Path("promotions")
    log_level: str = Field(default="INFO", pattern=r"^(DEBUG|INFO|WARNING|ERROR)$")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return known_zone(value)

    @field_validator("clock_start")
    @classmethod
    def _aware(cls, value: dt.datetime | None) -> dt.datetime | None:
        if value is not None and value.tzinfo is None:
            msg = "BONUSD_CLOCK_START must carry a UTC offset, e.g. 2026-10-03T16:55:00+02:00"
            raise ValueError(msg)
        return value

    @field_validator("clock_speed")
    @classmethod
    def _shared_speed(cls, value: float, info: ValidationInfo) -> float:
        if info.data.get("clock") == "shared" and not 1 <= value <= 10_000:
            msg = f"with BONUSD_CLOCK=shared the speed must be 1 to 10000, got {value:g}"
            raise ValueError(msg)
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, value: str) -> str:
        if urlsplit(value).scheme not in {"redis", "rediss", "unix"}:
            msg = f"BONUSD_REDIS_URL must start with redis://, rediss:// or unix://, got {value!r}"
            raise ValueError(msg)
        return value

    @field_validator("mqtt_url")
    @classmethod
    def _mqtt_scheme(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in {"mqtt", "mqtts"} or not parts.hostname:
            msg = f"BONUSD_MQTT_URL must look like mqtt://host:1883, got {value!r}"
            raise ValueError(msg)
        return value

    @field_validator("sms_webhook_url")
    @classmethod
    def _webhook_scheme(cls, value: str) -> str:
        parts = urlsplit(value)
        if value and (parts.scheme not in {"http", "https"} or not parts.hostname):
            msg = f"BONUSD_SMS_WEBHOOK_URL must look like https://host/path, got {value!r}"
            raise ValueError(msg)
        return value

    @field_validator("sms_webhook_secret")
    @classmethod
    def _webhook_secret(cls, value: SecretStr, info: ValidationInfo) -> SecretStr:
        if info.data.get("sms_webhook_url") and len(value.get_secret_value()) < 16:
            msg = (
                "BONUSD_SMS_WEBHOOK_SECRET must be set (16 characters or more, the same as "
                "the SMS provider's setting) when BONUSD_SMS_WEBHOOK_URL is"
            )
            raise ValueError(msg)
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def client_id(self) -> str:
        """MQTT client id; fixed per site so the broker keeps our session across restarts."""
        return self.mqtt_client_id or f"bonusd-{self.site}"


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment, turning validation errors into a `ConfigError`."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            name = "BONUSD_" + "_".join(str(p) for p in err["loc"]).upper()
            lines.append(f"{name}: {err['msg']}")
        raise ConfigError("invalid settings:\n  " + "\n  ".join(lines)) from exc
