"""HTTP routes of staff sign-in (docs/security.md, "Staff sign-in"), and the admin's
management of staff accounts.

`POST /staff/sign-in` takes a staff number and PIN and answers with the session in an
HttpOnly, SameSite=Strict cookie (`Secure` when the request came over TLS, directly or
through a trusted proxy's `X-Forwarded-Proto`), never in the body. `POST /staff/sign-out`
ends the session the cookie holds and clears the cookie. Both are public (a page without a
session calls them) and take requests from this host's pages only (`Origin`). The signed-in
page asks `GET /staff/me` who it is, and reports activity with
`POST /staff/session/keepalive` (a GET never changes state). An admin lists, adds,
disables, enables and resets the PIN of staff accounts; disabling and a PIN reset end
every session of that person at once, open websockets included.

Thin: the work is `bonusd.access.sessions.StaffSessions` and `bonusd.access.staff`.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from bonusd.access.auth import AuthError, Principal, Role
from bonusd.access.sessions import COOKIE, same_origin
from bonusd.access.staff import (
    NAME_MAX,
    STAFF_NUMBER_PATTERN,
    STAFF_PIN_PATTERN,
    StaffError,
    StaffMember,
)
from bonusd.api.context import Admin, ApiContext, Ctx, require
from bonusd.api.errors import GUARDED_ERRORS, ErrorOut, invalid
from bonusd.audit.chain import Kind

logger = logging.getLogger(__name__)
router = APIRouter(tags=["staff"])
Staff = Annotated[Principal, require(Role.CREW, Role.DESK)]  # a signed-in page (or a token)
StaffNumber = Annotated[
    str,
    Field(
        pattern=STAFF_NUMBER_PATTERN,
        description="The staff number: 1 to 16 letters or digits, as a badge reader types it",
        examples=["1042"],
    ),
]
NumberPath = Annotated[str, PathParam(pattern=STAFF_NUMBER_PATTERN)]
# checked by the store, whose refusal never repeats it (a pattern's 422 would echo it)
StaffPin = Annotated[
    str,
    Field(max_length=16, description=f"{STAFF_PIN_PATTERN}: 6 to 8 digits, never stored or shown"),
]
PUBLIC_ERRORS: dict[int | str, dict[str, Any]] = {
    **GUARDED_ERRORS,
    401: {"model": ErrorOut, "description": "Staff number or PIN not recognised"},
    403: {"model": ErrorOut, "description": "Not from this site's pages, or account disabled"},
    423: {
        "model": ErrorOut,
        "description": "Locked after too many wrong PINs (the staff number or this device); "
        "`Retry-After` says for how long",
    },
}


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SignInIn(_In):
    staff: StaffNumber
    pin: Annotated[str, Field(min_length=1, max_length=16, description="The staff PIN")]


class StaffSessionOut(BaseModel):
    """Who a page is signed in as (the session itself is only in the cookie)."""

    staff: str = Field(description="The staff number; empty for a machine's bearer token")
    name: str = Field(description='As the audit trail names them: "Name (staff 1042)"')
    role: Role
    expires: dt.datetime = Field(description="The end of the shift: sign in again then")
    idle_s: int = Field(description="A session ends after this long without activity")


class SignedOutOut(BaseModel):
    signed_out: bool = Field(description="Whether a session was open (and is now ended)")


class KeptAliveOut(BaseModel):
    idle_until: dt.datetime = Field(description="Ends then unless kept alive again")


class StaffIn(_In):
    staff: StaffNumber
    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
    role: Literal["crew", "desk", "admin"]
    pin: StaffPin


class PinResetIn(_In):
    pin: StaffPin


class StaffOut(BaseModel):
    staff: str
    name: str
    role: Role
    disabled: bool
    created: str
    changed: str


class StaffListOut(BaseModel):
    staff: list[StaffOut]


class StaffChangeOut(BaseModel):
    member: StaffOut
    sessions_ended: int = Field(description="Open sessions of this person ended by the change")


def _out(member: StaffMember) -> StaffOut:
    return StaffOut(
        staff=member.number,
        name=member.name,
        role=member.role,
        disabled=member.disabled,
        created=member.created,
        changed=member.changed,
    )


def _from_this_site(request: Request) -> None:
    if not same_origin(request.headers, request.headers.get("host", "")):
        raise AuthError(403, "sign in from this site's own pages (the request's Origin)")


def _refused(exc: StaffError) -> HTTPException:
    return invalid(str(exc))


def _who(principal: Principal) -> str:
    return f"staff {principal.staff}" if principal.staff else f"token {principal.token_id}"


async def _recorded(
    ctx: ApiContext, principal: Principal, member: StaffMember, change: str
) -> None:
    """A staff-account change into the hash-chained audit trail: whose account, what, who
    did it (the admin, by name and staff number or token); never the PIN."""
    await ctx.audit.append(
        at=ctx.clock.now(),
        actor=principal.name or _who(principal),  # a staff session's: "Name (staff 9001)"
        kind=Kind.STAFF,
        payload={"staff": member.number, "change": change, "role": str(member.role)},
    )


@router.post("/staff/sign-in", responses=PUBLIC_ERRORS)
async def sign_in(
    ctx: Ctx, body: SignInIn, request: Request, response: Response
) -> StaffSessionOut:
    """Sign in with a staff number and PIN: the session comes back as an HttpOnly cookie.
    401 with the tries left for a wrong number or PIN; 423 (with Retry-After) once the
    number, or this device, is locked (five wrong PINs lock a number for 15 minutes)."""
    _from_this_site(request)
    client = request.client.host if request.client else ""
    now = ctx.clock.now()
    member, issued = await ctx.sessions.sign_in(body.staff, body.pin, now, client=client)
    await _end_previous(ctx, request, now)
    policy = ctx.sessions.policy
    secure = request.url.scheme == "https"  # TLS here, or at a trusted proxy (uvicorn)
    response.set_cookie(
        COOKIE,
        issued.token,
        max_age=policy.shift_s,
        path="/",
        httponly=True,  # no page script ever reads it
        samesite="strict",
        secure=secure,
    )
    principal = issued.principal
    return StaffSessionOut(
        staff=member.number,
        name=principal.name,
        role=principal.role,
        expires=principal.expires,
        idle_s=policy.idle_s,
    )


async def _end_previous(ctx: Ctx, request: Request, now: dt.datetime) -> None:
    """A handheld passed on: the session the browser still held ends with the new one."""
    old = request.cookies.get(COOKIE, "")
    if not old:
        return
    client = request.client.host if request.client else ""
    try:
        principal = await ctx.tokens.check(old, now, client=client)
    except AuthError:
        return  # ended already
    if principal.staff:
        await ctx.sessions.sign_out(principal, now)


@router.post("/staff/sign-out", responses=PUBLIC_ERRORS)
async def sign_out(ctx: Ctx, request: Request, response: Response) -> SignedOutOut:
    """End the session this browser holds (its websockets close at once) and clear the
    cookie; a page whose session was refused calls it to drop the dead cookie."""
    _from_this_site(request)
    ended = False
    token = request.cookies.get(COOKIE, "")
    if token:
        now = ctx.clock.now()
        client = request.client.host if request.client else ""
        try:
            principal = await ctx.tokens.check(token, now, client=client)
        except AuthError as exc:
            if exc.status == 429:
                raise
        else:
            if principal.staff:
                await ctx.sessions.sign_out(principal, now)
                ended = True
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return SignedOutOut(signed_out=ended)


@router.get("/staff/me")
async def me(ctx: Ctx, principal: Staff) -> StaffSessionOut:
    """Who this page is signed in as: name, staff number, role, the end of the shift."""
    return StaffSessionOut(
        staff=principal.staff,
        name=principal.name,
        role=principal.role,
        expires=principal.expires,
        idle_s=ctx.sessions.policy.idle_s,
    )


@router.post("/staff/session/keepalive")
async def keep_alive(ctx: Ctx, principal: Staff) -> KeptAliveOut:
    """The person at the page is working (a touch, a key): the session's end for
    inactivity moves on. The page calls it at most once a minute."""
    if not principal.staff:
        raise HTTPException(409, "only a staff sign-in session is kept alive; this is a token")
    until = await ctx.sessions.keep_alive(principal, ctx.clock.now())
    return KeptAliveOut(idle_until=until)


# -- the admin's staff accounts ---------------------------------------------------------------


@router.get("/staff")
async def list_staff(ctx: Ctx, _: Admin) -> StaffListOut:
    """Every staff account (never a PIN or its hash)."""
    return StaffListOut(staff=[_out(m) for m in await ctx.sessions.staff.list()])


@router.post("/staff", status_code=201)
async def add_staff(ctx: Ctx, body: StaffIn, principal: Admin) -> StaffOut:
    """A new staff account; 409 if the number is taken, 422 for a name with control or
    text-direction characters."""
    try:
        member = await ctx.sessions.staff.add(
            number=body.staff, name=body.name, role=body.role, pin=body.pin, now=ctx.clock.now()
        )
    except StaffError as exc:
        raise _refused(exc) from exc
    logger.info("staff %s added (%s) by %s", member.number, member.role, _who(principal))
    await _recorded(ctx, principal, member, "added")
    return _out(member)


async def _ended(ctx: Ctx, member: StaffMember, reason: str) -> StaffChangeOut:
    ended = await ctx.sessions.end_all(member.number, ctx.clock.now(), reason=reason)
    return StaffChangeOut(member=_out(member), sessions_ended=ended)


@router.post("/staff/{number}/disable")
async def disable_staff(ctx: Ctx, number: NumberPath, principal: Admin) -> StaffChangeOut:
    """Disable an account: it cannot sign in, and every open session of it ends at once
    (its pages are signed out within a second)."""
    if number == principal.staff:
        raise HTTPException(409, "you cannot disable your own account; ask another admin")
    member = await ctx.sessions.staff.set_disabled(number, True, ctx.clock.now())
    logger.info("staff %s disabled by %s", number, _who(principal))
    await _recorded(ctx, principal, member, "disabled")
    return await _ended(ctx, member, "account disabled")


@router.post("/staff/{number}/enable")
async def enable_staff(ctx: Ctx, number: NumberPath, principal: Admin) -> StaffChangeOut:
    """Enable a disabled account again."""
    member = await ctx.sessions.staff.set_disabled(number, False, ctx.clock.now())
    logger.info("staff %s enabled by %s", number, _who(principal))
    await _recorded(ctx, principal, member, "enabled")
    return StaffChangeOut(member=_out(member), sessions_ended=0)


@router.post("/staff/{number}/reset-pin")
async def reset_pin(
    ctx: Ctx, number: NumberPath, body: PinResetIn, principal: Admin
) -> StaffChangeOut:
    """A new PIN (tell it to the person): a lock after wrong PINs lifts, and every open
    session of the account ends."""
    try:
        member, ended = await ctx.sessions.reset_pin(number, body.pin, ctx.clock.now())
    except StaffError as exc:
        raise _refused(exc) from exc
    logger.info("staff %s: PIN reset by %s", number, _who(principal))
    await _recorded(ctx, principal, member, "pin reset")
    return StaffChangeOut(member=_out(member), sessions_ended=ended)
