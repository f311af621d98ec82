"""HTTP routes of the live floor: who is active now (crew, desk) and the device registry
import (admin)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel

from bonusd.access.auth import Role
from bonusd.api.context import Ctx, require
from bonusd.api.errors import ImportErrorOut
from bonusd.api.httpguard import MAX_IMPORT_BYTES

router = APIRouter(tags=["floor"])
# the import routes stream their bodies: BodyLimits bounds them at this size
IMPORT_PATHS = {"/members/import": MAX_IMPORT_BYTES, "/devices/import": MAX_IMPORT_BYTES}
REFUSED_FILE: dict[int | str, dict[str, Any]] = {
    422: {"model": ImportErrorOut, "description": "The file, refused whole"}
}


class ActiveOut(BaseModel):
    """A carded-in player's session."""

    card: str
    kind: str  # egm or table
    device: str
    seat: int | None  # at a table
    area: str
    since: str | None  # carded in at (UTC, ISO 8601)
    last_play: str | None
    last_seen: str | None


class ImportOut(BaseModel):
    imported: int  # records created or updated


def file_body(what: str, header: str) -> dict[str, object]:
    """The request body of an import route, for the schema (the route reads it raw)."""
    text = {"schema": {"type": "string"}}
    return {
        "requestBody": {
            "required": True,
            "description": f"The {what} file: CSV with the header `{header}`, or a JSON array.",
            "content": {"text/csv": text, "application/json": {"schema": {"type": "array"}}},
        }
    }


@router.get(
    "/floor/active",
    response_model=list[ActiveOut],
    dependencies=[require(Role.CREW, Role.DESK)],
)
async def active(
    ctx: Ctx,
    area: Annotated[str | None, Query(pattern=r"^[a-z0-9_-]{1,32}$")] = None,
    kind: Literal["egm", "table"] | None = None,
    limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
    cursor: Annotated[str, Query(pattern=r"^[A-Za-z0-9-]{0,32}$")] = "",
) -> Response:
    """Who is active now, in card order. With `limit`, one page: the header
    `X-Next-Cursor` (absent on the last page) is the `cursor` of the next one."""
    page = await ctx.active_floor.page(area=area, kind=kind, limit=limit or 0, cursor=cursor)
    headers = {"X-Next-Cursor": page.next_cursor} if page.next_cursor else None
    return Response(page.body, media_type="application/json", headers=headers)


@router.post(
    "/devices/import",
    responses=REFUSED_FILE,
    dependencies=[require(Role.ADMIN)],
    openapi_extra=file_body("devices", "device,kind,area,bank,position"),
)
async def import_devices(ctx: Ctx, request: Request) -> ImportOut:
    """Create or update EGMs and tables from a CSV or JSON file."""
    return ImportOut(imported=await ctx.importer.devices(request.stream(), source="request body"))
