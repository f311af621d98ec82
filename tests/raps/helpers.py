"""What the RAPS tests share: a test copy of Festa Fortuna with its RAPS session, a site around a RAPS runner on a manual clock, and a floor of fifty players put in place key by key."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from hypothesis import strategies as st

from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.caches import CacheBounds
from bonusd.draws.claims import Actor, ClaimError, ClaimRole
from bonusd.errors import NotFoundError
from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.promotions import load_promotion
from bonusd.promotions.store import PromotionStore
from bonusd.raps.rules import FloorPlayer, IneligibleReason, PlayKind, RapsClaimState
from bonusd.raps.runner import RapsRunner
from tests.seal_helpers import SEAL

FESTA = Path(__file__).parents[2] / "promotions" / "montecasino-festa-fortuna.toml"


PID = "montecasino-festa-fortuna"


SID = "jackpot-2025-10-04"


J1 = f"{PID}.{SID}.j1"


CREW = Actor("lerato", ClaimRole.CREW)


DESK = Actor("desk-1", ClaimRole.DESK)


# the test copy of the promotion: tiers Q, K and A only, and two retries after an empty pool
EMPTY = 'empty_pool = { retry_seconds = 60, retries = 5, then = "carry_over" }'


@dataclass
class Site:
    desk: RapsRunner
    clock: ManualClock
    redis: aioredis.Redis
    keys: Keys


def local(hour: int, minute: int = 0, second: int = 0, micro: int = 0) -> dt.datetime:
    zone = load_promotion(FESTA).zone
    return dt.datetime(2025, 10, 4, hour, minute, second, micro, tzinfo=zone)


def counter_seeds() -> Callable[[int], bytes]:
    n = itertools.count(1)
    return lambda size: hashlib.sha256(f"seed {next(n)}".encode()).digest()[:size]


async def make_site(site: str, redis_url: str, tmp_path: Path, then: str) -> Site:
    text = FESTA.read_text(encoding="utf-8")
    text = text.replace('"10", "J", ', "").replace('["J", "Q"]', '["Q"]')
    text = text.replace(
        EMPTY, f'empty_pool = {{ retry_seconds = 60, retries = 2, then = "{then}" }}'
    )
    path = tmp_path / FESTA.name
    path.write_text(text, encoding="utf-8")
    promotion = load_promotion(path)
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    clock = ManualClock(local(12))
    desk = RapsRunner(
        redis=r,
        keys=keys,
        audit=AuditStore(r, keys),
        promotions=PromotionStore(r, keys, [promotion]),
        clock=clock,
        calendar=promotion.calendar,
        seal=SEAL,
        seed_source=counter_seeds(),
    )
    return Site(desk, clock, r, keys)


async def seat(
    s: Site,
    card: str,
    *,
    at: dt.datetime,
    area: str = "main",
    kind: str = "egm",
    idle_minutes: float = 1,
    spend: int = 25_000,
    tier: str | None = "Q",
    excluded: bool = False,
    seat_no: int | None = None,
) -> None:
    """Put `card` on the floor as data from before the floor indexes: its session, day
    totals and member record, then `reindex_floor` builds what RAPS reads from them."""
    device = f"{'RL' if kind == 'table' else 'EGM'}-{card}"
    slot = f"{device}#{seat_no}" if seat_no is not None else device
    last_play = int((at - dt.timedelta(minutes=idle_minutes)).timestamp() * 1000)
    since = last_play - 600_000
    day = load_promotion(FESTA).calendar.gaming_day(at).isoformat()
    async with s.redis.pipeline(transaction=False) as pipe:
        pipe.hset(
            s.keys.device(device),
            mapping={"device": device, "kind": kind, "area": area, "bank": f"B-{area}"},
        )
        pipe.hset(
            s.keys.session(card),
            mapping={
                "slot": slot,
                "device": device,
                "seat": "" if seat_no is None else str(seat_no),
                "kind": kind,
                "area": area,
                "since": str(since),
                "last_play": str(last_play),
                "last_seen": str(last_play),
            },
        )
        pipe.zadd(s.keys.active(kind, area), {card: since})
        pipe.sadd(s.keys.active_index, f"active:{kind}:{area}")
        pipe.set(s.keys.at(slot), card)
        pipe.zadd(s.keys.lastseen, {card: last_play})
        pipe.hset(s.keys.day(day, card), mapping={"spend_cents": str(spend), "visit": "1"})
        if tier is not None:
            pipe.hset(s.keys.member_index, card, f"{tier}|0|{'1' if excluded else '0'}||")
        await pipe.execute()
    await store(s).reindex_floor(dt.date.fromisoformat(day))


def store(s: Site) -> FloorStore:
    return FloorStore(
        s.redis, s.keys, dedup_ttl_s=3600, deadletter_maxlen=100, deadletter_payload_bytes=100
    )


ELIGIBLE = [f"E{n:02d}" for n in range(30)]


REASONS = {
    IneligibleReason.EXCLUDED: 4,
    IneligibleReason.OUTSIDE_AREAS: 4,
    IneligibleReason.NOT_ACTIVE: 4,
    IneligibleReason.BELOW_MIN_SPEND: 4,
    IneligibleReason.TIER: 4,  # two J-tier members and two unregistered cards
}


async def fifty(s: Site, at: dt.datetime) -> None:
    """30 eligible players (EGMs in main, tables in smoking) and 20 who are not."""
    for n, card in enumerate(ELIGIBLE):
        if n % 3:
            await seat(s, card, at=at, area="main", tier="QKA"[n % 3])
        else:
            await seat(s, card, at=at, area="smoking", kind="table", seat_no=n % 7)
    for n in range(4):
        await seat(s, f"X{n}", at=at, excluded=True)
        await seat(s, f"P{n}", at=at, area="prive")
        await seat(s, f"I{n}", at=at, idle_minutes=5 + n + 0.1)
        await seat(s, f"C{n}", at=at, spend=9_999)
    for card in ("J0", "J1"):
        await seat(s, card, at=at, tier="J")
    for card in ("U0", "U1"):
        await seat(s, card, at=at, tier=None)


async def start(s: Site) -> None:
    await s.desk.commit_seeds(PID, SID)
    s.clock.set(local(14, 30))
    await fifty(s, s.clock.now())


def kinds(records: list) -> list[str]:  # type: ignore[type-arg]
    return [r.kind for r in records]


# the instant of the property tests' floor snapshots (tests/raps/test_rapsfloor.py)
PLAY_AT = dt.datetime(2025, 10, 4, 14, 30, 0, 123_000, tzinfo=dt.UTC)
PLAY_AT_MS = int(PLAY_AT.timestamp() * 1000)
players = st.builds(
    FloorPlayer,
    card=st.text("0123456789ABC", min_size=1, max_size=6),
    kind=st.sampled_from(list(PlayKind)),
    area=st.sampled_from(["main", "smoking", "prive", ""]),
    device=st.text("EGMRL-0123", min_size=1, max_size=8),
    bank=st.text("B0123", max_size=4),
    seat=st.one_of(st.none(), st.integers(1, 7)),
    # whole milliseconds, around the 5-minute edge of the active window
    last_play=st.integers(PLAY_AT_MS - 400_000, PLAY_AT_MS + 1_000).map(
        lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    ),
    spend_cents=st.integers(0, 30_000),
    tier=st.sampled_from(["K", "Q", "A", "J", ""]),
    excluded=st.booleans(),
)


async def crew_verifies_at_the_device_and_the_jackpot_verifies(s: Site) -> None:
    await start(s)
    await s.desk.run_jackpot(PID, SID, 1)
    s.clock.advance(40)
    await s.desk.act(PID, SID, 1, "crew_arrived", CREW)
    records = await s.desk.act(PID, SID, 1, "verify_at_device", CREW)
    assert kinds(records) == ["claim", "seed_reveal"]
    book = await s.desk.book(PID, SID)
    assert book.claims[1].state is RapsClaimState.VERIFIED_AT_DEVICE and book.settled(1)
    assert book.jackpot(1).floor is None  # settled: the book lets its floor go
    assert book.claims[1].device and book.claims[1].area  # the claim keeps its place
    with pytest.raises(ClaimError):
        await s.desk.act(PID, SID, 1, "not_at_device", CREW)
    chain, result = await s.desk.verify(J1)
    assert chain.startswith("chain intact") and result and all(v.ok for v in result.values())
    with pytest.raises(NotFoundError):
        await s.desk.verify("j1")


def bounded(s: Site, bounds: CacheBounds) -> Site:
    """The site with a runner of its own whose caches have these bounds."""
    old = s.desk
    s.desk = RapsRunner(
        redis=s.redis,
        keys=s.keys,
        audit=old.audit,
        promotions=old.promotions,
        clock=s.clock,
        calendar=old.calendar,
        seal=old.seeds.seal,
        seed_source=counter_seeds(),
        bounds=bounds,
    )
    return s
