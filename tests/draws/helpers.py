"""What the draw tests share: Golden Horse's halfway draw, deterministic seeds, and a
site around a draw runner on a manual clock (`Site`)."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.audit.chain import AuditRecord, Kind
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import Clock, ManualClock
from bonusd.draws.approvals import ChangeKind, Decision
from bonusd.draws.caches import DESK_CACHES, CacheBounds
from bonusd.draws.claims import (
    Actor,
    ClaimError,
    ClaimRole,
    Prize,
)
from bonusd.draws.runner import DrawRunner
from bonusd.infra.keys import Keys
from bonusd.promotions import Promotion, load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.store import PromotionStore
from bonusd.registry.records import Member, Tier
from bonusd.service.root import Service
from tests.redis_snapshot import snapshot
from tests.seal_helpers import SEAL

GH = Path(__file__).parents[2] / "promotions" / "golden-horse-mega-points-chase.toml"


PID = "golden-horse-mega-points-chase"


HW = "halfway"
CLOSES = dt.datetime(2026, 11, 7, 19, tzinfo=dt.timezone(dt.timedelta(hours=2)))  # halfway bin


HALFWAY = f"{PID}.{HW}"


CREW = Actor("thandi", ClaimRole.CREW)


DESK = Actor("desk-1", ClaimRole.DESK)


SUPERVISOR = Actor("desk-2", ClaimRole.DESK)  # the second pair of eyes


async def exclude_approved(
    runner: DrawRunner, draw: str, card: str, reason: str, *, promotion: str = PID
) -> list[AuditRecord]:
    """An exclusion after the freeze: requested by DESK, approved by SUPERVISOR; returns
    the approval's records (approval, exclusion)."""
    asked = await runner.request_change(
        promotion, draw, ChangeKind.EXCLUSION, reason, DESK, card=card
    )
    number = int(asked[-1].payload["request"])
    return await runner.decide(promotion, draw, number, Decision.APPROVED, SUPERVISOR)


POOLED1 = ("pooled", 1)


FIVE_PRIZES = tuple(Prize(f"R{v}", v * 100) for v in (500, 1000, 2000, 5000, 10000))


def seeds(n: int) -> Callable[[int], bytes]:
    """A reproducible seed source: the same secrets on every run."""
    rng = random.Random(n)
    return rng.randbytes


@dataclass
class Site:
    """One test site in the real Redis: its promotion, pools and runners (all on one clock)."""

    redis: aioredis.Redis
    keys: Keys
    promotion: Promotion
    store: PromotionStore
    clock: ManualClock
    desk: DrawRunner

    def at(self, draw_id: str, hour: int, minute: int = 0, second: int = 0) -> dt.datetime:
        """A local time on the draw's date."""
        day = self.promotion.draw(draw_id).date
        return dt.datetime.combine(day, dt.time(hour, minute, second), self.promotion.zone)

    def new_desk(self, seed_source: Callable[[int], bytes] | None = None) -> DrawRunner:
        """Another daemon's desk over the same Redis: nothing cached."""
        return DrawRunner(
            redis=self.redis,
            keys=self.keys,
            audit=AuditStore(self.redis, self.keys),
            promotions=self.store,
            clock=self.clock,
            seal=SEAL,
            seed_source=seed_source or seeds(1),
        )

    async def entry_pool(
        self,
        draw_id: str,
        counts: Mapping[Tombola, Mapping[str, int]],
        seats: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Set the frozen entry pool and the leaderboard seats as `freeze_pool` would."""
        pool = EntryPool.freeze(
            promotion_id=PID,
            draw_id=draw_id,
            closed_at=self.clock.now(),
            counts=counts,
            seated=[card for _, card in seats],
        )
        await self.redis.set(self.store.keys.pool(PID, draw_id), pool.canonical())
        await self.redis.set(
            self.store.keys.seats(PID, draw_id), json.dumps([list(s) for s in seats])
        )

    async def flag_excluded(self, card: str) -> None:
        """The casino's exclusion arrives in the member index (after the pool froze)."""
        member = Member(card=card, name="someone", tier=Tier.TEN, excluded=True)
        await self.redis.hset(self.keys.member_index, card, member.to_index())

    @property
    def audit_list(self) -> str:
        return f"{self.keys.base}audit"

    async def ledger(self, subject: str = HALFWAY) -> list[AuditRecord]:
        return await self.desk.audit.ledger(subject)

    async def ledger_len(self, subject: str = HALFWAY) -> int:
        return await self.redis.llen(self.desk.audit.ledger_key(subject))


def of_kind(records: list[AuditRecord], kind: Kind) -> list[AuditRecord]:
    return [r for r in records if r.kind == kind]


async def a_draw_from_commitment_to_letter(desk: tuple[DrawRunner, ManualClock]) -> None:
    d, clock = desk
    await d.commit_seeds(PID, "halfway")
    clock.advance(7 * 3600)  # 19:00
    records = await d.run_round(PID, "halfway", 1)
    kinds = [r.kind for r in records]
    assert kinds.count("pick") == 5 and kinds.count("claim") == 5
    again = await d.run_round(PID, "halfway", 1)
    assert again == []  # idempotent
    book = await d.book(PID, "halfway")
    winners = {c.card for c in book.claims.values()}
    assert len(winners) == 5
    await d.load_prizes(
        PID,
        "halfway",
        ("pooled", 1),
        tuple(Prize(f"R{v}", v * 100) for v in (500, 1000, 2000, 5000, 10000)),
        DESK,
    )
    clock.advance(30)
    await d.act(PID, "halfway", 1, "present", CREW)
    await d.act(PID, "halfway", 1, "verify", CREW)
    await d.act(PID, "halfway", 1, "pick_reveal", CREW, reveal=3)
    recs = await d.act(PID, "halfway", 1, "issue_letter", DESK)
    assert any(r.kind == "letter" for r in recs)
    with pytest.raises(ClaimError):
        await d.act(PID, "halfway", 1, "verify", CREW)
    clock.advance(120)
    assert await d.run_due(PID, "halfway") == 4  # four no-shows, each redrawn
    d._books.clear()  # a restarted daemon rebuilds the same book from the ledger
    book2 = await d.book(PID, "halfway")
    assert len(book2.claims) == 9
    assert [c.card for c in book2.claims.values()][:5] == [c.card for c in book.claims.values()][:5]


class HttpDesk:
    """The application of a daemon whose scheduler is not running, called in process,
    with a token of every role."""

    def __init__(self, service: Service, clock: ManualClock, redis: aioredis.Redis) -> None:
        self.service, self.clock, self.redis = service, clock, redis
        self.http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=service.app), base_url="http://bonusd"
        )
        self.tokens: dict[Role, str] = {}

    async def issue(self) -> None:
        for role in Role:
            issued = await self.service.tokens.issue(
                role=role,
                name=f"{role} one",
                area="main" if role is Role.SIGNAGE else "",
                now=self.clock.now(),
                valid_for=dt.timedelta(days=60),
            )
            self.tokens[role] = issued.token
        second = await self.service.tokens.issue(
            role=Role.DESK, name="desk two", area="", now=self.clock.now(),
            valid_for=dt.timedelta(days=60),
        )  # fmt: skip
        self.second_desk = second.token

    async def entry_pool(self, members: int = 20) -> None:
        """Members C00..C19 holding 1..20 tickets, as the frozen entry pool."""
        counts = {Tombola.POOLED: {f"C{i:02}": i + 1 for i in range(members)}}
        pool = EntryPool.freeze(
            promotion_id=PID, draw_id=HW, closed_at=self.clock.now(), counts=counts, seated=[]
        )
        keys = self.service.keys
        await self.redis.set(keys.pool(PID, HW), pool.canonical())
        await self.redis.set(keys.seats(PID, HW), "[]")

    async def post_as(self, token: str, path: str, body: object = None) -> httpx.Response:
        return await self.http.post(path, json=body, headers={"Authorization": f"Bearer {token}"})

    async def post(self, role: Role, path: str, body: object = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"}
        return await self.http.post(path, json=body, headers=headers)

    async def get(self, role: Role, path: str) -> httpx.Response:
        return await self.http.get(path, headers={"Authorization": f"Bearer {self.tokens[role]}"})

    async def keyspace(self) -> dict[bytes, tuple[bytes | None, bool]]:
        return await snapshot(self.redis, self.service.keys.base)


def desk_runner(store: PromotionStore, clock: Clock, **extra: Any) -> DrawRunner:
    """A desk's draw runner on `store`'s Redis and keys, sealing seeds with the tests' key
    (`extra`: a seed source, cache bounds)."""
    r, keys = store.redis, store.keys
    return DrawRunner(
        redis=r, keys=keys, audit=AuditStore(r, keys), promotions=store, clock=clock, seal=SEAL,
        **extra,
    )  # fmt: skip


async def bounded_site(
    site: str,
    redis_url: str,
    bounds: CacheBounds = DESK_CACHES,
    draws: tuple[str, ...] = ("halfway", "bonus"),
) -> Site:
    """Golden Horse on `site`, clock at 12:00 on the halfway draw's day, with a draw runner
    whose caches have `bounds`, and the entry pools of `draws` (20 members each, C00..C19)."""
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    promotion = load_promotion(GH)
    store = PromotionStore(r, keys, [promotion])
    clock = ManualClock(
        dt.datetime.combine(promotion.draw("halfway").date, dt.time(12), promotion.zone)
    )
    runner = desk_runner(store, clock, seed_source=seeds(7), bounds=bounds)
    s = Site(r, keys, promotion, store, clock, runner)
    for draw in draws:
        await s.entry_pool(draw, {Tombola.POOLED: {f"C{n:02d}": 1 + n % 4 for n in range(20)}})
    return s
