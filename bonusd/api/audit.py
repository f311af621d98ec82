"""HTTP routes of the site's audit trail: `GET /audit`, the hash-chained records newest
first with the chain's check, filtered by kind and by any text of a record (the desk
page's audit tab); `GET /audit/digest`, a finished gaming day's digest of the chain's
head, as fields and as the signable text of the desk's daily report (docs/anchor.md).
The trail itself is `bonusd.audit`."""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel

from bonusd.access.auth import Role
from bonusd.api.context import Ctx, require
from bonusd.audit.anchor import DIGEST_SUBJECT, digested_day, trail_digests
from bonusd.audit.chain import AuditRecord
from bonusd.audit.digest import digest_text, last_finished_day, not_over
from bonusd.errors import ConflictError

router = APIRouter(tags=["audit"])
# a searched text holding one is matched on every record: a separator as the Audit tab
# shows a record, a brace, or a string's end and a comma (`time` ends the stored JSON)
HINT_CUTS = (", ", ": ", "{", "}", '",')


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
    filter by kind and by any text of the record (a card, a draw, an actor). The chain is
    the one the daemon checked as records arrived, and every record shown is held to it
    (bonusd/audit/reads.py); a text search reads the trail back from its newest record."""
    needle = (text or "").strip().lower()

    def row(rec: AuditRecord) -> dict[str, Any]:
        return {"seq": rec.seq, "time": rec.time, "actor": rec.actor, "kind": rec.kind} | {
            "payload": rec.payload,
            "hash": rec.hash,
        }

    def matches(rec: AuditRecord) -> bool:
        return needle in json.dumps(row(rec), ensure_ascii=False).lower()

    # a record's JSON in Redis (canonical: keys sorted, no spaces, with `prev_hash`) holds
    # any text of it that runs across no separator and past no end of its first or last
    # field (`HINT_CUTS`), so the search parses only the records holding that
    hint = needle if needle and not any(cut in needle for cut in HINT_CUTS) else None
    part = await ctx.audit.reads.page(
        count, before=before, kind=kind or None, match=matches if needle else None, hint=hint
    )
    out = [AuditRecordOut.model_validate(row(rec)) for rec in part.records]
    return AuditOut(total=part.total, chain=str(part.check), ok=part.check.ok, records=out)


class DigestOut(BaseModel):
    """A finished gaming day's digest of the audit chain's head (docs/anchor.md)."""

    site: str
    day: str  # the gaming day, YYYY-MM-DD
    closes: str  # the instant it closed (UTC, the records' time format)
    last_seq: int  # the last record before the close (0: the chain was empty)
    head_hash: str  # that record's chain hash
    code: str  # the head hash's first 16 hex digits, 4-4-4-4, to compare by eye
    records: int  # records of the gaming day
    first_time: str | None  # the day's first and last record times (none: no record)
    last_time: str | None
    chain: str  # the chain's check up to `last_seq`
    intact: bool
    recorded_seq: int | None  # the trail's record of this digest, once the leader wrote it
    text: str  # the signable text block, for the daily report printout


@router.get("/audit/digest", dependencies=[require(Role.DESK)])
async def audit_digest(
    ctx: Ctx,
    day: Annotated[
        dt.date | None, Query(description="gaming day, YYYY-MM-DD; default: the last finished")
    ] = None,
) -> DigestOut:
    """A finished gaming day's digest of the audit chain's head: the last record's seq
    and hash at the day's close, its code and the day's record count, with the text to
    print and sign. Reads only; 409 for a day not over yet."""
    now = ctx.clock.now()
    gaming_day = day or last_finished_day(ctx.calendar, now)
    if gaming_day > last_finished_day(ctx.calendar, now):
        raise ConflictError(not_over(ctx.calendar, gaming_day))
    # from the daemon's walk of the chain; the whole trail folded when that cannot say
    digest = await ctx.audit.reads.day_digest(gaming_day, site=ctx.site, calendar=ctx.calendar)
    if digest is None:
        [digest] = await trail_digests(
            ctx.audit, [gaming_day], site=ctx.site, calendar=ctx.calendar
        )
    recorded = await ctx.audit.ledger(DIGEST_SUBJECT)
    seq = next((rec.seq for rec in recorded if digested_day(rec) == gaming_day), None)
    return DigestOut.model_validate(
        {**digest.payload(), "intact": digest.intact, "recorded_seq": seq}
        | {"text": digest_text(digest)}
    )
