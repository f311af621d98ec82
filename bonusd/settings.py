"""The one settings object: every `BONUSD_*` environment variable, validated at start-up."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bonusd.clocks.clock import ClockMode, known_zone
from bonusd.errors import ConfigError


class Settings(BaseSettings):
    """Daemon configuration. Each field is read from `BONUSD_<FIELD>` (upper case)."""

    model_config = SettingsConfigDict(env_prefix="BONUSD_", extra="ignore", frozen=True)

    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_max_connections: int = Field(default=200, ge=8, le=10_000)
    # Redis Cluster (docs/scaling.md): BONUSD_REDIS_URL names one node, the client finds
    # the rest; BONUSD_REDIS_MAX_CONNECTIONS is then the cap per node
    redis_cluster: bool = False
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
    # the RAPS floor mirror (docs/draws.md, "The RAPS floor mirror"): around each RAPS
    # session, every daemon brings its copy of floor-row up to date this often, so a pick
    # reads a fraction of a second of changes; 0: only when a pick asks (it then reads all
    # changes since the last)
    raps_floor_sync_s: float = Field(default=0.25, ge=0, le=60.0)
    # ... only from this long (daemon clock) before a session's first jackpot until none of
    # its jackpots is left to pick; outside that window its memory is freed (a pick still
    # reads it)
    raps_floor_lead_s: float = Field(default=600.0, ge=0, le=86_400.0)
    # within that window, from 10 s before each jackpot's time until a minute after it,
    # this often instead, so the pick's own sync carries a twentieth of a second of changes
    raps_floor_near_sync_s: float = Field(default=0.05, gt=0, le=60.0)
    # the site's leader archives the whole floor this long before each jackpot's time, and
    # the pick archives only the rows changed since (docs/fairness.md section 10, form 2);
    # 0: every pick archives the whole floor
    raps_floor_base_lead_s: float = Field(default=2.0, ge=0, le=60.0)
    # the desks' caches, each per runner (pool files: one for all), least recently used
    # dropped first (docs/settings.md, "Memory"): books of draws or RAPS sessions, pool files,
    # RAPS floor snapshots (as large as the floor each), random jackpot timetables; what is
    # dropped is read again
    desk_books: int = Field(default=16, ge=1, le=10_000)
    desk_pools: int = Field(default=64, ge=1, le=100_000)
    desk_floor_snapshots: int = Field(default=16, ge=1, le=10_000)
    desk_timetables: int = Field(default=64, ge=1, le=100_000)
    desk_idle_s: float = Field(default=7200.0, gt=0, le=30 * 86_400)  # books, pool files
    # ... and by megabytes, each entry sized by what it holds (a 1,000,000-ticket pool file
    # ~16 MB, a floor snapshot ~1.3 MB at 20,000 players); one larger than its whole budget
    # is kept alone
    desk_books_mb: float = Field(default=48.0, gt=0, le=100_000)
    desk_pools_mb: float = Field(default=32.0, gt=0, le=100_000)
    desk_floor_snapshots_mb: float = Field(default=8.0, gt=0, le=100_000)
    # the allocator `bonusd run` serves every allocation from (bonusd/infra/allocator.py):
    # jemalloc gives back what a busy evening freed; "system": glibc and Python's own
    allocator: Literal["jemalloc", "system"] = "jemalloc"
    # wall seconds between two trims of the C heap (its free pages given back to the system,
    # bonusd/infra/heap.py); 0: only after the RAPS floor mirror is let go
    heap_trim_s: float = Field(default=60.0, ge=0, le=86_400)
    # where SIGUSR2 writes the traced allocations of a daemon that traces them
    heap_dump_dir: Path = Path(".")
    # frames of each allocation traced from the end of start-up on (a diagnosis); 0: none
    heap_trace_frames: int = Field(default=0, ge=0, le=100)
    # leader election (docs/leader.md): the leader renews its lease every RENEW_S and
    # steps down before TTL_S runs out; a standby polls every POLL_S, so it takes over
    # within TTL_S + POLL_S of the leader's death (6 s with these defaults)
    leader_ttl_s: float = Field(default=5.0, ge=1.0, le=60.0)
    leader_renew_s: float = Field(default=1.5, gt=0, le=20.0)
    leader_poll_s: float = Field(default=1.0, gt=0, le=30.0)

    # --- security (docs/security.md) ------------------------------------------------------
    # bonusd's own MQTT account and TLS (deploy/mosquitto/README.md, "Secure broker"). TLS
    # is on with an mqtts:// BONUSD_MQTT_URL; these override a user:password in the URL.
    mqtt_username: str = ""
    mqtt_password: SecretStr = SecretStr("")
    mqtt_tls_ca_file: Path | None = None  # the CA that signed the broker's certificate
    mqtt_tls_cert_file: Path | None = None  # a client certificate, if the broker asks
    mqtt_tls_key_file: Path | None = None  # its private key
    # rate limits, counted in Redis per window of the daemon's clock (bonusd/access/ratelimit.py)
    limit_auth_failures_per_client: int = Field(default=20, ge=1)  # failed token checks
    limit_auth_failures_per_token: int = Field(default=10, ge=1)  # ... for one token id
    limit_auth_window_s: int = Field(default=300, ge=1, le=86_400)
    limit_activations_per_card: int = Field(default=6, ge=1)
    limit_activations_per_token: int = Field(default=1200, ge=1)  # a kiosk or the app
    limit_activation_window_s: int = Field(default=60, ge=1, le=86_400)
    limit_standings_per_card: int = Field(default=10, ge=1)  # kiosk standings lookups
    limit_standings_per_token: int = Field(default=600, ge=1)  # ... per kiosk or app token
    limit_standings_window_s: int = Field(default=60, ge=1, le=86_400)
    # --- end of security --------------------------------------------------------------------

    promotions: Path = Path("promotions")
    # the site's key sealing the draw seeds kept in Redis (docs/fairness.md): 64 hex
    # characters, mode 0600, the same file on every daemon, never backed up with Redis;
    # created (with a WARNING) when missing
    seed_key_file: Path = Path("seed-key")

    # -- the player's side: eHost kiosks, receipts, the app (docs/kiosk.md) ------------------
    # the site's key for the receipts' MAC (docs/kiosk.md): 64 hex characters, mode 0600,
    # the same file on every daemon; created (with a WARNING) when missing
    receipt_key_file: Path = Path("receipt-key")
    # where each kiosk's receipts print, by the kiosk token's name ("*": any kiosk):
    # file:PATH, tcp:HOST:PORT (a network ESC/POS printer) or device:/dev/usb/lp0;
    # a kiosk with none prints through its browser (the 80 mm print stylesheet)
    receipt_printers: dict[str, str] = Field(default_factory=dict)
    kiosk_pin_attempts: int = Field(default=5, ge=1, le=100)  # wrong PINs before the lock
    kiosk_pin_lock_s: int = Field(default=15 * 60, ge=1, le=86_400)  # the lock's length
    kiosk_visit_s: int = Field(default=120, ge=10, le=3600)  # a kiosk visit's life, idle
    limit_receipts_per_card: int = Field(default=5, ge=1)  # prints and reprints, per window
    limit_receipts_per_token: int = Field(default=600, ge=1)  # ... per kiosk token
    limit_receipts_window_s: int = Field(default=60, ge=1, le=86_400)

    # -- data retention (docs/retention.md): BONUSD_RETENTION_* -----------------------------
    retention_interval_s: int = Field(default=3600, ge=10)  # daemon-clock seconds between sweeps
    retention_batch: int = Field(default=1000, ge=10, le=100_000)  # keys per Redis call
    retention_gaming_days: int = Field(default=120, ge=2, le=36_600)  # per-day totals kept
    retention_campaign_grace_days: int = Field(default=90, ge=0, le=36_600)  # after a campaign
    retention_deadletter_days: int = Field(default=30, ge=1, le=36_600)
    retention_token_days: int = Field(default=90, ge=0, le=36_600)  # after expiry/revocation
    retention_audit_archive: Path = Path("audit-archive")  # {prefix}-{site}/audit-YYYY-MM.jsonl
    retention_audit_days: int = 1096  # archive files kept; three years at least
    # each finished gaming day's digest of the audit chain's head, written once by the
    # leader, outside Redis (docs/anchor.md): {prefix}-{site}/digest-YYYY-MM-DD.txt
    digest_dir: Path = Path("audit-digests")
    # the daemon's reads of its trail walk the whole chain again this often (daemon-clock
    # seconds; between, only the records added since: bonusd/audit/reads.py)
    audit_recheck_s: int = Field(default=86_400, ge=60)

    @field_validator("retention_audit_days")
    @classmethod
    def _audit_three_years(cls, value: int) -> int:
        if value < 1096:
            msg = (
                f"audit records must be kept at least three years (1096 days, the "
                f"promotion-competition rules), got {value}; raise it or leave it unset"
            )
            raise ValueError(msg)
        return value

    @field_validator("retention_gaming_days")
    @classmethod
    def _days_outlive_dedup(cls, value: int, info: ValidationInfo) -> int:
        window = info.data.get("dedup_window_s", 0)
        if value * 86_400 <= window + 86_400:
            msg = (
                f"gaming days must be kept longer than the de-duplication window plus a day "
                f"(BONUSD_DEDUP_WINDOW_S={window}), or a late event would re-create a removed "
                f"day; got {value} day(s)"
            )
            raise ValueError(msg)
        return value

    # -- end of data retention ---------------------------------------------------------------

    log_level: str = Field(default="INFO", pattern=r"^(DEBUG|INFO|WARNING|ERROR)$")

    # -- production deployment (docs/deploy.md) ---------------------------------------------
    # "json": one JSON object a line (time, level, logger, message, exception), no more
    # than the text format says, so the no-personal-data rule holds for both
    log_format: Literal["text", "json"] = "text"
    # the reverse proxies whose X-Forwarded-For/-Proto are believed: comma-separated
    # addresses or networks (deploy/nginx/); "": none, the client is the TCP peer
    trusted_proxies: str = ""
    # Redis's persistence and eviction policy, checked by `bonusd run` before it starts
    # (deploy/redis/): "refuse" to start on one that can lose acknowledged writes,
    # "warn" and run, "off" (a throwaway development Redis)
    redis_check: Literal["refuse", "warn", "off"] = "refuse"
    # PEM files whose expiry /metrics reports (the proxy's certificate), comma-separated;
    # the BONUSD_MQTT_TLS_* files are reported too
    cert_files: str = ""
    # set by systemd for a Type=notify unit with WatchdogSec= (deploy/systemd/)
    notify_socket: str = Field(default="", validation_alias="NOTIFY_SOCKET")
    watchdog_usec: int = Field(default=0, ge=0, validation_alias="WATCHDOG_USEC")

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_addresses(cls, value: str) -> str:
        for item in filter(None, (part.strip() for part in value.split(","))):
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                msg = (
                    f"BONUSD_TRUSTED_PROXIES takes IP addresses or networks "
                    f"(10.0.0.11,127.0.0.1), got {item!r}"
                )
                raise ValueError(msg) from None
        return value

    @property
    def proxies(self) -> list[str]:
        """The trusted proxies as a list ([] when none)."""
        return [part.strip() for part in self.trusted_proxies.split(",") if part.strip()]

    @property
    def watched_certificates(self) -> list[Path]:
        """Every certificate file whose expiry the daemon reports."""
        listed = [Path(part.strip()) for part in self.cert_files.split(",") if part.strip()]
        mqtt = [p for p in (self.mqtt_tls_ca_file, self.mqtt_tls_cert_file) if p is not None]
        return listed + mqtt

    # -- end of production deployment ---------------------------------------------------------

    # -- staff sign-in (docs/security.md, "Staff sign-in"): BONUSD_STAFF_* -----------------
    staff_shift_s: int = Field(default=12 * 3600, ge=60, le=7 * 86_400)  # a session's life
    staff_idle_s: int = Field(default=15 * 60, ge=60, le=86_400)  # ... without activity
    staff_pin_attempts: int = Field(default=5, ge=1, le=100)  # wrong PINs locking a number
    staff_pin_lock_s: int = Field(default=15 * 60, ge=1, le=86_400)  # the lock's length
    staff_address_attempts: int = Field(default=20, ge=1, le=10_000)  # ... one address
    staff_address_lock_s: int = Field(default=15 * 60, ge=1, le=86_400)
    # -- end of staff sign-in ----------------------------------------------------------------

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

    @field_validator("mqtt_tls_ca_file", "mqtt_tls_cert_file", "mqtt_tls_key_file")
    @classmethod
    def _tls_file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        name = f"BONUSD_{(info.field_name or '').upper()}"
        if value is not None and not value.is_file():
            raise ValueError(f"{name}: no file at {value}")
        if value is not None and urlsplit(str(info.data.get("mqtt_url", ""))).scheme != "mqtts":
            raise ValueError(f"{name} is set, so BONUSD_MQTT_URL must start with mqtts://")
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

    @field_validator("leader_renew_s", "leader_poll_s")
    @classmethod
    def _within_ttl(cls, value: float, info: ValidationInfo) -> float:
        ttl = info.data.get("leader_ttl_s")
        if ttl is None:
            return value  # the TTL itself is invalid: reported on its own
        if info.field_name == "leader_renew_s" and value > ttl / 3:
            msg = (
                f"must be at most a third of BONUSD_LEADER_TTL_S ({ttl:g} s), so a failed "
                f"renewal is retried before the leader steps down; got {value:g}"
            )
            raise ValueError(msg)
        if info.field_name == "leader_poll_s" and value > ttl:
            msg = f"must not exceed BONUSD_LEADER_TTL_S ({ttl:g} s); got {value:g}"
            raise ValueError(msg)
        return value

    @property
    def leader_takeover_bound_s(self) -> float:
        """The longest a standby may take to lead after the leader's death (kill -9)."""
        return self.leader_ttl_s + self.leader_poll_s

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
