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
    daemon = ctx.health
    now = ctx.clock.now()
    return HealthOut(
        status=daemon.status(),
        site=ctx.site,
        mqtt="connected" if daemon.mqtt_alive() else "reconnecting",
        redis="ok" if daemon.redis_ok else "unavailable",
        ingest="stalled" if daemon.ingest_stalled() else "ok",
        mqtt_error=daemon.mqtt_problem(),
        redis_error=daemon.redis_error,
        ingest_error=daemon.ingest_problem(),
        ingest_lag_seconds=round(daemon.ingest_lag_s(), 3),
        pending_messages=daemon.pending,
        clock=now,
        gaming_day=ctx.calendar.gaming_day(now),
        role=daemon.role,
        leader_token=daemon.leader_token,
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
