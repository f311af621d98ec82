"""Bounded reselection over HTTP (issue 16, item 4): the crew's `not-owner` needs a reason
(422 without one), is refused with 409 and writes nothing when it comes inside the
series' spacing or past its limit; only a desk token approves one more, with a reason,
recorded under the desk member's name."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from tests.browser.helpers import FESTA, promotions_folder
from tests.raps.helpers import SID, Site, local, start

BASE = f"/promotions/{FESTA}/jackpots/{SID}"


@contextlib.asynccontextmanager
async def client(svc: Service, role: Role, name: str) -> AsyncIterator[httpx.AsyncClient]:
    issued = await svc.tokens.issue(
        role=role, name=name, now=svc.clock.now(), valid_for=dt.timedelta(days=1)
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=svc.app),
        base_url="http://bonusd",
        headers={"Authorization": f"Bearer {issued.token}"},
    ) as http:
        yield http


async def test_crew_reselections_are_bounded_and_the_desk_approves_one_more(
    settings: Settings, tmp_path: Path, site: str, redis_url: str
) -> None:
    folder = promotions_folder(tmp_path, site, FESTA)
    clock = ManualClock(local(12))
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        async with Service(settings.model_copy(update={"promotions": folder}), clock=clock) as svc:
            await start(Site(svc.jackpots, clock, r, svc.keys))  # 14:30, fifty players
            await svc.jackpots.run_jackpot(FESTA, SID, 1)
            async with (
                client(svc, Role.CREW, "Lerato") as crew,
                client(svc, Role.DESK, "Nomsa") as desk,
            ):
                await _crew_reselects(svc, clock, crew)
                await _desk_approves(svc, clock, crew, desk)
    finally:
        await r.aclose()


async def _ledger(svc: Service) -> list[tuple[str, str]]:
    return [(rec.kind, rec.actor) for rec in await svc.audit.ledger(f"{FESTA}.{SID}")]


async def _not_owner(crew: httpx.AsyncClient, claim: int, reason: str) -> httpx.Response:
    at_device = await crew.post(f"{BASE}/claims/{claim}/at-device")
    assert at_device.status_code in (200, 409), at_device.text
    return await crew.post(f"{BASE}/claims/{claim}/not-owner", json={"reason": reason})


async def _crew_reselects(svc: Service, clock: ManualClock, crew: httpx.AsyncClient) -> None:
    clock.advance(10)
    assert (await crew.post(f"{BASE}/claims/1/at-device")).status_code == 200
    for body in (None, {}, {"reason": ""}, {"reason": "   "}, {"reason": "not hers\u202e"}):
        answer = await crew.post(f"{BASE}/claims/1/not-owner", json=body)
        assert answer.status_code == 422, (body, answer.text)
    written = await _ledger(svc)
    answer = await crew.post(f"{BASE}/claims/1/not-owner", json={"reason": "not her card"})
    assert answer.status_code == 409, answer.text
    assert "too soon to reselect" in answer.json()["detail"]
    assert "in 20 s" in answer.json()["detail"]
    assert await _ledger(svc) == written
    for claim in (1, 2, 3):
        clock.advance(30 if claim == 1 else 60)
        answer = await _not_owner(crew, claim, "not her card")
        assert answer.status_code == 200, answer.text
        jackpot = answer.json()["jackpots"][0]
        assert (jackpot["reselections"], jackpot["reselections_allowed"]) == (claim, 3)
    clock.advance(60)
    written = await _ledger(svc)
    answer = await _not_owner(crew, 4, "not his card")
    assert answer.status_code == 409, answer.text
    assert "made 3 of its 3 reselections" in answer.json()["detail"]
    assert "desk's approval" in answer.json()["detail"]
    assert (await _ledger(svc))[: len(written) + 1] == [*written, ("claim", "Lerato (crew)")]
    assert len(await _ledger(svc)) == len(written) + 1  # only the crew's arrival at the device


async def _desk_approves(
    svc: Service, clock: ManualClock, crew: httpx.AsyncClient, desk: httpx.AsyncClient
) -> None:
    approve = f"{BASE}/1/reselections/approve"
    refused = await crew.post(approve, json={"reason": "I say so"})
    assert refused.status_code == 403, refused.text
    assert (await desk.post(approve)).status_code == 422
    assert (await desk.post(approve, json={"reason": " "})).status_code == 422
    answer = await desk.post(approve, json={"reason": "ID checked at the desk"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["jackpots"][0]["reselections_allowed"] == 4
    record = (await svc.audit.ledger(f"{FESTA}.{SID}"))[-1]
    assert (record.kind, record.actor) == ("override", "Nomsa (desk)")
    assert record.payload["reason"] == "ID checked at the desk"
    again = await desk.post(approve, json={"reason": "and one more"})
    assert again.status_code == 409 and "1 of its 4 reselections left" in again.json()["detail"]
    answer = await crew.post(f"{BASE}/claims/4/not-owner", json={"reason": "a borrowed card"})
    assert answer.status_code == 200, answer.text
    clock.advance(60)
    answer = await _not_owner(crew, 5, "not his card")
    assert answer.status_code == 409 and "made 4 of its 4" in answer.json()["detail"]
