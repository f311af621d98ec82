"""Staff sign-in: a staff number and PIN buy a short-lived session token.

A session is a `TokenStore` token of the account's role, named "Naledi Mahlangu (staff
1042)" and carrying the staff number, so every role check, rate limit, audit name and
socket-closing-on-revoke works for people as it does for machines. It reaches the browser
only as an HttpOnly, SameSite=Strict cookie (`Secure` over TLS): never in JavaScript, a
URL or a log line. It ends at the end of the shift (`shift_s`), after `idle_s` without
activity (the page reports activity with `POST /staff/session/keepalive`: a GET never
changes state), at sign-out, and when the account is disabled or its PIN reset; the ends
that revoke publish the revocation, so the member's open websockets close at once, and an
idle one is closed by the push hub's next look at its held tokens. All on the daemon's
clock.

Wrong PINs are counted before they are checked (`bonusd.access.lockout`: one Lua step, so
a storm of tries sent at once gains nothing), per staff number (scope `staff-pin`: five
lock it for 15 minutes by default) and per client address (`staff-addr`, a larger count,
against one device trying many numbers); a right PIN forgets both counts. An unknown staff
number costs the same PIN check and the same count as a known one, so neither the answer
nor its time tells them apart.

A request carrying the cookie that changes state must come from a page of this host (its
`Origin`, or else its `Referer`): `same_origin` (SameSite=Strict already keeps the cookie
off other sites' requests in today's browsers; this is the second lock).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

from redis.asyncio import Redis

from bonusd.access.auth import AuthError, IssuedToken, Principal, TokenStore
from bonusd.access.lockout import Lockout, LockState
from bonusd.access.pins import hash_pin, verify_pin
from bonusd.access.staff import StaffMember, StaffStore
from bonusd.errors import BonusdError
from bonusd.infra.keys import Keys

logger = logging.getLogger(__name__)

COOKIE = "bonusd_session"  # the session token; HttpOnly, so no page script ever reads it
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class SessionPolicy:
    """How long sessions last and how many wrong PINs lock (the `BONUSD_STAFF_*` settings)."""

    shift_s: int = 12 * 3600
    idle_s: int = 15 * 60
    pin_attempts: int = 5  # wrong PINs for one staff number before the lock
    pin_lock_s: int = 15 * 60
    address_attempts: int = 20  # wrong PINs from one client address before its lock
    address_lock_s: int = 15 * 60


class SignInRefused(AuthError):
    """A sign-in that did not open a session: a wrong staff number or PIN (401), a locked
    number or address (423, with the seconds to wait), a disabled account (403)."""

    @property
    def headers(self) -> dict[str, str] | None:
        if self.retry_after_s is not None:
            return {"Retry-After": str(self.retry_after_s)}
        return None


@functools.cache
def _decoy_hash() -> str:
    """A PIN hash nobody's PIN matches, checked for an unknown number so that it costs the
    same time as a known one."""
    return hash_pin("00000000")


def _locked(state: LockState, what: str) -> SignInRefused:
    minutes = max(1, round(state.retry_after_s / 60))
    return SignInRefused(
        423,
        f"too many wrong PINs for {what}: locked for {minutes} more minute(s); a supervisor "
        "can reset the PIN",
        retry_after_s=state.retry_after_s,
    )


class StaffSessions:
    """Sign-in, keep-alive and sign-out of the staff of one site."""

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        tokens: TokenStore,
        policy: SessionPolicy | None = None,
    ) -> None:
        self._redis, self._keys, self.tokens = redis, keys, tokens
        self.policy = policy or SessionPolicy()
        self.staff = StaffStore(redis, keys)
        pol = self.policy
        self._by_number = Lockout(
            redis, keys, "staff-pin", attempts=pol.pin_attempts, lock_s=pol.pin_lock_s
        )
        self._by_address = Lockout(
            redis, keys, "staff-addr", attempts=pol.address_attempts, lock_s=pol.address_lock_s
        )

    async def sign_in(
        self, number: str, pin: str, now: dt.datetime, *, client: str = ""
    ) -> tuple[StaffMember, IssuedToken]:
        """A new session for the staff member `number` whose PIN is `pin`, or
        `SignInRefused`. Every try is counted (per number and per address) before the PIN
        is checked; a right PIN forgets both counts."""
        if client:
            at_address = await self._by_address.failed(client, now)
            if not at_address.counted:
                raise _locked(at_address, "this device")
        else:
            at_address = None
        for_number = await self._by_number.failed(number, now)
        if not for_number.counted:
            raise _locked(for_number, f"staff number {number}")
        member = await self.staff.get(number)
        pin_hash = (await self.staff.pin_hash(number)) if member else _decoy_hash()
        right = await asyncio.to_thread(verify_pin, pin_hash, pin) and member is not None
        if not right or member is None:
            self._wrong(number, client, for_number, at_address)
            if for_number.locked:
                raise _locked(for_number, f"staff number {number}")
            if at_address is not None and at_address.locked:
                raise _locked(at_address, "this device")
            left = min(s.left for s in (for_number, at_address) if s is not None)
            minutes = max(1, round(self.policy.pin_lock_s / 60))
            raise SignInRefused(
                401,
                f"staff number or PIN not recognised: {left} more wrong PIN(s) lock it for "
                f"{minutes} minutes",
            )
        await self._by_number.cleared(number)
        if client:
            await self._by_address.cleared(client)
        if member.disabled:
            logger.info("staff %s: sign-in refused, the account is disabled", number)
            raise SignInRefused(403, "this staff account is disabled; ask an administrator")
        issued = await self.tokens.issue(
            role=member.role,
            name=member.label,
            now=now,
            valid_for=dt.timedelta(seconds=self.policy.shift_s),
            staff=number,
            idle_for=dt.timedelta(seconds=self.policy.idle_s),
        )
        await self._remember(number, issued.principal.token_id, now)
        logger.info(
            "staff %s signed in (%s), session %s", number, member.role, issued.principal.token_id
        )
        return member, issued

    def _wrong(
        self, number: str, client: str, for_number: LockState, at_address: LockState | None
    ) -> None:
        if for_number.locked:
            logger.warning("staff number %s locked after wrong PINs (from %s)", number, client)
        if at_address is not None and at_address.locked:
            logger.warning("client %s locked after wrong staff PINs", client)

    async def _remember(self, number: str, token_id: str, now: dt.datetime) -> None:
        """Index the session under its staff number, and forget the ended ones there."""
        index = self._keys.staff_sessions(number)
        held = cast(set[str], await self._redis.smembers(index))
        ended = await self.tokens.revoked_among(held, now)
        async with self._redis.pipeline(transaction=True) as pipe:
            if ended:
                pipe.srem(index, *ended)
            pipe.sadd(index, token_id)
            # housekeeping only: a session lives at most a shift
            pipe.expire(index, self.policy.shift_s + 86_400)
            await pipe.execute()

    async def keep_alive(self, principal: Principal, now: dt.datetime) -> dt.datetime:
        """The holder of a staff session acted: its end for inactivity moves to `idle_s`
        from now (never past the end of the shift). Returns the new end."""
        until = min(now + dt.timedelta(seconds=self.policy.idle_s), principal.expires)
        await self.tokens.keep_alive(principal.token_id, until)
        return until

    async def sign_out(self, principal: Principal, now: dt.datetime) -> None:
        """End the caller's own session (its websockets close at once)."""
        await self.tokens.revoke(principal.token_id, now, reason="signed out")
        await self._redis.srem(self._keys.staff_sessions(principal.staff), principal.token_id)
        logger.info("staff %s signed out, session %s", principal.staff, principal.token_id)

    async def reset_pin(self, number: str, pin: str, now: dt.datetime) -> tuple[StaffMember, int]:
        """A new PIN for `number`: its lock after wrong PINs lifts, and every open session of
        it ends (how many)."""
        member = await self.staff.set_pin(number, pin, now)
        await self._by_number.cleared(number)
        return member, await self.end_all(number, now, reason="PIN reset")

    async def end_all(self, number: str, now: dt.datetime, *, reason: str) -> int:
        """End every open session of `number` (disabled, PIN reset): how many were open."""
        index = self._keys.staff_sessions(number)
        ids = cast(set[str], await self._redis.smembers(index))
        gone = await self.tokens.revoked_among(ids)
        ended = 0
        for token_id in sorted(ids - gone):
            try:
                await self.tokens.revoke(token_id, now, reason=reason)
            except BonusdError:
                continue  # deleted meanwhile (retention): nothing left to end
            ended += 1
        await self._redis.delete(index)
        if ended:
            logger.info("staff %s: %d session(s) ended (%s)", number, ended, reason)
        return ended


def same_origin(headers: Mapping[str, str], host: str) -> bool:
    """Whether a request comes from a page of `host` (the request's Host: name and port):
    its `Origin`, or else its `Referer`, names that host over http or https."""
    source = headers.get("origin") or headers.get("referer") or ""
    if not source or source == "null":
        return False
    parts = urlsplit(source)
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc.lower() == host.lower()
