"""What every HTTP exchange passes through: bounded request bodies and secure headers.

Two plain ASGI middlewares, installed on the whole application by `bonusd.api.app.create_app`:

- `BodyLimits`: a body larger than its route allows is refused with 413 while it streams
  in, never read whole first (a `Content-Length` over the limit is refused before any of
  it is read). The import routes stream their files (up to `MAX_IMPORT_BYTES`) to their
  handler, which reads them after the role check; every other body (up to
  `MAX_BODY_BYTES`) is read here, and JSON nested deeper than `MAX_JSON_DEPTH` is refused
  with 422 before any route parses it (Python's and msgspec's decoders recurse, and a
  deep enough document turned into a 500).
- `SecureHeaders`: every response gets `nosniff`, `Referrer-Policy: no-referrer`, no
  framing (`X-Frame-Options` and CSP `frame-ancestors 'none'`), a Content-Security-Policy
  (the one a route set, else `PAGE_CSP` for the pages and `DOCUMENT_CSP` for the rest) and
  `Cache-Control: no-store` (API answers carry member data; pages carry tokens), except
  the static files of the pages and of /docs, which hold no data (`no-cache`).
"""

from __future__ import annotations

import io
import json

import ijson
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bonusd.notices.letterprint import PRINT_SCRIPT_HASH

MAX_BODY_BYTES = 64 * 1024  # a request body of any route but the imports
MAX_IMPORT_BYTES = 50 * 1024 * 1024  # a member or device file
MAX_JSON_DEPTH = 32  # the API's own bodies nest 3 deep at most

PAGE_CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",  # CSP 3: 'self' covers ws:/wss: to this host and port
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
# API answers and the pages the server writes whole (prize letter, ticket slips): no
# script but the letter's print button (by hash), nothing from anywhere; their one inline
# stylesheet is admitted (CSS alone cannot load anything under default-src 'none')
DOCUMENT_CSP = "; ".join(
    (
        "default-src 'none'",
        f"script-src '{PRINT_SCRIPT_HASH}'",
        "style-src 'unsafe-inline'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS = {
    "Content-Security-Policy": PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    # the camera for this origin only: the crew's handheld scans a receipt's QR code
    "Permissions-Policy": "camera=(self), microphone=(), geolocation=(), payment=()",
}
PAGE_PATHS = frozenset({"/signage", "/crew", "/desk"})
STATIC_PREFIXES = ("/displays/", "/docs/static/", "/signage/logo/")  # no data: revalidated
_OPEN = frozenset({"start_map", "start_array"})
_CLOSE = frozenset({"end_map", "end_array"})


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `body`, read as JSON by an iterative parser, nests deeper than `limit`
    (stops at the first level past it; a body that is not JSON is not too deep)."""
    depth = 0
    try:
        for event, _ in ijson.basic_parse(io.BytesIO(body), use_float=True):
            if event in _OPEN:
                depth += 1
                if depth > limit:
                    return True
            elif event in _CLOSE:
                depth -= 1
    except ijson.JSONError:
        return False  # not JSON: the route's own parsing says what is wrong
    return False


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimits:
    """413 for a body over its route's limit, 422 for JSON nested too deep; see above.
    `streamed` maps a path to its own limit: those bodies are counted as the route reads
    them, not read here."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        streamed: dict[str, int],
        max_bytes: int = MAX_BODY_BYTES,
        max_depth: int = MAX_JSON_DEPTH,
    ) -> None:
        self.app = app
        self.streamed = streamed
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.streamed.get(scope["path"], self.max_bytes)
        too_large = f"request bodies of {scope['path']} are limited to {limit} bytes"
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(send, 413, too_large)
            return
        if scope["path"] in self.streamed:
            await self.app(scope, _counted(receive, limit, too_large), send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _refuse(send, 413, too_large)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body.lstrip()[:1] in (b"[", b"{") and json_too_deep(body, self.max_depth):
            detail = f"JSON bodies may nest {self.max_depth} levels deep at most"
            await _refuse(send, 422, detail)
            return
        await self.app(scope, _replay(body, receive), send)


def _counted(receive: Receive, limit: int, detail: str) -> Receive:
    size = 0

    async def counted() -> Message:
        nonlocal size
        message = await receive()
        size += len(message.get("body", b""))
        if size > limit:  # raised into the route reading it: the app answers 413
            raise HTTPException(413, detail)
        return message

    return counted


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, when it comes

    return replay


class SecureHeaders:
    """The secure headers of every HTTP response (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                static = path.startswith(STATIC_PREFIXES)
                if "content-security-policy" not in headers:  # else the route's own
                    page = path in PAGE_PATHS or static
                    headers["Content-Security-Policy"] = PAGE_CSP if page else DOCUMENT_CSP
                for name, value in PAGE_HEADERS.items():
                    if name not in headers:
                        headers[name] = value
                headers["Cache-Control"] = "no-cache" if static else "no-store"
            await send(message)

        await self.app(scope, receive, with_headers)


async def validation_refused(_: Request, exc: Exception) -> Response:
    """422 for a request that fails validation, its errors written as ASCII JSON: the
    errors echo the input, and a lone surrogate in it (valid in JSON's \\u escapes, not
    in UTF-8) would otherwise make the refusal itself fail with a 500."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    body = json.dumps({"detail": jsonable_encoder(errors)}, ensure_ascii=True)
    return Response(body, status_code=422, media_type="application/json")
