"""Machine credentials: the tokens held by floor screens, kiosks, the casino app's servers
and scripts (every token but a staff member's sign-in session), listed with their last
use, revoked from the desk, and for a paired screen moved to another area.

A machine's kind follows from its role (signage: a screen, kiosk, app: an app server, any
other: a script, e.g. a crew or admin token of `bonusd tokens issue`); a screen paired by
code (`bonusd.access.pairing`) also carries what it said about itself on its token record:
its size, address, who paired it and when, its page's version and browser (`hello`).

Last use is the `usage` hash the token check writes (at most once a minute per token), and
for a screen with its socket open, the push hub's beat (`bonusd.push.presence`), which also
keeps the screen's `online` marker: its connection state.

**Moving a screen keeps its credential.** The token's area changes in its record, and a
`token-moved:{id}` notification on the site's channel makes every daemon close that
token's sockets with 4410; the screen reconnects at once with the same credential, the
check reads the new area, and it joins the new area's stream. Nothing secret is handed
round again (revoking and issuing anew would need a way to get the new token to the
screen: a second pairing), the desk keeps one id per screen, and a connection racing the
move is caught by the hub's next beat (`bonusd.push.presence`), which closes a socket
whose stream is not its token's area.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.access.auth import Role, TokenStore
from bonusd.errors import ConflictError, NotFoundError
from bonusd.infra.channel import notify_channel
from bonusd.infra.keys import Keys
from bonusd.registry.text import plain_text

logger = logging.getLogger(__name__)

AREA = re.compile(r"[a-z0-9_-]{1,32}")  # as the device registry spells areas
MOVED = "token-moved:"  # a notification on the site's channel (bonusd.infra.channel)
NAME_MAX = 60
KINDS = {Role.SIGNAGE: "screen", Role.KIOSK: "kiosk", Role.APP: "app server"}
SCRIPT = "script"  # any other role: a token of `bonusd tokens issue` used by a program
# what a screen's token record may say about it besides the token's own fields
SCREEN_FACTS = (
    "width", "height", "address", "paired_at", "paired_by", "moved_at", "moved_by",
    "version", "agent", "hello_at",
)  # fmt: skip


def moved_message(token_id: str) -> str:
    """The notification that screen token `token_id` now shows another area."""
    return f"{MOVED}{token_id}"


def moved_token(data: object) -> str | None:
    """The id of the moved screen token a notification names, or None for any other."""
    if isinstance(data, str) and data.startswith(MOVED):
        return data.removeprefix(MOVED)
    return None


def area_problem(area: str) -> str:
    """Why `area` is not an area of the floor, or ""."""
    if AREA.fullmatch(area):
        return ""
    return (
        "an area is 1-32 of a-z, 0-9, _ and -, like the device registry's areas (e.g. main); "
        f"got {area[:40]!r}"
    )


def screen_name_problem(name: str) -> str:
    """Why `name` cannot name a screen ("Bar 3"), or ""."""
    if not name.strip():
        return "a screen needs a name saying where it hangs, e.g. 'Bar 3'"
    if len(name) > NAME_MAX:
        return f"a screen's name is at most {NAME_MAX} characters; got {len(name)}"
    try:
        plain_text(name)
    except ValueError as exc:
        return f"a screen's name {exc}"
    if not name.isprintable():
        return "a screen's name holds an unprintable character; type it plainly"
    return ""


@dataclass(frozen=True, slots=True)
class Credential:
    """One machine credential as the desk lists it. Times are ISO 8601 ("" when never)."""

    id: str
    kind: str  # screen, kiosk, app server, script
    role: str
    name: str
    area: str
    issued: str
    expires: str
    state: str  # active, revoked or expired
    revoked: str
    revoked_by: str
    last_used: str
    online: bool  # a screen's socket is open now
    facts: Mapping[str, str]  # a screen's SCREEN_FACTS that are known


async def describe(redis: Redis, keys: Keys, token_id: str, facts: Mapping[str, str]) -> None:
    """Write what a machine said or was given (`SCREEN_FACTS`) onto its token record."""
    known = {k: v for k, v in facts.items() if k in SCREEN_FACTS}
    if known:
        await redis.hset(keys.token(token_id), mapping=cast(Mapping[Any, Any], known))


def _state(raw: Mapping[str, str], now: dt.datetime) -> str:
    if raw.get("revoked"):
        return "revoked"
    if now >= dt.datetime.fromisoformat(raw["expires"]):
        return "expired"
    return "active"


def _machine(raw: Mapping[str, str]) -> bool:
    """A token's record (not gone) that is not a staff member's session."""
    return bool(raw.get("digest")) and not raw.get("staff")


def _kind(raw: Mapping[str, str]) -> str:
    try:
        return KINDS.get(Role(raw.get("role", "")), SCRIPT)
    except ValueError:
        return SCRIPT


class Machines:
    """The machine credentials of one site."""

    def __init__(self, redis: Redis, keys: Keys, tokens: TokenStore) -> None:
        self._redis = redis
        self._keys = keys
        self._tokens = tokens

    async def all(self, now: dt.datetime, *, kind: str | None = None) -> list[Credential]:
        """Every machine credential (of `kind`, if given), revoked and expired ones too,
        by kind, area and name; staff sessions are left out (they are people's)."""
        ids = sorted(cast(set[str], await self._redis.smembers(self._keys.tokens)))
        async with self._redis.pipeline(transaction=False) as pipe:
            for token_id in ids:
                pipe.hgetall(self._keys.token(token_id))
            records = cast(list[dict[str, str]], await pipe.execute())
        found = [
            (token_id, raw)
            for token_id, raw in zip(ids, records, strict=True)
            if _machine(raw) and (kind is None or _kind(raw) == kind)
        ]
        return await self._listed(found, now)

    async def _listed(
        self, found: list[tuple[str, dict[str, str]]], now: dt.datetime
    ) -> list[Credential]:
        if not found:
            return []
        ids = [token_id for token_id, _ in found]
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hmget(self._keys.token_usage, ids)
            for token_id in ids:
                pipe.exists(self._keys.online(token_id))
            replies: list[Any] = await pipe.execute()
        used = cast(list[str | None], replies[0])
        out = []
        for (token_id, raw), last, online in zip(found, used, replies[1:], strict=True):
            state = _state(raw, now)
            out.append(
                Credential(
                    id=token_id,
                    kind=_kind(raw),
                    role=raw.get("role", ""),
                    name=raw.get("name", ""),
                    area=raw.get("area", ""),
                    issued=raw.get("issued", ""),
                    expires=raw.get("expires", ""),
                    state=state,
                    revoked=raw.get("revoked", ""),
                    revoked_by=raw.get("revoked_by", ""),
                    last_used=last or "",
                    online=bool(online) and state == "active",
                    facts={k: raw[k] for k in SCREEN_FACTS if raw.get(k)},
                )
            )
        out.sort(key=lambda c: (c.kind, c.area, c.name.casefold(), c.id))
        return out

    async def one(self, token_id: str, now: dt.datetime) -> Credential:
        """The machine credential `token_id`; `NotFoundError` if there is none."""
        raw = cast(dict[str, str], await self._redis.hgetall(self._keys.token(token_id)))
        if not raw.get("digest"):
            raise NotFoundError(f"no machine credential with id {token_id[:40]!r}")
        if raw.get("staff"):
            raise NotFoundError(
                f"{token_id} is staff member {raw['staff']}'s sign-in session, not a machine's "
                "credential; sign them out from the staff list"
            )
        return (await self._listed([(token_id, raw)], now))[0]

    async def revoke(self, token_id: str, now: dt.datetime, *, by: str) -> Credential:
        """Revoke a machine credential at once (its sockets close, on every daemon, by the
        existing revocation path); `by` names who did it. 409 if it was revoked already."""
        found = await self.one(token_id, now)
        if found.state == "revoked":
            raise ConflictError(f"{found.kind} {found.name!r} was revoked at {found.revoked}")
        await self._tokens.revoke(token_id, now, reason=f"revoked from the desk by {by}")
        await self._redis.hset(self._keys.token(token_id), "revoked_by", by)
        logger.info("%s %s (%r) revoked by %s", found.kind, token_id, found.name, by)
        return await self.one(token_id, now)

    async def move(self, token_id: str, area: str, now: dt.datetime, *, by: str) -> Credential:
        """Show `area` on the screen holding `token_id` from now on (see the module's text):
        its open sockets close (4410) and reconnect to the new area's stream."""
        problem = area_problem(area)
        if problem:
            raise ConflictError(problem)
        found = await self.one(token_id, now)
        if found.kind != "screen":
            raise ConflictError(f"{token_id} is a {found.kind}'s credential, not a screen's")
        if found.state != "active":
            raise ConflictError(f"screen {found.name!r} is {found.state}; pair it again")
        if found.area == area:
            return found
        moved = {"area": area, "moved_at": now.isoformat(), "moved_by": by}
        await self._redis.hset(self._keys.token(token_id), mapping=cast(Mapping[Any, Any], moved))
        # after the write (a daemon that misses it finds the area on its next beat)
        await self._redis.publish(notify_channel(self._keys), moved_message(token_id))
        logger.info("screen %s moved from %s to %s by %s", token_id, found.area, area, by)
        return await self.one(token_id, now)

    async def hello(self, token_id: str, facts: Mapping[str, str], now: dt.datetime) -> None:
        """What a screen says about itself as its page starts (size, page version,
        browser); written on its token record."""
        await describe(self._redis, self._keys, token_id, {**facts, "hello_at": now.isoformat()})

    async def areas(self, screens: list[Credential]) -> list[str]:
        """The floor's areas: those of the device registry and those `screens` show."""
        devices = sorted(cast(set[str], await self._redis.smembers(self._keys.devices)))
        async with self._redis.pipeline(transaction=False) as pipe:
            for device in devices:
                pipe.hget(self._keys.device(device), "area")
            found = cast(list[str | None], await pipe.execute())
        return sorted({a for a in found if a} | {s.area for s in screens if s.area})
