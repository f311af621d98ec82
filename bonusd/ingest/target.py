"""Where and how the ingest reaches the broker: the target from the settings (URL,
account, TLS files), and the logger paho reports through."""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from bonusd.settings import Settings


@dataclass(frozen=True, slots=True)
class MqttTarget:
    """Where and how to connect: `BONUSD_MQTT_URL`, and the account and TLS files of
    `BONUSD_MQTT_USERNAME`, `_PASSWORD`, `_TLS_CA_FILE`, `_TLS_CERT_FILE`, `_TLS_KEY_FILE`."""

    host: str
    port: int
    username: str | None
    password: str | None
    tls: bool
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    @classmethod
    def from_url(cls, url: str) -> MqttTarget:
        parts = urlsplit(url)
        tls = parts.scheme == "mqtts"
        return cls(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or (8883 if tls else 1883),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            tls=tls,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> MqttTarget:
        url = cls.from_url(settings.mqtt_url)
        password = settings.mqtt_password.get_secret_value()
        return cls(
            host=url.host,
            port=url.port,
            username=settings.mqtt_username or url.username,
            password=password or url.password,
            tls=url.tls,
            ca_file=settings.mqtt_tls_ca_file,
            cert_file=settings.mqtt_tls_cert_file,
            key_file=settings.mqtt_tls_key_file,
        )

    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS context of an mqtts:// target: the broker's certificate checked against
        the given CA (else the system's), and our client certificate if one is set."""
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file is not None:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context


class _LostConnectionIsAWarning(logging.Filter):
    """paho reports a dropped broker connection ("failed to receive on socket") at ERROR;
    the ingest waits it out and logs that itself, so it is a WARNING here: an operator's
    alarms that key on ERROR stay for what needs a person."""

    LOST = ("failed to receive on socket", "timeout on socket")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(self.LOST):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def paho_logger() -> logging.Logger:
    log = logging.getLogger("bonusd.mqtt")
    if not any(isinstance(f, _LostConnectionIsAWarning) for f in log.filters):
        log.addFilter(_LostConnectionIsAWarning())
    return log
