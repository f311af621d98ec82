"""Who may do what: bearer tokens, each granting one role (and for a screen, an area).

A token reads `bd_<id>_<secret>`. Only a SHA-256 of the secret is stored (in Redis, under
the site's keys); the digest offered is compared with it inside Redis, in the step that
counts failures (a digest of a guessed secret cannot be steered, so the time a comparison
takes tells nothing about the stored one). Tokens expire and can be revoked;
`bonusd tokens` issues, lists and revokes them. Nothing secret lives in the repository.

Failed checks are counted per client address and per token id (`bonusd.access.ratelimit`, in
Redis, on the daemon's clock), judged and counted in one atomic step: past the limit,
checks from that address or for that id are refused with 429 until the window ends,
before the secret is even compared, however many arrive at once.

A staff member's sign-in session is a token too (`bonusd.access.sessions`): it names the
staff number (`staff`) and ends after a spell without activity (`idle_until`, moved on by
`keep_alive`) as well as at its expiry. A machine's token (no staff number) has its last
use written to the `usage` hash by the check, at most once a minute per token: access
accounting, like the failure counters (docs/security.md).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.access.ratelimit import Check, Exceeded, RateLimiter, RateLimits
from bonusd.errors import BonusdError
from bonusd.infra.channel import notify_channel, revoked_message
from bonusd.infra.keys import Keys

logger = logging.getLogger(__name__)
_TOKEN_ID = re.compile(r"^[0-9a-f]{12}$")  # secrets.token_hex(6), as `issue` makes them
USAGE_EVERY = dt.timedelta(seconds=60)  # a machine token's last use, written at most this often
_USAGE_KEPT = 10_000  # tokens whose last write this process remembers


class Role(StrEnum):
    """The roles of the brief, and the casino app's; a token grants exactly one."""

    SIGNAGE = "signage"  # a public floor screen
    CREW = "crew"  # a promotions-crew handheld
    DESK = "desk"  # the promotions team
    KIOSK = "kiosk"  # an eHost kiosk
    APP = "app"  # the casino app's back end, one token per app server (docs/app-api.md)
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
    staff: str = ""  # a staff member's session: the staff number; "" for a machine's token


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str  # shown once, never stored
    principal: Principal


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _too_many(over: Exceeded) -> AuthError:
    return AuthError(429, over.message(), retry_after_s=over.retry_after_s)


def _warn_at_limit(checks: list[Check], counts: tuple[int, ...]) -> None:
    """A WARNING when a failure brings a count to its limit (once a window: later checks
    are refused before they are counted)."""
    for (_, subject, limit), failures in zip(checks, counts, strict=True):
        if failures == limit.count:
            logger.warning(
                "%d failed token checks for %s within %d s; refusing its checks until the "
                "window ends",
                failures,
                subject,
                limit.window_s,
            )


class TokenStore:
    """Issues, checks, lists and revokes the tokens of one site."""

    def __init__(self, redis: Redis, keys: Keys, limits: RateLimits | None = None) -> None:
        self._redis = redis
        self._keys = keys
        self.limiter = RateLimiter(redis, keys, limits)
        self._used: dict[str, dt.datetime] = {}  # token id -> when its use was last written

    def _key(self, token_id: str) -> str:
        return self._keys.token(token_id)

    @property
    def _index(self) -> str:
        return self._keys.tokens

    async def issue(
        self,
        *,
        role: Role,
        name: str,
        now: dt.datetime,
        valid_for: dt.timedelta,
        area: str = "",
        staff: str = "",
        idle_for: dt.timedelta | None = None,
    ) -> IssuedToken:
        """A new token, shown once. `staff` and `idle_for` make a staff member's session:
        it names the staff number and ends after `idle_for` without `keep_alive`."""
        if not name.strip():
            raise BonusdError("a token needs a name saying who or what holds it")
        if not name.isprintable() or len(name) > 120:  # shown on the desk and in `tokens list`
            raise BonusdError(
                "a token's name is at most 120 characters, without control or "
                f"text-direction characters; got {name[:120]!r}"
            )
        # an area of the floor, as the device registry spells areas (bonusd.registry.records)
        if area and not re.fullmatch(r"[a-z0-9_-]{1,32}", area):
            raise BonusdError(
                f"a token's area is 1-32 of a-z, 0-9, _ and -, like the device registry's "
                f"areas (e.g. main); got {area[:40]!r}"
            )
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
            "staff": staff,
            "idle_until": (now + idle_for).isoformat() if idle_for is not None else "",
        }
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._key(token_id), mapping=cast(Mapping[Any, Any], record))
            pipe.sadd(self._index, token_id)
            await pipe.execute()
        principal = Principal(token_id, role, name, area, expires, staff)
        return IssuedToken(f"bd_{token_id}_{secret}", principal)

    async def check(self, token: str, now: dt.datetime, *, client: str = "") -> Principal:
        """The principal of a valid token, or `AuthError(401)` saying what is wrong.

        `client` is the caller's address ("" when unknown). Failed checks are counted per
        client address and per token id, judged and counted in one Redis step with the
        comparison of the secret's digest: once a count is at its limit the check gets
        `AuthError(429)` before the secret is compared. A revoked or expired token (its
        secret right) counts too, and is a 429 if it goes over a limit. However many
        checks arrive at once, at most the limit of them are answered 401 in a window.
        """
        parts = token.split("_", 2)
        well_formed = len(parts) == 3 and parts[0] == "bd" and bool(parts[1]) and bool(parts[2])
        token_id = parts[1] if len(parts) == 3 else ""
        checks = self._throttles(client, token_id if _TOKEN_ID.match(token_id) else "")
        attempt = await self.limiter.attempt(
            checks,
            now,
            key=self._key(token_id),
            field="digest",
            value=_digest(parts[2]) if well_formed else "",
        )
        if attempt.exceeded is not None:
            raise _too_many(attempt.exceeded)
        if not attempt.passed:
            _warn_at_limit(checks, attempt.counts)
            if not well_formed:
                raise AuthError(401, "malformed token; expected bd_<id>_<secret>")
            raise AuthError(401, "unknown token")
        try:
            principal = await self._principal(token_id, now)
        except AuthError:
            counts = await self.limiter.count(checks, now)
            _warn_at_limit(checks, counts)
            over = self.limiter.over(checks, counts, now)
            if over is not None:
                raise _too_many(over) from None
            raise
        if not principal.staff:
            await self._record_use(token_id, now)
        return principal

    async def _record_use(self, token_id: str, now: dt.datetime) -> None:
        """Write a machine token's last use, at most once every `USAGE_EVERY` per token."""
        last = self._used.get(token_id)
        if last is not None and dt.timedelta(0) <= now - last < USAGE_EVERY:
            return
        if len(self._used) >= _USAGE_KEPT:
            self._used.clear()
        self._used[token_id] = now
        await self._redis.hset(self._keys.token_usage, token_id, now.isoformat())

    async def last_used(self) -> dict[str, str]:
        """Machine token id -> the ISO time of its last use (to the minute), as recorded."""
        return cast(dict[str, str], await self._redis.hgetall(self._keys.token_usage))

    def _throttles(self, client: str, token_id: str) -> list[Check]:
        limits = self.limiter.limits
        checks: list[Check] = []
        if client:
            checks.append(
                ("failed-token-checks", f"client {client}", limits.auth_failures_per_client)
            )
        if token_id:
            checks.append(
                ("failed-token-checks", f"token {token_id}", limits.auth_failures_per_token)
            )
        return checks

    async def _principal(self, token_id: str, now: dt.datetime) -> Principal:
        """The holder of a token whose secret matched; `AuthError(401)` if it is revoked
        or expired (or was deleted meanwhile)."""
        raw = cast(dict[str, str], await self._redis.hgetall(self._key(token_id)))
        if not raw:
            raise AuthError(401, "unknown token")
        if raw["revoked"]:
            why = f" ({raw['ended']})" if raw.get("ended") else ""
            raise AuthError(401, f"token {token_id} was revoked at {raw['revoked']}{why}")
        expires = dt.datetime.fromisoformat(raw["expires"])
        if now >= expires:
            raise AuthError(401, f"token {token_id} expired at {raw['expires']}")
        idle_until = raw.get("idle_until", "")
        if idle_until and now >= dt.datetime.fromisoformat(idle_until):
            raise AuthError(401, f"session {token_id} ended for inactivity at {idle_until}")
        role, staff = Role(raw["role"]), raw.get("staff", "")
        return Principal(token_id, role, raw["name"], raw["area"], expires, staff)

    async def keep_alive(self, token_id: str, idle_until: dt.datetime) -> None:
        """Move a session's end for inactivity to `idle_until` (the holder just acted); the
        caller has checked the token. Never past the token's expiry, which stays."""
        await self._redis.hset(self._key(token_id), "idle_until", idle_until.isoformat())

    async def revoke(self, token_id: str, now: dt.datetime, *, reason: str = "") -> None:
        """Revoke at once: HTTP refuses the token from now on, and every daemon of the site
        hears it on the site's notification channel and closes its websockets (4401).
        `reason` ("signed out", "account disabled") is told to whoever offers it next."""
        key = self._key(token_id)
        if not await self._redis.exists(key):
            raise BonusdError(f"no token with id {token_id}; `bonusd tokens list` shows them")
        await self._redis.hset(key, mapping={"revoked": now.isoformat(), "ended": reason})
        # after the write, not in its MULTI (Redis Cluster refuses PUBLISH there); a daemon
        # that misses it finds the record on its next look (`revoked_among`)
        await self._redis.publish(notify_channel(self._keys), revoked_message(token_id))

    async def revoked_among(
        self, token_ids: Collection[str], now: dt.datetime | None = None
    ) -> set[str]:
        """The ids among `token_ids` that are revoked or gone (one round trip); given `now`,
        also those expired or ended for inactivity by then."""
        ids = sorted(token_ids)
        if not ids:
            return set()
        async with self._redis.pipeline(transaction=False) as pipe:
            for token_id in ids:
                pipe.hmget(self._key(token_id), ["revoked", "digest", "expires", "idle_until"])
            rows = cast(list[list[str | None]], await pipe.execute())
        gone = set()
        for token_id, (revoked, digest, expires, idle_until) in zip(ids, rows, strict=True):
            ends = [dt.datetime.fromisoformat(t) for t in (expires, idle_until) if t]
            if revoked or not digest or (now is not None and any(now >= t for t in ends)):
                gone.add(token_id)
        return gone

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
