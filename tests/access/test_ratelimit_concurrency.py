"""Every rate limit holds when requests arrive all at once: eighty fired together
(asyncio.gather over httpx against a running daemon, or straight at the token store)
get exactly the limit through and the rest 429. The count is judged in the same Redis
step that makes it (bonusd/access/ratelimit.py), never read first and counted after.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from bonusd.access.auth import AuthError, Role, TokenStore
from bonusd.access.ratelimit import Limit, RateLimits
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys
from bonusd.settings import Settings
from tests.daemon_helpers import PROJECT, SAST, Daemon, running

# four times the largest limit below, all in flight at once: a count read first and made
# after would let several of them through (a bigger burst proves nothing more, slower)
BURST = 80
GH = "golden-horse-mega-points-chase"
HALFWAY = f"/promotions/{GH}/draws/halfway"
MEMBERS = "card,name,tier\n1001,A Member,Q\n1002,B Member,J\n"


async def _burst(n: int, send: Callable[[int], Awaitable[int]]) -> Counter[int]:
    """Fire `n` requests at once; how many got each status."""
    return Counter(await asyncio.gather(*(send(i) for i in range(n))))


def _client(d: Daemon, token: str = "") -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        base_url=str(d.http.base_url),
        headers=headers,
        timeout=30,
        limits=httpx.Limits(max_connections=BURST, max_keepalive_connections=BURST),
    )


async def test_bad_tokens_from_one_client_at_once_get_exactly_the_limit_of_401s(
    settings: Settings, clock: ManualClock
) -> None:
    """The red-team case: a burst of bad tokens at once from one address, limit 20."""
    cfg = settings.model_copy(update={"limit_auth_failures_per_client": 20})
    async with running(cfg, clock) as d, _client(d) as c:

        async def send(i: int) -> int:
            bad = f"bd_{i:012x}_guess"  # a different token id each: only the address counts
            return (
                await c.get("/deadletters", headers={"Authorization": f"Bearer {bad}"})
            ).status_code

        assert await _burst(BURST, send) == {401: 20, 429: BURST - 20}


async def test_guesses_at_one_token_id_at_once_compare_exactly_the_limit(
    settings: Settings, clock: ManualClock
) -> None:
    """Guessing one id's secret: at most the per-token limit of secrets are compared
    (answered 401); the rest are refused before comparing. The real secret among the
    late ones is refused too: the id is locked for the window."""
    cfg = settings.model_copy(
        update={"limit_auth_failures_per_client": 10_000, "limit_auth_failures_per_token": 10}
    )
    async with running(cfg, clock) as d, _client(d) as c:
        issued = await d.service.tokens.issue(
            role=Role.DESK, name="desk", now=clock.now(), valid_for=dt.timedelta(days=1)
        )
        token_id = issued.principal.token_id

        async def send(i: int) -> int:
            guess = f"bd_{token_id}_guess{i}"
            return (
                await c.get("/deadletters", headers={"Authorization": f"Bearer {guess}"})
            ).status_code

        assert await _burst(BURST, send) == {401: 10, 429: BURST - 10}
        real = await c.get("/deadletters", headers={"Authorization": f"Bearer {issued.token}"})
        assert real.status_code == 429


async def test_a_revoked_token_at_once_gets_exactly_the_limit_of_401s(
    settings: Settings, clock: ManualClock
) -> None:
    """A revoked token (its secret right) counts as a failure through the same limits."""
    cfg = settings.model_copy(
        update={"limit_auth_failures_per_client": 10_000, "limit_auth_failures_per_token": 10}
    )
    async with running(cfg, clock) as d:
        issued = await d.service.tokens.issue(
            role=Role.DESK, name="lost", now=clock.now(), valid_for=dt.timedelta(days=1)
        )
        await d.service.tokens.revoke(issued.principal.token_id, clock.now())
        async with _client(d, issued.token) as c:

            async def send(_: int) -> int:
                return (await c.get("/deadletters")).status_code

            assert await _burst(BURST, send) == {401: 10, 429: BURST - 10}


async def test_the_token_store_counts_concurrent_failures_exactly(
    redis_url: str, site: str
) -> None:
    """Straight at `TokenStore.check`, no HTTP in between (a connection per check)."""
    now = dt.datetime(2026, 10, 3, 20, 0, 1, tzinfo=SAST)
    limits = RateLimits(auth_failures_per_client=Limit(20, 300))
    redis = Redis.from_url(redis_url, decode_responses=True, max_connections=BURST + 10)
    store = TokenStore(redis, Keys("bonusd", site), limits)

    async def check(i: int) -> int:
        try:
            await store.check(f"bd_{i:012x}_guess", now, client="10.0.0.7")
        except AuthError as exc:
            return exc.status
        return 200

    try:
        assert await _burst(BURST, check) == {401: 20, 429: BURST - 20}
        # another address is not held off
        assert await _burst(1, lambda _: _other(store, now)) == {401: 1}
    finally:
        await redis.aclose()


async def _other(store: TokenStore, now: dt.datetime) -> int:
    try:
        await store.check("bd_0123456789ab_guess", now, client="10.0.0.8")
    except AuthError as exc:
        return exc.status
    return 200


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return settings.model_copy(update={"promotions": folder})


async def _kiosk_daemon_burst(
    cfg: Settings, path: str, body: Callable[[int], dict[str, str]] | None
) -> Counter[int]:
    clock = ManualClock(dt.datetime(2026, 10, 10, 9, 0, 0, tzinfo=SAST))
    async with running(cfg, clock) as d:
        r = await d.http.post(
            "/members/import", content=MEMBERS, headers={"content-type": "text/csv"}
        )
        assert r.status_code == 200, r.text
        issued = await d.service.tokens.issue(
            role=Role.KIOSK, name="kiosk", now=clock.now(), valid_for=dt.timedelta(days=1)
        )
        async with _client(d, issued.token) as c:

            async def send(i: int) -> int:
                if body is None:
                    return (await c.get(path)).status_code
                return (await c.post(path, json=body(i))).status_code

            return await _burst(BURST, send)


async def test_activations_of_one_card_at_once_get_exactly_the_limit_through(
    gh_settings: Settings,
) -> None:
    cfg = gh_settings.model_copy(update={"limit_activations_per_card": 6})
    got = await _kiosk_daemon_burst(
        cfg, f"{HALFWAY}/activations", lambda _: {"card": "1001", "channel": "kiosk"}
    )
    assert got == {409: 6, 429: BURST - 6}  # 409: activation opens on 07 Nov


async def test_activations_of_one_kiosk_at_once_get_exactly_the_limit_through(
    gh_settings: Settings,
) -> None:
    cfg = gh_settings.model_copy(update={"limit_activations_per_token": 20})
    got = await _kiosk_daemon_burst(
        cfg, f"{HALFWAY}/activations", lambda i: {"card": f"C{i}", "channel": "kiosk"}
    )
    assert got == {404: 20, 429: BURST - 20}  # 404: the cards are no members


async def test_standings_lookups_at_once_get_exactly_the_limit_through(
    gh_settings: Settings,
) -> None:
    cfg = gh_settings.model_copy(update={"limit_standings_per_card": 10})
    got = await _kiosk_daemon_burst(cfg, f"{HALFWAY}/standings/1001", None)
    assert got == {200: 10, 429: BURST - 10}
