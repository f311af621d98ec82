"""The websocket endpoints of the live push: `/ws/signage` and `/ws/crew` (docs/push.md).

The handshake: the connection is accepted and its query string checked
(`bonusd.push.input`), then the first text frame carries the token
(`{"token": "bd_…", "resume": {"epoch": E, "seq": N}}`; a signage page may put
`?token=` on the URL instead). A signed-in staff page sends no token: the handshake's
session cookie authenticates it, when the handshake's `Origin` is this host's (the frame
still comes first, `{}` or `{"resume": …}`). A refused token closes with 4401, a wrong
role, site or area with 4403, a query or frame that is not the protocol with 4400, no
first frame in time with 4408. Then the connection's sender drains its subscriber's queue
(`bonusd.push.hub`) while its reader watches for the client leaving, or sending what it
should not, and a timer on the daemon's clock waits for the token to expire (4401); a
revoked token's subscribers are kicked by the hub (4401), and so are a staff session's
once it has ended for inactivity (the hub's next look at the held tokens).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from bonusd.access.auth import AuthError, Principal, Role, authorize
from bonusd.access.sessions import COOKIE, same_origin
from bonusd.api.context import ApiContext, context_of
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.push.hub import PushHub, PushUnavailable
from bonusd.push.input import (
    CREW_PARAMS,
    SIGNAGE_PARAMS,
    Query,
    Refused,
    check_ping,
    json_object,
    parse_hello,
    parse_query,
)
from bonusd.push.stream import EXPIRED, Subscriber

logger = logging.getLogger(__name__)

CLOSE_WAIT_S = 2.0  # a close frame that cannot be written in this long is not waited for
TRANSPORT = "bonusd.transport"
SIGNAGE_ROLES = frozenset({Role.SIGNAGE, Role.ADMIN})
CREW_ROLES = frozenset({Role.CREW, Role.DESK, Role.ADMIN})


def stream_area(principal: Principal, query: Query, site: str, *, signage: bool) -> str | None:
    """The area of the signage stream the principal may watch (None: the crew stream);
    `AuthError(403)` or `Refused(4400)` otherwise."""
    authorize(principal, SIGNAGE_ROLES if signage else CREW_ROLES)
    if query.site and query.site != site:
        raise AuthError(403, f"this daemon serves site {site}, not {query.site}")
    if not signage:
        return None
    asked = query.area
    if principal.area:
        if asked and asked != principal.area:
            raise AuthError(403, f"this screen's token is for area {principal.area}, not {asked}")
        return principal.area
    if not asked:
        raise Refused(4400, "say which area to show: ?area=main")
    return asked


async def _close(ws: WebSocket, code: int, reason: str) -> None:
    """Close with `code`; a connection too clogged to take the close frame is dropped."""
    reason = reason.encode()[:120].decode(errors="ignore")
    try:
        await asyncio.wait_for(ws.close(code, reason), CLOSE_WAIT_S)
    except TimeoutError:
        _abort(ws)
    except (RuntimeError, WebSocketDisconnect, OSError):
        pass  # closed already


def _abort(ws: WebSocket) -> None:
    """Drop the TCP connection of a peer that stopped reading: its buffers are full, so
    neither a close frame nor a graceful close would ever get through."""
    transport = ws.scope.get(TRANSPORT)
    if isinstance(transport, asyncio.Transport):
        transport.abort()


class KeepTransport:
    """ASGI middleware: puts each websocket's transport in its scope (`_abort` needs it).
    Best effort: uvicorn's ASGI `send` is a method of its protocol, which holds the
    transport; under another server nothing is kept and a stuck peer is only left."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            scope[TRANSPORT] = getattr(getattr(send, "__self__", None), "transport", None)
        await self.app(scope, receive, send)


class Connection:
    """One accepted websocket from its first frame to its close."""

    def __init__(
        self,
        ws: WebSocket,
        ctx: ApiContext,
        hub: PushHub,
        gate: asyncio.Semaphore,
        *,
        signage: bool,
    ) -> None:
        self.ws, self.ctx, self.hub, self.signage = ws, ctx, hub, signage
        self.gate = gate

    async def run(self, handshake_s: float) -> None:
        await self.ws.accept()
        try:
            allowed = SIGNAGE_PARAMS if self.signage else CREW_PARAMS
            query = parse_query(self.ws.scope.get("query_string", b""), allowed)
            hello = query.hello
            session = self._session()
            if hello is None:
                try:
                    message = await asyncio.wait_for(self.ws.receive(), handshake_s)
                except TimeoutError:
                    raise Refused(4408, f"no token frame within {handshake_s:g} s") from None
                if message["type"] == "websocket.disconnect":
                    return
                hello = parse_hello(json_object(message), signed_in=bool(session))
            async with self.gate:  # a wall of screens reconnecting at once queues here
                client = self.ws.client.host if self.ws.client else ""  # failures counted
                now = self.ctx.clock.now()
                token = hello.token or session
                principal = await self.ctx.tokens.check(token, now, client=client)
                area = stream_area(principal, query, self.ctx.site, signage=self.signage)
                sub = await self.hub.subscribe(area, hello.resume, holder=principal)
        except AuthError as exc:
            await _close(self.ws, 4401 if exc.status == 401 else 4403, str(exc))
            return
        except Refused as exc:
            self._refused(exc)
            await _close(self.ws, exc.code, exc.reason)
            return
        except (PushUnavailable, *REDIS_ERRORS) as exc:
            await _close(self.ws, 1013, f"try again shortly: {exc}")
            return
        except WebSocketDisconnect:
            return
        try:
            await self._pump(sub, principal)
        finally:
            self.hub.unsubscribe(sub)

    def _session(self) -> str:
        """The staff session cookie of the handshake, if it came from this host's pages
        (a cross-site page's socket gets no session: SameSite aside, its Origin says so)."""
        cookie = self.ws.cookies.get(COOKIE, "")
        host = self.ws.headers.get("host", "")
        return cookie if cookie and same_origin(self.ws.headers, host) else ""

    def _refused(self, exc: Refused) -> None:
        """One short DEBUG line per refused connection (the reason never quotes input)."""
        client = self.ws.client.host if self.ws.client else "?"
        logger.debug("push: closed %s from %s (%d): %s", self.ws.url.path, client, exc.code, exc)

    async def _pump(self, sub: Subscriber, principal: Principal) -> None:
        sender = asyncio.ensure_future(self._send(sub))
        reader = asyncio.ensure_future(self._read())
        kicked = asyncio.ensure_future(sub.kicked.wait())
        expiry = asyncio.ensure_future(self._expire(sub, principal))
        tasks = (sender, reader, kicked, expiry)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if sub.kicked.is_set():  # revoked, expired, too slow, or the daemon stopping
            await _close(self.ws, sub.code, sub.reason)
            return
        if reader.done() and not reader.cancelled() and isinstance(reader.exception(), Refused):
            refused = reader.exception()
            assert isinstance(refused, Refused)
            self._refused(refused)
            await _close(self.ws, refused.code, refused.reason)

    async def _expire(self, sub: Subscriber, principal: Principal) -> None:
        """This socket's expiry timer: sleeps on the daemon's clock (simulated, paused or
        jumped as that clock is) until the token expires, then kicks the subscriber."""
        await self.ctx.clock.sleep_until(principal.expires)
        expires = principal.expires.isoformat()
        logger.debug("push: token %s expired at %s; closing", principal.token_id, expires)
        sub.kick(EXPIRED, f"token {principal.token_id} expired at {expires}")

    async def _send(self, sub: Subscriber) -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            while True:
                text = await sub.next_text()
                if sub.kicked.is_set():  # nothing more once revoked or expired
                    return
                await self.ws.send_text(text)

    async def _read(self) -> None:
        """Until the client leaves. After the first frame a client only ever sends
        `{"type": "ping"}`; anything else closes the connection (4400)."""
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            check_ping(json_object(message))


# `/ws/signage` and `/ws/crew`: included by `create_app` when the daemon has a push hub
router = APIRouter()


async def _serve(ws: WebSocket, *, signage: bool) -> None:
    ctx = context_of(ws)
    if ctx.push is None:  # not included without a hub; refused all the same
        await _close(ws, 1013, "this daemon has no live push")
        return
    await Connection(ws, ctx, ctx.push, ctx.handshakes, signage=signage).run(ctx.push.handshake_s)


@router.websocket("/ws/signage")
async def signage(ws: WebSocket) -> None:
    await _serve(ws, signage=True)


@router.websocket("/ws/crew")
async def crew(ws: WebSocket) -> None:
    await _serve(ws, signage=False)
