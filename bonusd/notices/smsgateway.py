"""The SMS gateway adapter: how an outbox entry leaves bonusd for an SMS provider.

bonusd speaks one small contract and an SMS provider (or a few lines of glue in front of
one) plugs into it: an HTTP `POST` of JSON to `BONUSD_SMS_WEBHOOK_URL` with

    X-Bonusd-Secret: <BONUSD_SMS_WEBHOOK_SECRET>      (compare it in constant time)
    Idempotency-Key: <site>-<entry id>                 (the same on every retry)

    {"id": "1234", "site": "montecasino", "to": "+27821234567",
     "text": "...", "created_at": "2025-10-04T14:30:00+00:00"}

A 2xx answer means accepted. 408, 425, 429 and 5xx answers, timeouts and connection
errors are retried with backoff; any other answer (a wrong secret, a number the provider
refuses) fails the entry at once with the provider's words. docs/notices.md has a
receiving end in a dozen lines.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from bonusd.errors import BonusdError

SECRET_HEADER = "X-Bonusd-Secret"
RETRYABLE = frozenset({408, 425, 429})


class GatewayError(BonusdError):
    """A send failed; `permanent` when retrying cannot help until someone acts."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        self.permanent = permanent
        super().__init__(message)


@dataclass(frozen=True)
class SmsMessage:
    id: str
    site: str
    to: str
    text: str
    created_at: dt.datetime

    def to_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "site": self.site,
            "to": self.to,
            "text": self.text,
            "created_at": self.created_at.isoformat(),
        }


class SmsGateway(Protocol):
    """Delivers one message to the provider, or raises `GatewayError`."""

    @property
    def describe(self) -> str:
        """Where messages go, safe to show (no secret)."""
        ...

    async def send(self, message: SmsMessage) -> None: ...

    async def aclose(self) -> None: ...


class WebhookGateway:
    """POSTs each message as JSON to the provider's webhook, with the shared secret."""

    def __init__(self, url: str, secret: str, *, timeout_s: float) -> None:
        self._url = url
        self._secret = secret
        self._client = httpx.AsyncClient(timeout=timeout_s, follow_redirects=False)

    @property
    def describe(self) -> str:
        parts = urlsplit(self._url)
        return f"webhook {parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"

    async def send(self, message: SmsMessage) -> None:
        headers = {SECRET_HEADER: self._secret, "Idempotency-Key": f"{message.site}-{message.id}"}
        try:
            answer = await self._client.post(self._url, json=message.to_json(), headers=headers)
        except httpx.TimeoutException as exc:
            raise GatewayError(f"{self.describe} timed out ({exc!r})", permanent=False) from exc
        except httpx.HTTPError as exc:
            raise GatewayError(f"{self.describe} unreachable ({exc!r})", permanent=False) from exc
        status = answer.status_code
        if 200 <= status < 300:
            return
        said = answer.text[:200].strip() or answer.reason_phrase
        if status in (401, 403):
            raise GatewayError(
                f"{self.describe} refused the shared secret (HTTP {status}: {said}); check "
                "BONUSD_SMS_WEBHOOK_SECRET against the provider's setting",
                permanent=True,
            )
        retry = status in RETRYABLE or status >= 500
        raise GatewayError(f"{self.describe} answered HTTP {status}: {said}", permanent=not retry)

    async def aclose(self) -> None:
        await self._client.aclose()
