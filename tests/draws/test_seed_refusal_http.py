"""A draw whose committed seed is gone answers the API with the refusal, as JSON with its
`detail` (never a bare 500 page), and a read leaves the trail as it was
(docs/fairness.md, "Where the seed lives")."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from tests.browser.helpers import GH, at, promotions_folder

BASE = f"/promotions/{GH}/draws/halfway"


async def test_a_refused_seed_answers_json_with_the_key_and_writes_nothing_on_reads(
    settings: Settings, tmp_path: Path, site: str
) -> None:
    gh = settings.model_copy(update={"promotions": promotions_folder(tmp_path, site, GH)})
    clock = ManualClock(at(11, 7, 18))
    async with Service(gh, clock=clock) as service:
        issued = await service.tokens.issue(
            role=Role.DESK, name="desk one", area="", now=clock.now(),
            valid_for=dt.timedelta(days=1),
        )  # fmt: skip
        headers = {"Authorization": f"Bearer {issued.token}"}
        transport = httpx.ASGITransport(app=service.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bonusd") as http:
            await service.draws.commit_seeds(GH, "halfway")
            assert (await http.get(f"{BASE}/book", headers=headers)).status_code == 200
            name = service.keys.seed(f"{GH}.halfway", "pooled", "1")
            await service.redis.delete(name)
            service.draws._books.clear()  # as a daemon started after the key went
            trail = len(await service.audit.records())
            read = await http.get(f"{BASE}/book", headers=headers)
            assert read.status_code == 500, read.text
            assert read.headers["content-type"].startswith("application/json")
            assert name in read.json()["detail"]
            assert len(await service.audit.records()) == trail  # a read writes nothing
            clock.set(at(11, 7, 19))
            run = await http.post(f"{BASE}/close-bin", headers=headers)
            assert run.status_code == 500, run.text
            assert name in run.json()["detail"]
            refused = [
                r for r in await service.audit.records() if r.payload.get("event") == "seed_refused"
            ]
            assert len(refused) == 1 and refused[0].payload["key"] == name
