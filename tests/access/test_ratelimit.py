"""Rate limits on real daemons: failed token checks per client address and per token id
(429 with Retry-After, shared by the daemons of a site), activations and kiosk standings
lookups per card and per kiosk token; each limit lifts when the clock leaves its window (a
manual clock, no sleeps). Requests arriving all at once: test_ratelimit_concurrency.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import free_port
from tests.daemon_helpers import PROJECT, SAST, Daemon, running
from tests.push.helpers import closed_with, connect

GH = "golden-horse-mega-points-chase"
ACTIVATIONS = f"/promotions/{GH}/draws/halfway/activations"
STANDINGS = f"/promotions/{GH}/draws/halfway/standings"
MEMBERS = "card,name,tier\n1001,A Member,Q\n1002,B Member,J\n1003,C Member,K\n1004,D Member,A\n"


def _limited(settings: Settings, **limits: int) -> Settings:
    return settings.model_copy(update=limits)


async def _get(d: Daemon, token: str, path: str = "/deadletters") -> httpx.Response:
    async with httpx.AsyncClient(base_url=str(d.http.base_url)) as c:
        return await c.get(path, headers={"Authorization": f"Bearer {token}"})


async def _desk_token(d: Daemon) -> str:
    issued = await d.service.tokens.issue(
        role=Role.DESK, name="desk", now=d.service.clock.now(), valid_for=dt.timedelta(days=9)
    )
    return issued.token


async def test_bad_tokens_from_one_client_get_429_until_the_window_ends(
    settings: Settings, clock: ManualClock
) -> None:
    cfg = _limited(settings, limit_auth_failures_per_client=3, limit_auth_window_s=300)
    clock.set(dt.datetime(2026, 10, 3, 20, 0, 0, tzinfo=SAST))  # a window starts on the hour
    async with running(cfg, clock) as d:
        good = await _desk_token(d)
        for n in range(3):  # garbage, forged and unknown tokens all count
            r = await _get(d, ("not-a-token", f"bd_{n:012x}_nope", "bd_x_y")[n])
            assert r.status_code == 401, r.text
        refused = await _get(d, "bd_000000000009_guess")
        assert refused.status_code == 429, refused.text
        assert refused.headers["Retry-After"] == "300"
        assert "failed token checks for client 127.0.0.1" in refused.json()["detail"]
        # the address is held off whatever it sends, a valid token too
        assert (await _get(d, good)).status_code == 429
        # tokenless requests are not login attempts: still a plain 401
        async with httpx.AsyncClient(base_url=str(d.http.base_url)) as anonymous:
            assert (await anonymous.get("/deadletters")).status_code == 401

        clock.advance(299)
        blocked = await _get(d, good)
        assert blocked.status_code == 429
        assert blocked.headers["Retry-After"] == "1"
        clock.advance(1)  # the next window
        assert (await _get(d, good)).status_code == 200
        assert (await _get(d, "bd_000000000009_guess")).status_code == 401


async def test_guessing_one_token_id_locks_that_id_only(
    settings: Settings, clock: ManualClock
) -> None:
    cfg = _limited(
        settings,
        limit_auth_failures_per_client=100,
        limit_auth_failures_per_token=2,
        limit_auth_window_s=60,
    )
    async with running(cfg, clock) as d:
        target, other = await _desk_token(d), await _desk_token(d)
        token_id = target.split("_")[1]
        for guess in ("AAAA", "BBBB"):
            assert (await _get(d, f"bd_{token_id}_{guess}")).status_code == 401
        locked = await _get(d, target)
        assert locked.status_code == 429
        assert f"token {token_id}" in locked.json()["detail"]
        assert int(locked.headers["Retry-After"]) <= 60
        assert (await _get(d, other)).status_code == 200  # the client itself is not blocked
        clock.advance(60)
        assert (await _get(d, target)).status_code == 200


async def test_two_daemons_of_a_site_share_the_count(
    settings: Settings, clock: ManualClock
) -> None:
    """Failures at one daemon count at the other (the count is in Redis)."""
    first = _limited(settings, limit_auth_failures_per_client=4)
    second = first.model_copy(
        update={"http_port": free_port(), "mqtt_client_id": f"{settings.client_id}-b"}
    )
    async with running(first, clock) as a, running(second, clock) as b:
        good = await _desk_token(a)
        for d in (a, b, a, b):
            assert (await _get(d, "bd_0123456789ab_wrong")).status_code == 401
        assert (await _get(a, good)).status_code == 429
        assert (await _get(b, good)).status_code == 429


def test_the_schema_documents_429_on_guarded_routes_and_activations(settings: Settings) -> None:
    paths = Service(settings).app.openapi()["paths"]
    activation = paths["/promotions/{promotion}/draws/{draw}/activations"]["post"]
    assert "429" in activation["responses"]
    assert "429" in paths["/deadletters"]["get"]["responses"]
    assert "429" not in paths["/health"]["get"]["responses"]  # public: no token, no limit


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return settings.model_copy(update={"promotions": folder})


async def test_activations_are_limited_per_card_and_per_kiosk(gh_settings: Settings) -> None:
    cfg = _limited(
        gh_settings,
        limit_activations_per_card=2,
        limit_activations_per_token=5,
        limit_activation_window_s=60,
    )
    # activation of the halfway draw opens on 07 Nov 08:00: before it every attempt is a
    # plain refusal (409), which still counts against the limits
    clock = ManualClock(dt.datetime(2026, 10, 10, 9, 0, 30, tzinfo=SAST))
    async with running(cfg, clock) as d:
        r = await d.http.post(
            "/members/import", content=MEMBERS, headers={"content-type": "text/csv"}
        )
        assert r.status_code == 200, r.text
        kiosk, other_kiosk = await d.client(Role.KIOSK), await d.client(Role.KIOSK)
        try:

            async def activate(client: httpx.AsyncClient, card: str) -> httpx.Response:
                return await client.post(ACTIVATIONS, json={"card": card, "channel": "kiosk"})

            assert [(await activate(kiosk, "1001")).status_code for _ in range(2)] == [409, 409]
            third = await activate(kiosk, "1001")
            assert third.status_code == 429
            assert third.headers["Retry-After"] == "30"
            assert "activations for card 1001" in third.json()["detail"]
            # the card is held off at every kiosk; other cards are not
            assert (await activate(other_kiosk, "1001")).status_code == 429
            assert (await activate(kiosk, "1002")).status_code == 409
            assert (await activate(kiosk, "1003")).status_code == 409
            # five attempts from this kiosk token in the window (the 429 above counted)
            busy = await activate(kiosk, "1004")
            assert busy.status_code == 429
            assert (
                f"token {busy.request.headers['Authorization'].split('_')[1]}"
                in (busy.json()["detail"])
            )
            assert (await activate(other_kiosk, "1004")).status_code == 409

            clock.advance(30)  # the next window
            assert (await activate(kiosk, "1001")).status_code == 409
        finally:
            await kiosk.aclose()
            await other_kiosk.aclose()


async def test_kiosk_standings_lookups_are_limited_per_card_and_per_kiosk_token(
    gh_settings: Settings,
) -> None:
    """A card that is no member is counted like any other (a 429 tells nothing about it);
    the desk's lookups are not limited."""
    cfg = _limited(
        gh_settings,
        limit_standings_per_card=2,
        limit_standings_per_token=6,
        limit_standings_window_s=60,
    )
    clock = ManualClock(dt.datetime(2026, 10, 10, 9, 0, 30, tzinfo=SAST))
    async with running(cfg, clock) as d:
        r = await d.http.post(
            "/members/import", content=MEMBERS, headers={"content-type": "text/csv"}
        )
        assert r.status_code == 200, r.text
        kiosk, other_kiosk = await d.client(Role.KIOSK), await d.client(Role.KIOSK)
        desk = await d.client(Role.DESK)
        try:

            async def look(client: httpx.AsyncClient, card: str) -> httpx.Response:
                return await client.get(f"{STANDINGS}/{card}")

            for card in ("1001", "9999"):  # a member, and a card that is no member
                assert [(await look(kiosk, card)).status_code for _ in range(2)] == [200, 200]
                third = await look(kiosk, card)
                assert third.status_code == 429
                assert third.headers["Retry-After"] == "30"
                assert f"standings lookups for card {card}" in third.json()["detail"]
                assert (await look(other_kiosk, card)).status_code == 429  # at every kiosk
            # six lookups from this kiosk token in the window (the 429s counted)
            busy = await look(kiosk, "1002")
            assert busy.status_code == 429
            assert "standings lookups for token" in busy.json()["detail"]
            assert (await look(other_kiosk, "1002")).status_code == 200
            for _ in range(5):
                assert (await look(desk, "1001")).status_code == 200

            clock.advance(30)  # the next window
            assert (await look(kiosk, "1001")).status_code == 200
        finally:
            for c in (kiosk, other_kiosk, desk):
                await c.aclose()


async def test_bad_tokens_on_the_live_streams_count_too(
    settings: Settings, clock: ManualClock
) -> None:
    """The first frame of /ws/crew is a token check like any other (refused: 4401, then,
    past the limit, 4403 saying to wait)."""
    cfg = _limited(settings, limit_auth_failures_per_client=2)
    async with running(cfg, clock) as d:
        codes = []
        for guess in ("bd_0123456789ab_a", "bd_0123456789ac_b", "bd_0123456789ad_c"):
            ws = await connect(d, "/ws/crew", {"token": guess})
            codes.append(await closed_with(ws))
        assert [code for code, _ in codes] == [4401, 4401, 4403]
        assert "too many failed token checks for client 127.0.0.1" in codes[2][1]
        assert (await _get(d, await _desk_token(d))).status_code == 429  # and over HTTP
