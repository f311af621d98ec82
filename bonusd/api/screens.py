"""HTTP routes of paired floor screens and of every machine credential (docs/security.md,
"Paired screens and machine credentials").

A new screen (no token) asks for a pairing and polls with the secret it was given, both
by POST with the secret in the body, never in a URL: `POST /screens/pairing`,
`POST /screens/pairing/claim` (202 while waiting, 200 with its credential, once). The
desk (or admin) approves a code (`POST /screens/pair`), lists the screens
(`GET /screens`), moves one to another area or revokes it; it lists every machine
credential with its last use (`GET /credentials`) and revokes any of them. A paired
screen's page tells what it runs on (`POST /screens/hello`). Thin: the work is
`bonusd.access.pairing` and `bonusd.access.machines`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request, Response

from bonusd import __version__
from bonusd.access.auth import Principal, Role
from bonusd.access.machines import Machines
from bonusd.access.pairing import PairingError, PairingStore, shown_code
from bonusd.api.context import ApiContext, Ctx, Desk, require
from bonusd.api.errors import invalid
from bonusd.api.screenmodels import (
    CredentialOut,
    CredentialsOut,
    HelloIn,
    MoveIn,
    PairIn,
    PairingIn,
    PairingOut,
    PairOut,
    ScreenClaimIn,
    ScreenClaimOut,
    ScreenRef,
    ScreensOut,
    agent_of,
    credential_out,
)
from bonusd.errors import NotFoundError

router = APIRouter(tags=["screens"])
Screen = Annotated[Principal, require(Role.SIGNAGE)]
TokenIdPath = Annotated[str, Path(pattern=r"^[0-9a-f]{12}$", description="The credential's id")]


def _pairing(ctx: ApiContext) -> PairingStore:
    return PairingStore(ctx.store.redis, ctx.store.keys, ctx.tokens)


def _machines(ctx: ApiContext) -> Machines:
    return Machines(ctx.store.redis, ctx.store.keys, ctx.tokens)


def _client(request: Request) -> str:
    return request.client.host if request.client else ""


def who(principal: Principal) -> str:
    """Who did it, as the records say it: a staff member's name and number, or the
    machine token's name and id."""
    if principal.staff or not principal.name:
        return principal.name or f"token {principal.token_id}"
    return f"{principal.name} (token {principal.token_id})"


def _refused(exc: PairingError) -> HTTPException:
    if exc.status == 422:
        return invalid(str(exc))
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else None
    return HTTPException(exc.status, str(exc), headers=headers)


@router.post("/screens/pairing", status_code=201)
async def start_pairing(ctx: Ctx, body: PairingIn, request: Request) -> PairingOut:
    """A new screen (no token) asks to be paired: the code to show, and the secret to keep
    in its own storage and poll with. 429 (Retry-After) past the starts of one address."""
    now = ctx.clock.now()
    try:
        started = await _pairing(ctx).start(
            width=body.width, height=body.height, client=_client(request), now=now
        )
    except PairingError as exc:
        raise _refused(exc) from exc
    left = int((started.expires - now).total_seconds())
    return PairingOut(code=shown_code(started.code), expires_in_s=left, secret=started.secret)


@router.post(
    "/screens/pairing/claim",
    responses={202: {"model": ScreenClaimOut, "description": "Not approved yet: poll again"}},
)
async def claim_pairing(
    ctx: Ctx, body: ScreenClaimIn, request: Request, response: Response
) -> ScreenClaimOut:
    """The screen polls with its secret: 202 while its code waits for approval, then 200
    with its credential (given this once; keep it). 401: unknown or collected, 410: the
    code expired (start a new pairing either way); 429 past the wrong secrets allowed."""
    now = ctx.clock.now()
    try:
        claimed = await _pairing(ctx).claim(body.secret, client=_client(request), now=now)
    except PairingError as exc:
        raise _refused(exc) from exc
    left = max(int((claimed.expires - now).total_seconds()), 0)
    code = shown_code(claimed.code)
    if claimed.credential is None:
        response.status_code = 202
        return ScreenClaimOut(state="waiting", code=code, expires_in_s=left)
    principal = claimed.credential.principal
    screen = ScreenRef(id=principal.token_id, name=principal.name, area=principal.area)
    token = claimed.credential.token
    return ScreenClaimOut(state="paired", code=code, expires_in_s=left, token=token, screen=screen)


@router.post("/screens/pair")
async def pair(ctx: Ctx, body: PairIn, request: Request, principal: Desk) -> PairOut:
    """Approve the screen showing `code` for an area, under a name: it collects its own
    credential within seconds. 404 for a code no screen shows (counted: 429 after too many
    wrong codes from one address or token)."""
    now = ctx.clock.now()
    try:
        approved = await _pairing(ctx).approve(
            body.code,
            area=body.area,
            name=body.name,
            by=who(principal),
            by_token=principal.token_id,
            client=_client(request),
            now=now,
        )
    except PairingError as exc:
        raise _refused(exc) from exc
    left = int((approved.expires - now).total_seconds())
    return PairOut(
        code=shown_code(approved.code), area=approved.area, name=approved.name, expires_in_s=left
    )


@router.post("/screens/hello")
async def hello(ctx: Ctx, body: HelloIn, request: Request, principal: Screen) -> ScreenRef:
    """A paired screen's page starting: what it runs on (its size, bonusd's version, its
    browser), for the desk's list; the answer says which screen it is."""
    if principal.role is Role.SIGNAGE:
        facts = {
            "width": str(body.width),
            "height": str(body.height),
            "version": __version__,
            "agent": agent_of(request.headers.get("user-agent", ""))[:80],
        }
        await _machines(ctx).hello(principal.token_id, facts, ctx.clock.now())
    return ScreenRef(id=principal.token_id, name=principal.name, area=principal.area)


@router.get("/screens", dependencies=[require(Role.DESK)])
async def screens(ctx: Ctx) -> ScreensOut:
    """The floor screens: name, area, size, version, last seen and connection state
    (revoked and expired ones too), the floor's areas, and how many wait to be paired."""
    machines = _machines(ctx)
    now = ctx.clock.now()
    found = await machines.all(now, kind="screen")
    return ScreensOut(
        screens=[credential_out(c) for c in found],
        areas=await machines.areas(found),
        waiting=await _pairing(ctx).waiting(now),
    )


async def _screen(machines: Machines, screen: str, ctx: ApiContext) -> None:
    found = await machines.one(screen, ctx.clock.now())
    if found.kind != "screen":
        raise NotFoundError(f"{screen} is a {found.kind}'s credential, not a screen's")


@router.post("/screens/{screen}/move")
async def move_screen(
    ctx: Ctx, screen: TokenIdPath, body: MoveIn, principal: Desk
) -> CredentialOut:
    """Show another area on this screen from now on: its stream switches at once (it keeps
    its credential; docs/security.md)."""
    machines = _machines(ctx)
    moved = await machines.move(screen, body.area, ctx.clock.now(), by=who(principal))
    return credential_out(moved)


@router.post("/screens/{screen}/revoke")
async def revoke_screen(ctx: Ctx, screen: TokenIdPath, principal: Desk) -> CredentialOut:
    """Revoke this screen's credential: its socket closes at once and the screen shows a
    new pairing code."""
    machines = _machines(ctx)
    await _screen(machines, screen, ctx)
    return credential_out(await machines.revoke(screen, ctx.clock.now(), by=who(principal)))


@router.get("/credentials", dependencies=[require(Role.DESK)])
async def credentials(ctx: Ctx) -> CredentialsOut:
    """Every machine credential (screens, kiosks, app servers, scripts) with its last use
    and state; staff sessions are on the staff list, not here."""
    found = await _machines(ctx).all(ctx.clock.now())
    return CredentialsOut(credentials=[credential_out(c) for c in found])


@router.post("/credentials/{credential}/revoke")
async def revoke_credential(ctx: Ctx, credential: TokenIdPath, principal: Desk) -> CredentialOut:
    """Revoke a machine credential at once; the machine's open sockets close (4401)."""
    machines = _machines(ctx)
    return credential_out(await machines.revoke(credential, ctx.clock.now(), by=who(principal)))
