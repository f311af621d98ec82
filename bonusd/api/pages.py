"""The pages of the floor: `/signage`, `/crew` and `/desk`, their static files, and the two
read-only desk routes the desk page needs beyond the rest of the API.

The pages are plain HTML, CSS and JavaScript in `displays/` (no build step, nothing from
another host). They hold no data: every datum reaches them through the API or the live
streams (`docs/push.md`), with the bearer token the page was given. So the page routes
and their static files are public on purpose, plain Starlette routes outside the API's
route table (`tests/api/test_roles.py` checks that table), and each answer carries the secure
headers below: a Content-Security-Policy that allows this origin only and no framing,
`nosniff`, and no referrer (a signage screen's URL may carry its `?token=`).

`displays/` is found next to the package in a checkout or an editable install, or under
`{sys.prefix}/share/bonusd/displays` when bonusd was installed from a wheel
(`[tool.setuptools.data-files]` in pyproject.toml).
"""

from __future__ import annotations

import html
import json
import logging
import re
import sys
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, HTTPException, Query
from fastapi import Path as PathParam
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from bonusd.access.auth import Role
from bonusd.api.httpguard import PAGE_CSP, PAGE_HEADERS
from bonusd.audit.chain import verify_chain
from bonusd.clocks.clock import Clock, ManualClock
from bonusd.errors import NotFoundError

if TYPE_CHECKING:
    from bonusd.api.context import ApiContext

logger = logging.getLogger(__name__)
PAGES = {"/signage": "signage.html", "/crew": "crew.html", "/desk": "desk.html"}
ASSET = re.compile(r"^[a-z][a-z0-9-]{0,60}\.(?:js|css|svg)$")
PROMOTION_ID = PathParam(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")
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


def displays_candidates() -> tuple[Path, ...]:
    """Where `displays/` may be, in the order looked at."""
    return (
        Path(__file__).resolve().parents[2] / "displays",
        Path(sys.prefix) / "share" / "bonusd" / "displays",
    )


def find_displays(candidates: Iterable[Path] | None = None) -> Path:
    """The folder holding the pages; `FileNotFoundError` naming where it looked."""
    looked = tuple(candidates if candidates is not None else displays_candidates())
    for folder in looked:
        if all((folder / page).is_file() for page in PAGES.values()):
            return folder
    raise FileNotFoundError(
        "the display pages (signage.html, crew.html, desk.html) are in none of: "
        + ", ".join(str(p) for p in looked)
    )


def clock_rate(clock: Clock) -> float:
    """Daemon seconds per real second now: 1, a simulated speed, 0 for a paused shared
    clock or a test clock that moves only when told. The pages run their countdowns at
    this rate between messages (and notice a later change of speed by themselves)."""
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


def add_page_routes(app: FastAPI, ctx: ApiContext, guard: Any) -> None:
    """Serve the three pages and their files; add the desk's audit and session lists.
    Without `displays/` the daemon still runs (ingest and draws matter more than pages):
    the page routes answer 503 naming where the files were looked for."""
    try:
        folder = find_displays()
    except FileNotFoundError as exc:
        logger.error("%s; the pages answer 503", exc)
        folder, missing = Path("/nonexistent"), str(exc)
    else:
        missing = ""
    zone = str(ctx.calendar.zone)

    def page(name: str) -> Any:
        async def endpoint(request: Request) -> Response:
            for param in ("site", "area"):
                value = request.query_params.get(param)
                if value is not None and not SITE_OR_AREA.match(value):
                    return PlainTextResponse(
                        f"{param} must match {SITE_OR_AREA.pattern}", 400, headers=SECURE_HEADERS
                    )
            if missing:
                return PlainTextResponse(missing, 503, headers=SECURE_HEADERS)
            path = folder / name
            text = page_html(
                path.read_text("utf-8"), site=ctx.site, timezone=zone, rate=clock_rate(ctx.clock)
            )
            return HTMLResponse(text, headers=SECURE_HEADERS)

        return endpoint

    for path, name in PAGES.items():
        app.add_route(path, page(name), methods=["GET"], include_in_schema=False)

    async def asset(request: Request) -> Response:
        name = str(request.path_params["name"])
        if not ASSET.match(name):
            return PlainTextResponse("not a display file", 404, headers=SECURE_HEADERS)
        return _file(folder, name)

    app.add_route("/displays/{name}", asset, methods=["GET"], include_in_schema=False)
    _add_desk_reads(app, ctx, guard)


def _add_desk_reads(app: FastAPI, ctx: ApiContext, guard: Any) -> None:
    tags: list[str | Enum] = ["desk"]

    @app.get("/audit", tags=tags, dependencies=[guard(ctx, Role.DESK)])
    async def audit(
        count: Annotated[int, Query(ge=1, le=5000)] = 200,
        before: Annotated[int | None, Query(ge=1, description="records with seq below")] = None,
        kind: Annotated[str | None, Query(max_length=40)] = None,
        q: Annotated[str | None, Query(max_length=120, description="text to look for")] = None,
    ) -> dict[str, Any]:
        """The site's hash-chained audit trail, newest first, with the chain's check:
        filter by kind and by any text of the record (a card, a draw, an actor)."""
        records = await ctx.audit.records()
        check = verify_chain(records)
        needle = (q or "").strip().lower()
        out: list[dict[str, Any]] = []
        for rec in reversed(records):
            if before is not None and rec.seq >= before:
                continue
            if kind and rec.kind != kind:
                continue
            row = {"seq": rec.seq, "time": rec.time, "actor": rec.actor, "kind": rec.kind}
            row |= {"payload": rec.payload, "hash": rec.hash}
            if needle and needle not in json.dumps(row, ensure_ascii=False).lower():
                continue
            out.append(row)
            if len(out) >= count:
                break
        return {"total": len(records), "chain": str(check), "ok": check.ok, "records": out}

    @app.get(
        "/promotions/{promotion}/jackpots",
        tags=tags,
        dependencies=[guard(ctx, Role.CREW, Role.DESK)],
    )
    async def jackpot_sessions(
        promotion: Annotated[str, PROMOTION_ID],
    ) -> list[dict[str, Any]]:
        """The promotion's RAPS jackpot sessions: id, date, hours and areas."""
        try:
            p = ctx.promotions.promotion(promotion)
        except NotFoundError as exc:
            raise HTTPException(404, str(exc)) from exc
        return [
            {
                "id": s.id,
                "name": s.name,
                "date": s.date.isoformat(),
                "start": s.start.strftime("%H:%M"),
                "end": s.end.strftime("%H:%M"),
                "areas": list(s.areas),
            }
            for s in p.jackpot_sessions
        ]
