"""The pages of the floor: `/signage`, `/crew`, `/desk` and the eHost kiosk's `/kiosk`, and
their static files.

The pages are plain HTML, CSS and JavaScript in `displays/` (no build step, nothing from
another host). They hold no data: every datum reaches them through the API or the live
streams (`docs/push.md`), with the bearer token the page was given. So the page routes
and their static files are public on purpose, plain Starlette routes outside the API's
route table (`tests/api/test_roles.py` checks that table), and each answer carries the secure
headers below: a Content-Security-Policy that allows this origin only and no framing,
`nosniff`, and no referrer (a signage screen's URL may carry its `?token=`).

Where `displays/` is found: bonusd/api/displayfiles.py.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from bonusd.api.context import context_of
from bonusd.api.displayfiles import PAGES
from bonusd.api.httpguard import PAGE_CSP, PAGE_HEADERS
from bonusd.clocks.clock import Clock, ManualClock

logger = logging.getLogger(__name__)
ASSET = re.compile(r"^[a-z][a-z0-9-]{0,60}\.(?:js|css|svg)$")
SITE_OR_AREA = re.compile(r"^[a-z0-9_-]{1,32}$")
MEDIA = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}

# the pages' secure headers are the ones bonusd.api.httpguard puts on every response; set here
# too, so a page answered without that middleware is no weaker (no-store: a page's URL or
# storage may hold its token; the middleware lets the data-free static files be no-cache)
CSP = PAGE_CSP
SECURE_HEADERS = {**PAGE_HEADERS, "Cache-Control": "no-store"}


def clock_rate(clock: Clock) -> float:
    """Daemon seconds per real second now: 1, a simulated speed, 0 for a paused shared
    clock or a test clock that moves only when told. The pages run at this rate only until
    the stream's first message, which carries the clock's state (docs/push.md)."""
    if isinstance(clock, ManualClock):
        return 0.0
    try:
        state = getattr(clock, "state", None)  # a shared clock (bonusd.infra.sharedclock)
    except Exception:  # not opened yet: its speed is not known
        state = None
    if state is not None and hasattr(state, "speed"):
        return 0.0 if getattr(state, "paused", False) else float(state.speed)
    return float(getattr(clock, "speed", 1.0))


def page_html(text: str, *, site: str, timezone: str, rate: float) -> str:
    """The page with the daemon's site, the floor's time zone and the clock's rate filled
    into its `<meta name="bonusd-…">` tags (so every page shows times as the floor's clocks
    read them, whatever the browser's own zone, and counts down at the daemon's pace)."""
    tags = (
        ("bonusd-site", site),
        ("bonusd-timezone", timezone),
        ("bonusd-clock-rate", f"{rate:g}"),
    )
    for name, value in tags:
        empty = f'<meta name="{name}" content="">'
        text = text.replace(empty, f'<meta name="{name}" content="{html.escape(value)}">')
    return text


def _file(folder: Path, name: str) -> Response:
    path = folder / name
    if not path.is_file():
        return PlainTextResponse(f"no such file: {name}", 404, headers=SECURE_HEADERS)
    media = MEDIA.get(path.suffix, "text/html; charset=utf-8")
    return FileResponse(path, media_type=media, headers=SECURE_HEADERS)


def _page(name: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        for param in ("site", "area"):
            value = request.query_params.get(param)
            if value is not None and not SITE_OR_AREA.match(value):
                return PlainTextResponse(
                    f"{param} must match {SITE_OR_AREA.pattern}", 400, headers=SECURE_HEADERS
                )
        ctx = context_of(request)
        if ctx.displays.missing:
            return PlainTextResponse(ctx.displays.missing, 503, headers=SECURE_HEADERS)
        text = (ctx.displays.folder / name).read_text("utf-8")
        zone, rate = str(ctx.calendar.zone), clock_rate(ctx.clock)
        page = page_html(text, site=ctx.site, timezone=zone, rate=rate)
        return HTMLResponse(page, headers=SECURE_HEADERS)

    return endpoint


async def _asset(request: Request) -> Response:
    name = str(request.path_params["name"])
    if not ASSET.match(name):
        return PlainTextResponse("not a display file", 404, headers=SECURE_HEADERS)
    return _file(context_of(request).displays.folder, name)


# the pages and their files: public Starlette routes, outside the API's schema
router = APIRouter()
for _path, _name in PAGES.items():
    router.add_route(_path, _page(_name), methods=["GET"], include_in_schema=False)
router.add_route("/displays/{name}", _asset, methods=["GET"], include_in_schema=False)
