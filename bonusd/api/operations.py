"""HTTP routes for whoever runs the daemon: `/health` and `/metrics` (public, for load
balancers and scrapers) and the dead letters of ingest (desk)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel

from bonusd.access.auth import Role
from bonusd.api.context import Ctx, require

router = APIRouter(tags=["operations"])


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    site: str
    mqtt: Literal["connected", "reconnecting"]  # connected: the session confirmed alive
    redis: Literal["ok", "unavailable"]
    ingest: Literal["ok", "stalled"]  # stalled: a message waits uncommitted too long
    mqtt_error: str
    redis_error: str
    ingest_error: str
    ingest_lag_seconds: float
    pending_messages: int
    clock: dt.datetime
    gaming_day: dt.date
    role: Literal["leader", "standby"]  # docs/leader.md
    leader_token: int | None  # the fencing token while this daemon leads


class DeadLetterOut(BaseModel):
    """A telemetry message ingest could not apply, kept for the floor's technicians."""

    id: str  # the entry's id in the dead-letter stream (<ms>-<n>)
    reason: str  # why, a `bonusd.floor.telemetry.Reason`: too_large, not_json, invalid, ...
    topic: str
    payload: str  # the message as received (empty when it could not be kept)
    detail: str
    arrived_ms: str  # when it arrived, epoch milliseconds


@router.get("/health")
async def health(ctx: Ctx) -> HealthOut:
    """The daemon's state: broker, Redis, ingest lag, leadership, clock and gaming day."""
    h = ctx.health
    now = ctx.clock.now()
    return HealthOut(
        status=h.status(),
        site=ctx.site,
        mqtt="connected" if h.mqtt_alive() else "reconnecting",
        redis="ok" if h.redis_ok else "unavailable",
        ingest="stalled" if h.ingest_stalled() else "ok",
        mqtt_error=h.mqtt_problem(),
        redis_error=h.redis_error,
        ingest_error=h.ingest_problem(),
        ingest_lag_seconds=round(h.ingest_lag_s(), 3),
        pending_messages=h.pending,
        clock=now,
        gaming_day=ctx.calendar.gaming_day(now),
        role=h.role,
        leader_token=h.leader_token,
    )


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "description": "The metrics in Prometheus' text exposition format",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
async def metrics(ctx: Ctx) -> Response:
    """Prometheus metrics (text exposition format)."""
    return Response(ctx.metrics.render(), media_type="text/plain; version=0.0.4")


@router.get("/deadletters", dependencies=[require(Role.DESK)])
async def deadletters(
    ctx: Ctx, count: Annotated[int, Query(ge=1, le=10_000)] = 100
) -> list[DeadLetterOut]:
    """The newest dead letters first."""
    return [DeadLetterOut(**row) for row in await ctx.store.deadletters(count)]
