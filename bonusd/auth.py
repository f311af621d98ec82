"""Who may do what: bearer tokens, each granting one role (and for a screen, an area).

A token reads `bd_<id>_<secret>`. Only a SHA-256 of the secret is stored (in Redis, under
the site's keys), and it is compared in constant time. Tokens expire and can be revoked;
`bonusd tokens` issues, lists and revokes them. Nothing secret lives in the repository.

Failed checks are counted per client address and per token id (`bonusd.ratelimit`, in
Redis, on the daemon's clock): past the limit, checks from that address or for that id
are refused with 429 until the window ends, before the secret is even compared.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.errors import BonusdError
from bonusd.keys import Keys
from bonusd.ratelimit import Limit, RateLimiter, RateLimits

logger = logging.getLogger(__name__)
_TOKEN_ID = re.compile(r"^[0-9a-f]{12}$")  # secrets.token_hex(6), as `issue` makes them


class Role(StrEnum):
    """The five roles of the brief; a token grants exactly one."""

    SIGNAGE = "signage"  # a public floor screen
    CREW = "crew"  # a promotions-crew handheld
    DESK = "desk"  # the promotions team
    KIOSK = "kiosk"  # an eHost kiosk or the app's back end (activations)
    ADMIN = "admin"  # configuration and imports


class AuthError(BonusdError):
    """A request without a valid token (401), with the wrong role (403), or after too many
    failed token checks (429, with the seconds to wait)."""

    def __init__(self, status: int, message: str, *, retry_after_s: int | None = None) -> None:
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(message)

    @property
    def headers(self) -> dict[str, str] | None:
        """The HTTP headers of the refusal."""
        if self.status == 401:
            return {"WWW-Authenticate": "Bearer"}
        if self.retry_after_s is not None:
            return {"Retry-After": str(self.retry_after_s)}
        return None


@dataclass(frozen=True, slots=True)
class Principal:
    """The holder of a valid token."""

    token_id: str
    role: Role
    name: str
    area: str
    expires: dt.datetime


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str  # shown once, never stored
    principal: Principal


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenStore:
    """Issues, checks, lists and revokes the tokens of one site."""

    def __init__(self, redis: Redis, keys: Keys, limits: RateLimits | None = None) -> None:
        self._redis = redis
        self._keys = keys
        self.limiter = RateLimiter(redis, keys, limits)

    def _key(self, token_id: str) -> str:
        return f"{self._keys.base}token:{token_id}"

    @property
    def _index(self) -> str:
        return f"{self._keys.base}tokens"

    async def issue(
        self, *, role: Role, name: str, now: dt.datetime, valid_for: dt.timedelta, area: str = ""
    ) -> IssuedToken:
        if not name.strip():
            raise BonusdError("a token needs a name saying who or what holds it")
        token_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        expires = now + valid_for
        record = {
            "role": role.value,
            "name": name,
            "area": area,
            "digest": _digest(secret),
            "issued": now.isoformat(),
            "expires": expires.isoformat(),
            "revoked": "",
        }
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._key(token_id), mapping=cast(Mapping[Any, Any], record))
            pipe.sadd(self._index, token_id)
            await pipe.execute()
        principal = Principal(token_id, role, name, area, expires)
        return IssuedToken(f"bd_{token_id}_{secret}", principal)

    async def check(self, token: str, now: dt.datetime, *, client: str = "") -> Principal:
        """The principal of a valid token, or `AuthError(401)` saying what is wrong.

        `client` is the caller's address ("" when unknown). A client address or token id
        with too many failed checks in the window gets `AuthError(429)` instead, before
        the token is looked at; every 401 counts as one failure for both.
        """
        token_id = token.split("_", 2)[1] if token.count("_") >= 2 else ""
        checks = self._throttles(client, token_id if _TOKEN_ID.match(token_id) else "")
        over = await self.limiter.exceeded(checks, now)
        if over is not None:
            raise AuthError(429, over.message(), retry_after_s=over.retry_after_s)
        try:
            return await self._check(token, now)
        except AuthError:
            counts = await self.limiter.hit(checks, now)
            for (_, subject, limit), n in zip(checks, counts, strict=True):
                if n == limit.count:  # logged once: later checks are refused before counting
                    logger.warning(
                        "%d failed token checks for %s within %d s; refusing its checks "
                        "until the window ends",
                        n,
                        subject,
                        limit.window_s,
                    )
            raise

    def _throttles(self, client: str, token_id: str) -> list[tuple[str, str, Limit]]:
        limits = self.limiter.limits
        checks = []
        if client:
            checks.append(
                ("failed-token-checks", f"client {client}", limits.auth_failures_per_client)
            )
        if token_id:
            checks.append(
                ("failed-token-checks", f"token {token_id}", limits.auth_failures_per_token)
            )
        return checks

    async def _check(self, token: str, now: dt.datetime) -> Principal:
        parts = token.split("_", 2)
        if len(parts) != 3 or parts[0] != "bd" or not parts[1] or not parts[2]:
            raise AuthError(401, "malformed token; expected bd_<id>_<secret>")
        token_id, secret = parts[1], parts[2]
        raw = cast(dict[str, str], await self._redis.hgetall(self._key(token_id)))
        # compare even for an unknown id, so timing does not tell ids apart
        stored = raw.get("digest", "0" * 64)
        if not hmac.compare_digest(stored, _digest(secret)) or not raw:
            raise AuthError(401, "unknown token")
        if raw["revoked"]:
            raise AuthError(401, f"token {token_id} was revoked at {raw['revoked']}")
        expires = dt.datetime.fromisoformat(raw["expires"])
        if now >= expires:
            raise AuthError(401, f"token {token_id} expired at {raw['expires']}")
        return Principal(token_id, Role(raw["role"]), raw["name"], raw["area"], expires)

    async def revoke(self, token_id: str, now: dt.datetime) -> None:
        key = self._key(token_id)
        if not await self._redis.exists(key):
            raise BonusdError(f"no token with id {token_id}; `bonusd tokens list` shows them")
        await self._redis.hset(key, "revoked", now.isoformat())

    async def list(self) -> list[dict[str, str]]:
        ids = sorted(cast(set[str], await self._redis.smembers(self._index)))
        out = []
        for token_id in ids:
            raw = cast(dict[str, str], await self._redis.hgetall(self._key(token_id)))
            if raw:
                raw.pop("digest", None)
                out.append({"id": token_id, **raw})
        return out


def authorize(principal: Principal, allowed: frozenset[Role]) -> None:
    """`AuthError(403)` unless the principal's role is one of `allowed`."""
    if principal.role not in allowed:
        need = " or ".join(sorted(r.value for r in allowed))
        raise AuthError(403, f"this needs the {need} role; the token grants {principal.role}")
