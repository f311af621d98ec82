"""What the staff sign-in tests share (API and pages): adding a staff account to a running
service, signing in over HTTP (the session is only in the cookie), the headers a
signed-in page's request carries, and signing in through a page's form."""

from __future__ import annotations

import httpx
from playwright.async_api import Page, expect

from bonusd.access.sessions import COOKIE
from bonusd.access.staff import StaffMember
from bonusd.api.context import ApiContext
from bonusd.service.root import Service

PIN = "246810"


def context(service: Service) -> ApiContext:
    ctx: ApiContext = service.app.state.ctx
    return ctx


async def add_staff(
    service: Service, number: str, name: str, role: str, pin: str = PIN
) -> StaffMember:
    """A staff account, as `bonusd staff add` or the desk's admin makes one."""
    return await context(service).sessions.staff.add(
        number=number, name=name, role=role, pin=pin, now=service.clock.now()
    )


def origin_of(http: httpx.AsyncClient) -> str:
    return str(http.base_url).rstrip("/")


def session_cookie(response: httpx.Response) -> str:
    """The session token the sign-in set in its cookie ("" when none was set)."""
    for header in response.headers.get_list("set-cookie"):
        name, _, rest = header.partition("=")
        if name.strip() == COOKIE:
            return rest.split(";", 1)[0]
    return ""


async def sign_in(http: httpx.AsyncClient, number: str, pin: str = PIN) -> str:
    """Sign in as a page of the daemon does; the session cookie's value."""
    r = await http.post(
        "/staff/sign-in", json={"staff": number, "pin": pin}, headers={"Origin": origin_of(http)}
    )
    assert r.status_code == 200, r.text
    cookie = session_cookie(r)
    assert cookie
    http.cookies.clear()  # each test says which session a request carries
    return cookie


def as_page(http: httpx.AsyncClient, cookie: str) -> dict[str, str]:
    """The headers of a signed-in page's request: its cookie and its own origin."""
    return {"Cookie": f"{COOKIE}={cookie}", "Origin": origin_of(http)}


async def sign_in_page(page: Page, number: str, pin: str = PIN, *, admitted: bool = True) -> None:
    """Sign in through the open page's form as a person does: the staff number (a badge
    reader types it and Enter), then the PIN on the pad, then Sign in; `admitted`: wait
    for the page to open."""
    form = page.locator("#login")
    await expect(form).to_be_visible()
    await form.locator("input[name=staff]").fill(number)
    await form.locator("input[name=staff]").press("Enter")
    for digit in pin:
        await form.locator(f"button[data-digit='{digit}']").click()
    await form.locator("button[type=submit]").click()
    if admitted:
        await expect(form).to_be_hidden()
