"""HTTP route of the site's audit trail: `GET /audit`, the hash-chained records newest
first with the chain's check, filtered by kind and by any text of a record (the desk
page's audit tab). The trail itself is `bonusd.audit`."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel

from bonusd.access.auth import Role
from bonusd.api.context import Ctx, require
from bonusd.audit.chain import verify_chain

router = APIRouter(tags=["audit"])


class AuditRecordOut(BaseModel):
    seq: int  # the record's number in the chain, from 1
    time: str  # UTC, microseconds, `Z` (2026-12-12T18:00:00.000000Z)
    actor: str  # who: a token's name and id, or the daemon
    kind: str  # what happened (`bonusd.audit.chain.Kind`)
    payload: dict[str, Any]  # the kind's own fields, as recorded
    hash: str  # sha256 over the record and the previous record's hash


class AuditOut(BaseModel):
    """A page of the trail, newest first, and the check of the whole chain."""

    total: int  # records in the whole trail
    chain: str  # "chain intact: N records", or where and why it is broken
    ok: bool  # the chain is intact
    records: list[AuditRecordOut]


@router.get("/audit", dependencies=[require(Role.DESK)])
async def audit(
    ctx: Ctx,
    count: Annotated[int, Query(ge=1, le=5000)] = 200,
    before: Annotated[int | None, Query(ge=1, description="records with seq below")] = None,
    kind: Annotated[str | None, Query(max_length=40)] = None,
    text: Annotated[
        str | None, Query(alias="q", max_length=120, description="text to look for")
    ] = None,
) -> AuditOut:
    """The site's hash-chained audit trail, newest first, with the chain's check:
    filter by kind and by any text of the record (a card, a draw, an actor)."""
    records = await ctx.audit.records()
    check = verify_chain(records)
    needle = (text or "").strip().lower()
    out: list[AuditRecordOut] = []
    for rec in reversed(records):
        if before is not None and rec.seq >= before:
            continue
        if kind and rec.kind != kind:
            continue
        row = {"seq": rec.seq, "time": rec.time, "actor": rec.actor, "kind": rec.kind}
        row |= {"payload": rec.payload, "hash": rec.hash}
        if needle and needle not in json.dumps(row, ensure_ascii=False).lower():
            continue
        out.append(AuditRecordOut.model_validate(row))
        if len(out) >= count:
            break
    return AuditOut(total=len(records), chain=str(check), ok=check.ok, records=out)
