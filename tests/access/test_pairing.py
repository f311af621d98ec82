"""Pairing floor screens by code (bonusd/access/pairing.py) against the real Redis, on a
ManualClock: codes from the unambiguous alphabet, a screen waiting until approved and then
collecting its credential once, codes expiring after 10 minutes, two screens never
holding the same live code, and guesses (codes at the desk, secrets at the claim) limited
per address, per desk token and per screen."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import random
from collections.abc import Callable, Iterator

import pytest
from redis.asyncio import Redis

from bonusd.access.auth import Role, TokenStore
from bonusd.access.pairing import (
    ALPHABET,
    CODE_LENGTH,
    PairingError,
    PairingLimits,
    PairingStarted,
    PairingStore,
    normal_code,
    shown_code,
)
from bonusd.access.ratelimit import Limit
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys

DESK = {"by": "Naledi Mahlangu (staff 1042)", "by_token": "0123456789ab", "client": "10.0.0.5"}


@pytest.fixture
def keys(site: str) -> Keys:
    return Keys("bonusd", site)


@pytest.fixture
def tokens(aredis: Redis, keys: Keys) -> TokenStore:
    return TokenStore(aredis, keys)


@pytest.fixture
def store(aredis: Redis, keys: Keys, tokens: TokenStore) -> PairingStore:
    return PairingStore(aredis, keys, tokens)


def scripted(*codes: str) -> Callable[[str], str]:
    """A chooser drawing `codes` in turn (then random ones): screens that draw a clash."""
    chars: Iterator[str] = itertools.chain.from_iterable(codes)

    def choose(alphabet: str) -> str:
        return next(chars, None) or random.choice(alphabet)

    return choose


async def _start(
    store: PairingStore, clock: ManualClock, client: str = "10.0.9.1"
) -> PairingStarted:
    return await store.start(width=1920, height=1080, client=client, now=clock.now())


async def _approve(store: PairingStore, code: str, clock: ManualClock, **who: str) -> None:
    await store.approve(code, area="main", name="Bar 3", now=clock.now(), **(DESK | who))


def test_codes_read_as_typed() -> None:
    assert normal_code("k7m-4qx") == "K7M4QX"
    assert normal_code(" K7M 4QX ") == "K7M4QX"
    assert shown_code("K7M4QX") == "K7M-4QX"
    for ambiguous in ("K7M4Q0", "K7M4QO", "K7M4Q1", "K7M4QI", "K7M4QL", "K7M4QU", "K7M4Q"):
        assert normal_code(ambiguous) == "", ambiguous
    assert not set("01ILOUVAE") & set(ALPHABET)  # no look-alikes, no vowels (no words)


async def test_a_screen_waits_until_approved_then_collects_its_credential_once(
    store: PairingStore, tokens: TokenStore, clock: ManualClock, aredis: Redis, keys: Keys
) -> None:
    started = await _start(store, clock)
    assert len(started.code) == CODE_LENGTH and set(started.code) <= set(ALPHABET)
    assert started.expires == clock.now() + dt.timedelta(minutes=10)
    # only the secret's digest is kept; nothing of it in any key or value of the site
    stored = await aredis.hgetall(keys.pairing(started.pairing_id))
    secret_part = started.secret.rsplit("_", 1)[1]
    assert secret_part not in str(stored) and stored["digest"]
    waiting = await store.claim(started.secret, client="10.0.9.1", now=clock.now())
    assert waiting.credential is None and waiting.code == started.code
    assert await store.waiting(clock.now()) == 1

    clock.advance(30)
    await _approve(store, shown_code(started.code).lower(), clock)
    clock.advance(3)
    paired = await store.claim(started.secret, client="10.0.9.1", now=clock.now())
    assert paired.credential is not None
    principal = await tokens.check(paired.credential.token, clock.now())
    assert (principal.role, principal.area, principal.name) == (Role.SIGNAGE, "main", "Bar 3")
    record = await aredis.hgetall(keys.token(principal.token_id))
    assert record["paired_by"] == DESK["by"] and record["paired_at"]
    assert (record["width"], record["height"], record["address"]) == ("1920", "1080", "10.0.9.1")
    assert await store.waiting(clock.now()) == 0
    # given once: the pairing is gone, and the code can pair nothing else
    with pytest.raises(PairingError) as again:
        await store.claim(started.secret, client="10.0.9.1", now=clock.now())
    assert again.value.status == 401
    with pytest.raises(PairingError) as reused:
        await _approve(store, started.code, clock)
    assert reused.value.status == 404


async def test_two_polls_at_once_collect_one_credential(
    store: PairingStore, clock: ManualClock
) -> None:
    started = await _start(store, clock)
    await _approve(store, started.code, clock)
    claims = [store.claim(started.secret, client="10.0.9.1", now=clock.now()) for _ in range(8)]
    results = await asyncio.gather(*claims, return_exceptions=True)
    paired = [r for r in results if not isinstance(r, BaseException) and r.credential]
    assert len(paired) == 1
    assert all(isinstance(r, PairingError) and r.status == 401 for r in results if r not in paired)


async def test_a_code_expires_after_ten_minutes(store: PairingStore, clock: ManualClock) -> None:
    started = await _start(store, clock)
    clock.advance(599)
    assert (await store.claim(started.secret, client="", now=clock.now())).credential is None
    clock.advance(1)
    with pytest.raises(PairingError) as expired:
        await store.claim(started.secret, client="", now=clock.now())
    assert expired.value.status == 410 and "start a new one" in str(expired.value)
    with pytest.raises(PairingError) as late:
        await _approve(store, started.code, clock)
    assert late.value.status == 404
    assert await store.waiting(clock.now()) == 0


async def test_an_approved_screen_has_ten_more_minutes_to_collect(
    store: PairingStore, clock: ManualClock
) -> None:
    started = await _start(store, clock)
    clock.advance(590)
    await _approve(store, started.code, clock)
    clock.advance(300)  # past the code's own ten minutes
    paired = await store.claim(started.secret, client="", now=clock.now())
    assert paired.credential is not None


async def test_two_screens_never_hold_the_same_live_code(
    aredis: Redis, keys: Keys, tokens: TokenStore, clock: ManualClock
) -> None:
    store = PairingStore(aredis, keys, tokens, choose=scripted("K7M4QX", "K7M4QX", "23456B"))
    first = await _start(store, clock)
    second = await _start(store, clock)  # drew K7M4QX too: drew again
    assert (first.code, second.code) == ("K7M4QX", "23456B")
    await _approve(store, "K7M-4QX", clock)
    assert (await store.claim(first.secret, client="", now=clock.now())).credential is not None
    assert (await store.claim(second.secret, client="", now=clock.now())).credential is None

    # a code whose screen's time is up is free again, and pairs only the new screen
    clock.advance(600)
    reuse = PairingStore(aredis, keys, tokens, choose=scripted("23456B"))
    third = await _start(reuse, clock)
    assert third.code == "23456B"
    await _approve(store, "23456B", clock, by_token="ba9876543210", client="10.0.0.6")
    assert (await store.claim(third.secret, client="", now=clock.now())).credential is not None
    with pytest.raises(PairingError) as gone:
        await store.claim(second.secret, client="", now=clock.now())
    assert gone.value.status == 410


async def test_screens_starting_together_all_get_different_codes(
    aredis: Redis, keys: Keys, tokens: TokenStore, clock: ManualClock
) -> None:
    """Twenty screens at once, drawing from 64 codes only: clashes are drawn again, and no
    two screens end up with one code."""
    narrow = PairingStore(aredis, keys, tokens, choose=lambda _: random.choice("23"))
    started = await asyncio.gather(*(_start(narrow, clock, f"10.0.1.{n}") for n in range(20)))
    assert len({s.code for s in started}) == 20


async def test_guessed_codes_are_limited_per_address_and_per_desk_token(
    store: PairingStore, clock: ManualClock
) -> None:
    started = await _start(store, clock)
    wrong = next(c for c in ("2222222", "223344", "ZZZZZZ") if c != started.code)
    for _ in range(10):
        with pytest.raises(PairingError) as miss:
            await _approve(store, wrong, clock)
        assert miss.value.status == 404
    with pytest.raises(PairingError) as locked:  # even the right code, from there
        await _approve(store, started.code, clock)
    assert locked.value.status == 429 and locked.value.retry_after_s
    with pytest.raises(PairingError) as same_token:  # the same desk token elsewhere
        await _approve(store, started.code, clock, client="10.0.0.77")
    assert same_token.value.status == 429
    # another desk at another address pairs it
    await _approve(store, started.code, clock, by_token="ba9876543210", client="10.0.0.77")
    clock.advance(600)  # the window ends
    again = await _start(store, clock)
    await _approve(store, again.code, clock)


async def test_guessed_secrets_are_limited_per_screen_and_per_address(
    store: PairingStore, clock: ManualClock
) -> None:
    started = await _start(store, clock)
    forged = started.secret[:-4] + "AAAA"
    for n in range(10):  # from ten addresses: the screen's own count stops them
        with pytest.raises(PairingError) as wrong:
            await store.claim(forged, client=f"10.0.2.{n}", now=clock.now())
        assert wrong.value.status == 401
    with pytest.raises(PairingError) as locked:
        await store.claim(started.secret, client="10.0.9.1", now=clock.now())
    assert locked.value.status == 429 and "pairing" in str(locked.value)
    # one address guessing secrets of made-up pairings
    for n in range(30):
        with pytest.raises(PairingError):
            await store.claim(f"sp_{n:012x}_{'A' * 43}", client="10.0.3.3", now=clock.now())
    with pytest.raises(PairingError) as flood:
        await store.claim("sp_nonsense", client="10.0.3.3", now=clock.now())
    assert flood.value.status == 429 and "client 10.0.3.3" in str(flood.value)


async def test_starts_are_limited_per_address_and_in_all(
    aredis: Redis, keys: Keys, tokens: TokenStore, clock: ManualClock
) -> None:
    limits = PairingLimits(starts_per_client=Limit(3, 600), waiting=5)
    store = PairingStore(aredis, keys, tokens, limits=limits)
    for _ in range(3):
        await _start(store, clock, "10.0.4.1")
    with pytest.raises(PairingError) as per_address:
        await _start(store, clock, "10.0.4.1")
    assert per_address.value.status == 429
    await _start(store, clock, "10.0.4.2")
    await _start(store, clock, "10.0.4.3")
    with pytest.raises(PairingError) as full:
        await _start(store, clock, "10.0.4.4")
    assert full.value.status == 503 and "waiting to be paired" in str(full.value)
    clock.advance(600)  # their codes expire: room again
    await _start(store, clock, "10.0.4.4")


@pytest.mark.parametrize(
    ("area", "name", "says"),
    [
        ("Main!", "Bar 3", "an area is"),
        ("main", "Bar\u202e3", "U+202E"),
        ("main", "Bar\n3", "U+000A"),
        ("main", "  ", "needs a name"),
        ("main", "x" * 61, "at most 60"),
    ],
)
async def test_approving_refuses_a_bad_area_or_name(
    store: PairingStore, clock: ManualClock, area: str, name: str, says: str
) -> None:
    started = await _start(store, clock)
    with pytest.raises(PairingError) as refused:
        await store.approve(started.code, area=area, name=name, now=clock.now(), **DESK)
    assert refused.value.status == 422 and says in str(refused.value)
    assert (await store.claim(started.secret, client="", now=clock.now())).credential is None
