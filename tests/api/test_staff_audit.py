"""The audit trail and the draw report name the staff members who acted (issue 19): a draw
run by a desk member signed in with a staff number, a winner's claim taken by a crew member
through presented, verified and the reveal, and its prize letter issued by an admin; then
the claim's records are read back: each names the person, their staff number and the role
they acted in (an admin as "(admin)", no longer "(desk)"), and so does the draw report.

Through the application of a daemon whose scheduler is not running, against real Redis."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bonusd.audit.chain import Kind
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from tests.browser.helpers import promotions_folder
from tests.draws.helpers import CLOSES, HALFWAY, HW, PID, HttpDesk
from tests.staff_helpers import add_staff, as_page, sign_in

BASE = f"/promotions/{PID}/draws/{HW}"
NAMES = {
    "crew": "Sipho Dube (staff 2001) (crew)",
    "desk": "Naledi Mahlangu (staff 1042) (desk)",
    "admin": "Ruth Mokoena (staff 9001) (admin)",
}


@pytest.fixture
async def desk(
    settings: Settings, tmp_path: Path, site: str, redis_url: str
) -> AsyncIterator[HttpDesk]:
    folder = promotions_folder(tmp_path, site, PID)
    clock = ManualClock(CLOSES - dt.timedelta(minutes=8))
    r = aioredis.Redis.from_url(redis_url)
    async with Service(settings.model_copy(update={"promotions": folder}), clock=clock) as service:
        d = HttpDesk(service, clock, r)
        await service.draws.commit_seeds(PID, HW)
        await add_staff(service, "1042", "Naledi Mahlangu", "desk")
        await add_staff(service, "2001", "Sipho Dube", "crew")
        await add_staff(service, "9001", "Ruth Mokoena", "admin")
        try:
            yield d
        finally:
            await d.http.aclose()
            await r.aclose()


async def test_a_claims_records_and_the_report_name_the_staff_members(desk: HttpDesk) -> None:
    http = desk.http
    await desk.entry_pool()
    desk.clock.set(CLOSES)
    as_desk = as_page(http, await sign_in(http, "1042"))
    as_crew = as_page(http, await sign_in(http, "2001"))
    as_admin = as_page(http, await sign_in(http, "9001"))
    ran = await http.post(f"{BASE}/run", json={"round": 1}, headers=as_desk)
    assert ran.status_code == 200, ran.text
    prizes = {
        "tombola": "pooled",
        "round": 1,
        "values_cents": [50000, 100000, 200000, 500000, 1000000],
    }
    assert (await http.post(f"{BASE}/prizes", json=prizes, headers=as_desk)).status_code == 200
    first = (await http.get(f"{BASE}/book", headers=as_desk)).json()["claims"][0]
    claim, card = first["claim"], first["card"]
    desk.clock.advance(30)
    for step, body in (("present", None), ("verify", None), ("reveal", {"reveal": 1})):
        r = await http.post(f"{BASE}/claims/{claim}/{step}", json=body, headers=as_crew)
        assert r.status_code == 200, (step, r.text)
    letter = await http.post(f"{BASE}/claims/{claim}/letter", headers=as_admin)
    assert letter.status_code == 200, letter.text

    records = await desk.service.audit.ledger(HALFWAY)
    steps = {
        r.payload["action"]: r.actor
        for r in records
        if r.kind == Kind.CLAIM and r.payload["card"] == card
    }
    assert steps.get("present") == NAMES["crew"], steps
    assert steps.get("verify") == NAMES["crew"] and steps.get("pick_reveal") == NAMES["crew"]
    assert steps.get("issue_letter") == NAMES["admin"], steps
    by_kind = {r.kind: r.actor for r in records if r.kind in (Kind.PRIZES, Kind.POOL, Kind.LETTER)}
    assert by_kind[Kind.PRIZES] == NAMES["desk"] and by_kind[Kind.POOL] == NAMES["desk"]
    assert by_kind[Kind.LETTER] == NAMES["admin"]
    assert all("token" not in r.actor for r in records)

    report = (await http.get(f"{BASE}/report", headers=as_desk)).text
    actions = report.split("STAFF ACTIONS", 1)[1]
    for who in NAMES.values():
        assert who in actions, (who, actions)
    assert f"by {NAMES['crew']}: claim {claim} card {card}: present" in actions
