"""HTTP routes of the live floor: who is active now (crew, desk), a device's telemetry
sequence (desk) and the device registry import (admin)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
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


class EpochOut(BaseModel):
    """One boot of a device (telemetry contract v2)."""

    epoch: str
    seq: int  # the highest sequence number applied
    missing: int  # sequence numbers of the window below `seq` not received (yet)


class SequenceOut(BaseModel):
    """What bonusd knows of a contract v2 device's event sequence (docs/telemetry.md)."""

    device: str
    current: EpochOut
    current_since: str  # the earliest event time applied in the current epoch (UTC)
    previous: EpochOut | None  # the epoch before, kept for its late events
    epochs: int  # epochs seen: boots
    gaps: int  # sequence numbers lost for good (never received, now beyond reach)


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


@router.get("/devices/{device}/sequence", dependencies=[require(Role.DESK)])
async def device_sequence(
    ctx: Ctx, device: Annotated[str, Path(min_length=1, max_length=64)]
) -> SequenceOut:
    """The telemetry sequence of a device that speaks contract v2: its current and
    previous epoch, and the events it never delivered (gaps)."""
    state = await ctx.store.device_sequence(device)
    if state is None:
        raise HTTPException(404, f"device {device} has sent no contract v2 event")
    since = dt.datetime.fromtimestamp(state.first_ms / 1000, dt.UTC).isoformat()
    cur, prev = state.current, state.previous
    return SequenceOut(
        device=device,
        current=EpochOut(epoch=cur.epoch, seq=cur.high, missing=cur.missing),
        current_since=since,
        previous=EpochOut(epoch=prev.epoch, seq=prev.high, missing=prev.missing) if prev else None,
        epochs=state.epochs,
        gaps=state.gaps,
    )


@router.post(
    "/devices/import",
    responses=REFUSED_FILE,
    dependencies=[require(Role.ADMIN)],
    openapi_extra=file_body("devices", "device,kind,area,bank,position"),
)
async def import_devices(ctx: Ctx, request: Request) -> ImportOut:
    """Create or update EGMs and tables from a CSV or JSON file."""
    return ImportOut(imported=await ctx.importer.devices(request.stream(), source="request body"))
