"""The promotions desk's draw summary keeps the daemon's event loop free: the per-member
work (member rows, columns, the bulk rules, the totals) runs in a worker thread, the loop
reads only the member rows of the draw's players (never the whole member index), and a
Redis that does not answer is a 503 with Retry-After, not a 500."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any, cast

import httpx
import pytest
import redis.asyncio as aioredis
from fastapi import FastAPI
from fastapi.routing import APIRoute

from bonusd.api import promotions
from bonusd.api.context import attach
from bonusd.api.promotions import SUMMARY_RETRY_AFTER_S
from bonusd.errors import ServiceUnavailableError
from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.registry.records import Member, Tier
from simulators.local.services import LocalRedis
from tests.daemon_helpers import PROJECT

FESTA = "montecasino-festa-fortuna"
DRAW = "saturday-2025-10-25"
# the per-member steps of a summary: none of them may run on the event loop's thread
HEAVY = {"bulk_standings", "from_rows", "build", "_ints", "_place", "_summarise"}


def _members() -> list[Member]:
    return [
        Member(card="C1", name="Thandi Mokoena", tier=Tier("Q"), app_user=True),
        Member(card="C2", name="Johan Botha", tier=Tier("J")),
        Member(card="C3", name="Sipho Ndlovu", tier=Tier("A"), excluded=True),
    ]


async def _draw_night(r: aioredis.Redis, keys: Keys) -> PromotionStore:
    """Three members and an unregistered card with play in the Saturday window; C1 activated."""
    festa = load_promotion(PROJECT / "promotions" / f"{FESTA}.toml")
    store = FloorStore(
        r, keys, dedup_ttl_s=3600, deadletter_maxlen=100, deadletter_payload_bytes=256
    )
    await store.import_members(_members())
    live = PromotionStore(r, keys, [festa])
    points = {"C1": 2_550, "C2": 30_000, "C3": 9_000, "C9": 500}
    columns = {
        "slots_points": points,
        "slots_plays": dict.fromkeys(points, 40),
        "slots_visits": dict.fromkeys(points, 1),
        "visits": dict.fromkeys(points, 1),
    }
    for name, values in columns.items():
        await r.hset(live.keys.window_field(FESTA, DRAW, name), mapping=values)  # type: ignore[arg-type]
    await r.hset(live.keys.activations(FESTA, DRAW), "C1", "kiosk")
    return live


WANT = {
    "members_with_play": 4,
    "eligible": 2,  # C3 excluded, C9 never registered
    "qualified": 2,
    "activated": 1,
    "tickets": 35 + 200,  # C1: 25 + 10 (app); C2: 300 capped at 200 (J)
    "entries": 35,
}


async def test_the_summary_runs_its_per_member_work_off_the_event_loop(
    site: str, aredis: aioredis.Redis
) -> None:
    keys = Keys("bonusd", site)
    live = await _draw_night(aredis, keys)
    loop_thread = threading.get_ident()
    on_loop: list[str] = []
    off_loop: list[str] = []  # what ran in worker threads
    whole_hash_reads: list[str] = []

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event != "call":
            return
        name = frame.f_code.co_name
        if threading.get_ident() != loop_thread:
            off_loop.append(name)
            return
        on_loop.append(name)
        args = frame.f_locals.get("args") if name == "execute_command" else None
        if args and str(args[0]).upper().strip("B'") == "HGETALL":
            key = args[1]
            whole_hash_reads.append(key.decode() if isinstance(key, bytes) else str(key))

    loop = asyncio.get_running_loop()
    workers = concurrent.futures.ThreadPoolExecutor(2)  # threads started while profiled
    loop.set_default_executor(workers)
    sys.setprofile(profile)  # the loop's thread
    threading.setprofile(profile)  # and the worker threads started from now on
    try:
        summary = await DrawSummaries(live).summary(FESTA, DRAW)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        workers.shutdown()

    assert {k: summary[k] for k in WANT} == WANT
    assert summary["by_tier"]["Q"] == {"qualified": 1, "tickets": 35}
    assert summary["by_tier"]["J"] == {"qualified": 1, "tickets": 200}
    assert "summary" in on_loop  # the profile did watch the loop's thread
    assert HEAVY.isdisjoint(on_loop), sorted(HEAVY & set(on_loop))
    assert HEAVY.issubset(off_loop), sorted(HEAVY - set(off_loop))  # each ran, in a worker
    assert whole_hash_reads  # the profile did see the whole-hash reads of the columns
    assert keys.member_index not in whole_hash_reads  # only the players' rows are read


def _summary_guards() -> list[Any]:
    """The role checks (`bonusd.api.context.require`) of the summary route."""
    routes = promotions.router.routes
    (route,) = (r for r in routes if isinstance(r, APIRoute) and r.endpoint is promotions.summary)
    return [d.call for d in route.dependant.dependencies if hasattr(d.call, "roles")]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[LocalRedis]:
    """A Redis of this test's own, so that pausing it stalls nobody else."""
    with LocalRedis(tmp_path / "redis") as r:
        yield r  # type: ignore[misc]


async def test_a_redis_timeout_is_service_unavailable(site: str, private_redis: LocalRedis) -> None:
    keys = Keys("bonusd", site)
    admin = aioredis.Redis.from_url(private_redis.url, decode_responses=True)
    live = await _draw_night(admin, keys)
    slow = aioredis.Redis.from_url(private_redis.url, decode_responses=True, socket_timeout=0.2)
    summaries = DrawSummaries(PromotionStore(slow, keys, list(live.promotions.values())))
    assert (await summaries.summary(FESTA, DRAW))["tickets"] == WANT["tickets"]
    await admin.execute_command("CLIENT", "PAUSE", "3000", "ALL")  # type: ignore[no-untyped-call]  # 15 x the read timeout
    with pytest.raises(ServiceUnavailableError, match="could not be read from Redis"):
        await summaries.summary(FESTA, DRAW)
    await slow.aclose()
    await admin.aclose()


async def test_the_summary_route_answers_503_with_retry_after_when_redis_stalls(
    site: str, private_redis: LocalRedis
) -> None:
    keys = Keys("bonusd", site)
    admin = aioredis.Redis.from_url(private_redis.url, decode_responses=True)
    live = await _draw_night(admin, keys)
    slow = aioredis.Redis.from_url(private_redis.url, decode_responses=True, socket_timeout=0.2)
    slow_store = PromotionStore(slow, keys, list(live.promotions.values()))
    app = FastAPI()
    ctx = SimpleNamespace(promotions=slow_store, summaries=DrawSummaries(slow_store))
    attach(app, cast(Any, ctx))
    app.include_router(promotions.router)
    path = f"/promotions/{FESTA}/draws/{DRAW}/summary"
    guards = _summary_guards()
    assert guards, "the summary route checks a role"
    for guard in guards:  # no tokens here: every caller is let in
        app.dependency_overrides[guard] = lambda: None
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk") as http:
        assert (await http.get(path)).json()["entries"] == WANT["entries"]
        await admin.execute_command("CLIENT", "PAUSE", "3000", "ALL")  # type: ignore[no-untyped-call]
        response = await http.get(path)
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == str(SUMMARY_RETRY_AFTER_S)
    assert "Redis is slow or unreachable" in response.json()["detail"]
    await slow.aclose()
    await admin.aclose()
