"""The promotions' logos for the floor screens: `GET /signage/logo/{promotion}`.

A floor screen shows the logo its promotion file names (`[signage] logo`, docs/promotions.md)
in an `<img>`, which sends no token; the logo is public branding, so this route, like the
pages and their files (`bonusd.api.pages`), is a plain Starlette route outside the API's
route table. It serves only the file a running promotion names, read again on each request
within the bounds of `bonusd.promotions.logofile` (a plain name in the promotions folder,
at most 256 KiB, a PNG, JPEG or WebP whose contents agree with its name), with the pages'
secure headers (`nosniff`: a browser never takes it for anything but the image it is).
"""

from __future__ import annotations

import asyncio
import logging
import re

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bonusd.api.context import context_of
from bonusd.api.pages import SECURE_HEADERS
from bonusd.promotions.logofile import LogoError, read_logo

logger = logging.getLogger(__name__)
PROMOTION_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
HEADERS = {**SECURE_HEADERS, "Cache-Control": "no-cache"}  # public, and it may change


async def logo(request: Request) -> Response:
    """The logo of a running promotion, or 404."""
    promotion_id = str(request.path_params["promotion"])
    ctx = context_of(request)
    promotion = ctx.promotions.promotions.get(promotion_id)
    if not PROMOTION_ID.match(promotion_id) or promotion is None:
        return PlainTextResponse("no such promotion", 404, headers=HEADERS)
    name, folder = promotion.signage.logo, ctx.promotions_folder
    if name is None or folder is None:
        return PlainTextResponse(f"promotion {promotion_id} has no logo", 404, headers=HEADERS)
    try:
        data, media_type = await asyncio.to_thread(read_logo, folder, name)
    except LogoError as exc:
        logger.warning("signage logo of %s not served: %s", promotion_id, exc)
        return PlainTextResponse(
            f"the logo of {promotion_id} cannot be shown", 404, headers=HEADERS
        )
    return Response(data, media_type=media_type, headers=HEADERS)


router = APIRouter()
router.add_route("/signage/logo/{promotion}", logo, methods=["GET"], include_in_schema=False)
