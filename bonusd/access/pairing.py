"""Floor screens paired by code: a new screen asks for a pairing, shows its code, and
collects its own signage credential once the desk (or `bonusd screens pair`) approves the
code. Nobody types a token, and none goes in a URL.

The flow (docs/security.md, "Paired screens and machine credentials"):

1. `start`: the screen (no token) gets a pairing id, a 6-character code from an
   unambiguous alphabet without vowels and a secret `sp_<id>_<secret>` it keeps in
   its own storage. Only the secret's SHA-256 is stored. Starts are counted per client
   address, and at most `PairingLimits.waiting` screens wait at once.
2. `approve`: someone at the desk reads the code off the screen and gives it an area and
   a name. The code is used up there; the pairing then waits `CODE_TTL` for its screen.
3. `claim`: the screen polls with its secret. It hears "waiting" (with its code) until
   approved; then, once only, its credential: a signage token bound to the area, issued
   at that moment (no token is ever stored in clear, not even while waiting), and the
   pairing is gone.

A code lives `CODE_TTL` (10 minutes) on the daemon's clock; no two waiting screens hold
the same live code (a code is taken with WATCH/MULTI, and a taken code is free again only
once its holder's time is up). Guesses are limited, each counted in the Redis step that
judges it (`RateLimiter.attempt`): wrong codes per client address and per desk token,
wrong screen secrets per client address and per pairing ("per screen"); past a limit the
answer is 429 with the seconds to wait, before anything is compared.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import redis.exceptions
from redis.asyncio import Redis

from bonusd.access.auth import IssuedToken, Role, TokenStore
from bonusd.access.machines import area_problem, describe, screen_name_problem
from bonusd.access.ratelimit import Check, Exceeded, Limit
from bonusd.errors import BonusdError
from bonusd.infra.keys import Keys

logger = logging.getLogger(__name__)

# read aloud or off a screen without doubt (no 0/O, 1/I/L, U/V), and no vowels: no word
# a guest would rather not see on a casino floor screen
ALPHABET = "23456789BCDFGHJKMNPQRSTWXYZ"
CODE_LENGTH = 6  # 27**6: 387 million codes
CODE_TTL = dt.timedelta(minutes=10)
SCREEN_VALID_FOR = dt.timedelta(days=365)  # a paired screen's credential; then pair again
_SECRET = re.compile(r"^sp_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")
_PAIRING_ID = re.compile(r"^[0-9a-f]{12}$")
_CODE_TRIES = 20  # codes drawn before giving up (a clash is one in millions per draw)
_KEEP_S = 3600  # Redis expiry past the clock's: housekeeping only


def normal_code(text: str) -> str:
    """A code as typed ("k7m-4qx", "K7M 4QX") in its stored form ("K7M4QX"), or "" when it
    cannot be a code at all."""
    code = re.sub(r"[\s-]", "", text).upper()
    if len(code) != CODE_LENGTH or any(c not in ALPHABET for c in code):
        return ""
    return code


def shown_code(code: str) -> str:
    """A code as a screen shows it: two groups of three ("K7M-4QX")."""
    return f"{code[:3]}-{code[3:]}"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _ms(when: dt.datetime) -> int:
    return int(when.timestamp() * 1000)


_STARTS, _CLAIMS, _TRIES = Limit(30, 600), Limit(30, 600), Limit(10, 600)


@dataclass(frozen=True, slots=True)
class PairingLimits:
    """How many pairings and guesses are allowed (each within its window, in seconds)."""

    starts_per_client: Limit = _STARTS  # pairings started from one address
    claims_per_client: Limit = _CLAIMS  # wrong screen secrets from one address
    claims_per_screen: Limit = _TRIES  # wrong secrets for one pairing
    codes_per_client: Limit = _TRIES  # wrong codes typed from one address
    codes_per_token: Limit = _TRIES  # wrong codes typed by one desk token
    waiting: int = 500  # screens waiting to be paired at once, site-wide


class PairingError(BonusdError):
    """A pairing step refused: `status` is the HTTP answer (401 wrong secret, 404 no such
    code, 410 expired, 422 bad area or name, 429 too many tries, 503 too many waiting)."""

    def __init__(self, status: int, message: str, *, retry_after_s: int | None = None) -> None:
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(message)


def _too_many(over: Exceeded) -> PairingError:
    return PairingError(429, over.message(), retry_after_s=over.retry_after_s)


@dataclass(frozen=True, slots=True)
class PairingStarted:
    """A new pairing: the screen shows `code` and keeps `secret` (shown once)."""

    pairing_id: str
    code: str
    secret: str
    expires: dt.datetime


@dataclass(frozen=True, slots=True)
class PairingApproved:
    """A code approved: its screen collects a credential for `area` named `name`."""

    pairing_id: str
    code: str
    area: str
    name: str
    expires: dt.datetime  # the screen must collect it by then


@dataclass(frozen=True, slots=True)
class PairingClaimed:
    """What a screen's poll came to: still waiting (`credential` None), or paired."""

    code: str
    expires: dt.datetime
    credential: IssuedToken | None = None


class PairingStore:
    """Pairings of one site's floor screens."""

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        tokens: TokenStore,
        *,
        limits: PairingLimits | None = None,
        choose: Callable[[str], str] = secrets.choice,
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._tokens = tokens
        self._limiter = tokens.limiter
        self.limits = limits or PairingLimits()
        self._choose = choose  # injected: tests make two screens draw the same code

    # -- the screen ----------------------------------------------------------------------

    async def start(
        self, *, width: int, height: int, client: str, now: dt.datetime
    ) -> PairingStarted:
        """A new pairing for a screen of `width` × `height` pixels at address `client`."""
        if client:
            limit = self.limits.starts_per_client
            over = await self._limiter.admit([("screen-pairings", f"client {client}", limit)], now)
            if over is not None:
                raise _too_many(over)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(self._keys.pairings, "-inf", _ms(now))
            pipe.zcard(self._keys.pairings)
            waiting = int((await pipe.execute())[1])
        if waiting >= self.limits.waiting:
            raise PairingError(
                503,
                f"{waiting} screens are waiting to be paired already; pair them (or let their "
                "codes expire, 10 minutes) before starting more",
            )
        pairing_id = secrets.token_hex(6)
        secret = f"sp_{pairing_id}_{secrets.token_urlsafe(32)}"
        expires = now + CODE_TTL
        record = {
            "digest": _digest(secret),
            "width": str(width),
            "height": str(height),
            "address": client,
            "created": now.isoformat(),
            "expires": expires.isoformat(),
        }
        code = await self._take_code(pairing_id, record, now, expires)
        logger.info("screen pairing %s started from %s (%d×%d)", pairing_id, client, width, height)
        return PairingStarted(pairing_id, code, secret, expires)

    async def _take_code(
        self, pairing_id: str, record: dict[str, str], now: dt.datetime, expires: dt.datetime
    ) -> str:
        """Draw codes until one is free (nobody holds it, or its holder's time is up) and
        take it with the pairing's record, in one transaction."""
        keep_ms = (int(CODE_TTL.total_seconds()) + _KEEP_S) * 1000
        for _ in range(_CODE_TRIES):
            code = "".join(self._choose(ALPHABET) for _ in range(CODE_LENGTH))
            code_key = self._keys.pairing_code(code)
            async with self._redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(code_key)
                    held = cast(str | None, await pipe.hget(code_key, "expires"))
                    if held is not None and int(held) > _ms(now):
                        continue  # a live code of another screen
                    pipe.multi()  # type: ignore[no-untyped-call]
                    fields = {"code": code, "pairing": pairing_id, "expires": str(_ms(expires))}
                    pipe.hset(code_key, mapping=cast(Mapping[Any, Any], fields))
                    pipe.pexpire(code_key, keep_ms)
                    key = self._keys.pairing(pairing_id)
                    pipe.hset(key, mapping=cast(Mapping[Any, Any], record | {"code": code}))
                    pipe.pexpire(key, keep_ms)
                    pipe.zadd(self._keys.pairings, {pairing_id: _ms(expires)})
                    await pipe.execute()
                except redis.exceptions.WatchError:
                    continue  # taken in the same instant by another screen: draw again
            return code
        raise PairingError(503, "no free pairing code was found; try again in a moment")

    async def claim(self, secret: str, *, client: str, now: dt.datetime) -> PairingClaimed:
        """A screen's poll with its secret: waiting, or (once) its credential."""
        match = _SECRET.match(secret)
        pairing_id = match.group(1) if match else ""
        checks: list[Check] = []
        if client:
            limit = self.limits.claims_per_client
            checks.append(("failed-screen-claims", f"client {client}", limit))
        if _PAIRING_ID.match(pairing_id):
            limit = self.limits.claims_per_screen
            checks.append(("failed-screen-claims", f"pairing {pairing_id}", limit))
        attempt = await self._limiter.attempt(
            checks,
            now,
            key=self._keys.pairing(pairing_id),
            field="digest",
            value=_digest(secret) if match else "",
        )
        if attempt.exceeded is not None:
            raise _too_many(attempt.exceeded)
        if not attempt.passed:
            why = "unknown pairing (expired, collected or never started); start a new one"
            raise PairingError(401, why)
        key = self._keys.pairing(pairing_id)
        raw = cast(dict[str, str], await self._redis.hgetall(key))
        if not raw:
            raise PairingError(401, "this pairing was collected or has ended; start a new one")
        expires = dt.datetime.fromisoformat(raw["expires"])
        if now >= expires:
            code = shown_code(raw["code"])
            raise PairingError(410, f"pairing code {code} expired at {expires}; start a new one")
        if not raw.get("approved_at"):
            return PairingClaimed(raw["code"], expires)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hgetall(key)
            pipe.delete(key)
            pipe.zrem(self._keys.pairings, pairing_id)
            taken = cast(dict[str, str], (await pipe.execute())[0])
        if not taken:  # two polls at once: the other one collected it
            raise PairingError(401, "this pairing was collected already; start a new one")
        issued = await self._issue(taken, now)
        return PairingClaimed(taken["code"], expires, issued)

    async def _issue(self, raw: dict[str, str], now: dt.datetime) -> IssuedToken:
        issued = await self._tokens.issue(
            role=Role.SIGNAGE,
            name=raw["name"],
            area=raw["area"],
            now=now,
            valid_for=SCREEN_VALID_FOR,
        )
        facts = {
            "width": raw.get("width", ""),
            "height": raw.get("height", ""),
            "address": raw.get("address", ""),
            "paired_at": raw["approved_at"],
            "paired_by": raw.get("approved_by", ""),
        }
        await describe(self._redis, self._keys, issued.principal.token_id, facts)
        logger.info(
            "screen %s paired: %r in area %s (approved by %s)",
            issued.principal.token_id,
            raw["name"],
            raw["area"],
            raw.get("approved_by", ""),
        )
        return issued

    # -- the desk ------------------------------------------------------------------------

    async def waiting(self, now: dt.datetime) -> int:
        """How many screens show a live pairing code (or wait to collect) at `now`."""
        return int(await self._redis.zcount(self._keys.pairings, f"({_ms(now)}", "+inf"))

    async def approve(
        self,
        code_text: str,
        *,
        area: str,
        name: str,
        by: str,
        by_token: str,
        client: str,
        now: dt.datetime,
    ) -> PairingApproved:
        """Approve the screen showing `code_text` for `area`, named `name`; `by` names who
        did it (the desk's staff member, or the command line), `by_token` and `client` are
        what wrong codes are counted against."""
        problem = area_problem(area) or screen_name_problem(name)
        if problem:
            raise PairingError(422, problem)
        code = normal_code(code_text)
        checks: list[Check] = []
        if client:
            checks.append(("wrong-pairing-codes", f"client {client}", self.limits.codes_per_client))
        if by_token:
            checks.append(("wrong-pairing-codes", f"token {by_token}", self.limits.codes_per_token))
        code_key = self._keys.pairing_code(code)
        attempt = await self._limiter.attempt(checks, now, key=code_key, field="code", value=code)
        if attempt.exceeded is not None:
            raise _too_many(attempt.exceeded)
        missing = PairingError(
            404,
            f"no screen is showing code {code_text.strip()[:12]!r}; read it again off the "
            "screen (codes are 6 characters and change every 10 minutes)",
        )
        if not attempt.passed:
            raise missing
        approved = await self._approve(code, area=area, name=name, by=by, now=now)
        if approved is None:  # the code's time was up: a wrong code all the same
            over = self._limiter.over(checks, await self._limiter.count(checks, now), now)
            if over is not None:
                raise _too_many(over)
            raise missing
        logger.info("screen pairing %s approved for area %s by %s", approved.pairing_id, area, by)
        return approved

    async def _approve(
        self, code: str, *, area: str, name: str, by: str, now: dt.datetime
    ) -> PairingApproved | None:
        """Mark the pairing showing `code` approved and use the code up, in one
        transaction; None when the code is not live (expired, or approved meanwhile)."""
        code_key = self._keys.pairing_code(code)
        expires = now + CODE_TTL
        async with self._redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(code_key)
                held = cast(list[str | None], await pipe.hmget(code_key, ["pairing", "expires"]))
                pairing_id, until = held
                if pairing_id is None or until is None or int(until) <= _ms(now):
                    return None
                key = self._keys.pairing(pairing_id)
                await pipe.watch(key)
                if await pipe.hget(key, "approved_at"):
                    return None
                pipe.multi()  # type: ignore[no-untyped-call]
                fields = {
                    "area": area,
                    "name": name,
                    "approved_by": by,
                    "approved_at": now.isoformat(),
                    "expires": expires.isoformat(),
                }
                pipe.hset(key, mapping=cast(Mapping[Any, Any], fields))
                pipe.delete(code_key)  # used up: nobody pairs with it again
                pipe.zadd(self._keys.pairings, {pairing_id: _ms(expires)})
                await pipe.execute()
            except redis.exceptions.WatchError:
                return None  # approved from elsewhere in the same instant
        return PairingApproved(pairing_id, code, area, name, expires)
