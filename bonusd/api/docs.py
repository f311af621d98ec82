"""The API's documentation page, `/docs`: Swagger UI served by the daemon itself.

Its files are the pinned copy of Swagger UI 5 that the `fastapi-offline` package ships
(pyproject.toml pins the version), served from `/docs/static/`, so the page works on a
floor network without internet and loads nothing from another host. The page's one
inline start-up script (FastAPI's `get_swagger_ui_html`) is admitted by its hash in the
page's own Content-Security-Policy; nothing else inline runs. Public on purpose, like the
schema at `/openapi.json`: every call made from the page needs a token ("Authorize").
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

STATIC = "/docs/static"
FILES = {  # name: media type; nothing else is served from the folder
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def swagger_folder() -> Path:
    """Where the pinned Swagger UI files are."""
    return Path(fastapi_offline.__file__).parent / "static"


def docs_page(app: FastAPI) -> tuple[str, str]:
    """The /docs page and its Content-Security-Policy."""
    body = get_swagger_ui_html(
        openapi_url=app.openapi_url or "/openapi.json",
        title=f"{app.title} API",
        swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{STATIC}/swagger-ui.css",
        swagger_favicon_url=f"{STATIC}/favicon.png",
        oauth2_redirect_url=None,
        # no validator badge: it would be fetched from another host
        swagger_ui_parameters={"validatorUrl": None},
    ).body
    page = bytes(body).decode()
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in _INLINE_SCRIPT.findall(page)
    )
    csp = "; ".join(
        (
            "default-src 'self'",
            f"script-src 'self' {hashes}",
            "style-src 'self'",
            "img-src 'self' data:",  # Swagger UI's own icons are data: URLs
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )
    return page, csp


router = APIRouter(include_in_schema=False)  # /docs and its files


@router.get("/docs")
async def docs(request: Request) -> HTMLResponse:
    page, csp = docs_page(request.app)
    return HTMLResponse(page, headers={"Content-Security-Policy": csp})


@router.get(STATIC + "/{name}")
async def docs_file(name: str) -> FileResponse:
    if name not in FILES:
        raise HTTPException(404, f"no such documentation file: {name}")
    return FileResponse(swagger_folder() / name, media_type=FILES[name])
