"""Staff sign-in and sessions (bonusd/access/sessions.py) against the real Redis, on a
ManualClock: a session is a token naming the staff member; wrong PINs are counted before
they are checked, per staff number and per address (a storm sent at once gets exactly the
limit through); an unknown number is answered as a wrong PIN; a disabled account opens
nothing; a session ends after inactivity, at the end of the shift, at sign-out and when
the account's sessions are ended; and the origin check of cookie-borne requests."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from bonusd.access.auth import AuthError, Role, TokenStore
from bonusd.access.sessions import SessionPolicy, SignInRefused, StaffSessions, same_origin
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys

PIN = "482913"
POLICY = SessionPolicy(shift_s=8 * 3600, idle_s=600, pin_attempts=5, pin_lock_s=900)


@pytest.fixture
async def sessions(aredis: Redis, site: str, clock: ManualClock) -> StaffSessions:
    keys = Keys("bonusd", site)
    out = StaffSessions(aredis, keys, TokenStore(aredis, keys), POLICY)
    await out.staff.add(
        number="1042", name="Naledi Mahlangu", role="desk", pin=PIN, now=clock.now()
    )
    await out.staff.add(number="7", name="Sipho Dube", role="crew", pin="11223344", now=clock.now())
    return out


async def _refusal(
    sessions: StaffSessions, number: str, pin: str, now: dt.datetime, client: str = "10.0.0.5"
) -> SignInRefused:
    with pytest.raises(SignInRefused) as refused:
        await sessions.sign_in(number, pin, now, client=client)
    return refused.value


async def test_a_sign_in_is_a_token_naming_the_staff_member(
    sessions: StaffSessions, clock: ManualClock
) -> None:
    member, issued = await sessions.sign_in("1042", PIN, clock.now(), client="10.0.0.5")
    assert member.label == "Naledi Mahlangu (staff 1042)"
    principal = await sessions.tokens.check(issued.token, clock.now())
    assert (principal.role, principal.name, principal.staff) == (
        Role.DESK,
        "Naledi Mahlangu (staff 1042)",
        "1042",
    )
    assert principal.expires == clock.now() + dt.timedelta(hours=8)
    assert PIN not in issued.token


async def test_wrong_pins_count_down_then_lock_the_number_for_15_minutes(
    sessions: StaffSessions, clock: ManualClock
) -> None:
    for left in (4, 3, 2, 1):
        refused = await _refusal(sessions, "1042", "000000", clock.now())
        assert refused.status == 401
        assert f"{left} more wrong PIN" in str(refused)
    locked = await _refusal(sessions, "1042", "000000", clock.now())
    assert (locked.status, locked.retry_after_s) == (423, 900)
    assert "staff number 1042" in str(locked)
    # the right PIN is refused while the lock holds, and is not even checked
    assert (await _refusal(sessions, "1042", PIN, clock.now())).status == 423
    # another staff number is not locked by it
    await sessions.sign_in("7", "11223344", clock.now(), client="10.0.0.5")
    clock.advance(900)
    await sessions.sign_in("1042", PIN, clock.now(), client="10.0.0.5")


async def test_a_storm_of_wrong_pins_at_once_gets_exactly_the_attempts_checked(
    sessions: StaffSessions, clock: ManualClock
) -> None:
    tries = [
        sessions.sign_in("1042", f"{n:06d}", clock.now(), client=f"10.0.1.{n}") for n in range(40)
    ]
    results = await asyncio.gather(*tries, return_exceptions=True)
    statuses = sorted(r.status for r in results if isinstance(r, SignInRefused))
    assert len(statuses) == 40
    assert statuses.count(401) == 4 and statuses.count(423) == 36
    assert (await _refusal(sessions, "1042", PIN, clock.now())).status == 423


async def test_one_address_trying_many_numbers_is_locked_itself(
    aredis: Redis, site: str, clock: ManualClock
) -> None:
    keys = Keys("bonusd", site)
    policy = SessionPolicy(address_attempts=6, address_lock_s=600)
    sessions = StaffSessions(aredis, keys, TokenStore(aredis, keys), policy)
    await sessions.staff.add(number="1042", name="Naledi", role="crew", pin=PIN, now=clock.now())
    for number in ("1", "2", "3", "4", "5"):
        assert (await _refusal(sessions, number, "000000", clock.now())).status == 401
    locked = await _refusal(sessions, "6", "000000", clock.now())
    assert locked.status == 423 and "this device" in str(locked)
    # the address is locked for every number, the right PIN too; another address is not
    assert (await _refusal(sessions, "1042", PIN, clock.now())).status == 423
    await sessions.sign_in("1042", PIN, clock.now(), client="10.0.0.9")


async def test_an_unknown_number_reads_as_a_wrong_pin_and_a_disabled_account_opens_nothing(
    sessions: StaffSessions, clock: ManualClock
) -> None:
    unknown = await _refusal(sessions, "31337", PIN, clock.now())
    wrong = await _refusal(sessions, "7", "999999", clock.now(), client="10.0.0.6")
    assert (unknown.status, str(unknown)) == (wrong.status, str(wrong))
    await sessions.staff.set_disabled("7", True, clock.now())
    assert (await _refusal(sessions, "7", "999999", clock.now(), client="10.0.0.6")).status == 401
    disabled = await _refusal(sessions, "7", "11223344", clock.now(), client="10.0.0.6")
    assert disabled.status == 403 and "disabled" in str(disabled)


async def test_a_session_ends_after_inactivity_unless_kept_alive_and_at_the_shift_end(
    sessions: StaffSessions, clock: ManualClock
) -> None:
    _, issued = await sessions.sign_in("1042", PIN, clock.now())
    tokens = sessions.tokens
    token_id = issued.principal.token_id
    for _ in range(3):  # activity every 9 minutes keeps it open past the 10 idle minutes
        clock.advance(9 * 60)
        principal = await tokens.check(issued.token, clock.now())
        until = await sessions.keep_alive(principal, clock.now())
        assert until == clock.now() + dt.timedelta(minutes=10)
    clock.advance(10 * 60)
    assert await tokens.revoked_among({token_id}, clock.now()) == {token_id}
    with pytest.raises(AuthError, match="inactivity"):
        await tokens.check(issued.token, clock.now())
    # kept alive to the end of the shift, it ends there all the same
    _, second = await sessions.sign_in("1042", PIN, clock.now())
    end = second.principal.expires
    while clock.now() < end - dt.timedelta(minutes=5):
        clock.advance(5 * 60)
        until = await sessions.keep_alive(
            await tokens.check(second.token, clock.now()), clock.now()
        )
        assert until <= end
    clock.set(end)
    with pytest.raises(AuthError, match="expired"):
        await tokens.check(second.token, clock.now())


async def test_signing_out_and_ending_all_sessions_revoke_with_a_reason(
    sessions: StaffSessions, clock: ManualClock, aredis: Redis, site: str
) -> None:
    tokens = sessions.tokens
    _, handheld = await sessions.sign_in("7", "11223344", clock.now())
    _, desk = await sessions.sign_in("7", "11223344", clock.now())
    _, other = await sessions.sign_in("1042", PIN, clock.now())
    await sessions.sign_out(await tokens.check(handheld.token, clock.now()), clock.now())
    with pytest.raises(AuthError, match="signed out"):
        await tokens.check(handheld.token, clock.now())
    async with aredis.pubsub() as pubsub:
        await pubsub.subscribe(Keys("bonusd", site).notify)
        assert await sessions.end_all("7", clock.now(), reason="account disabled") == 1
        heard = await _next_message(pubsub)
    assert heard == f"token-revoked:{desk.principal.token_id}"
    with pytest.raises(AuthError, match="account disabled"):
        await tokens.check(desk.token, clock.now())
    await tokens.check(other.token, clock.now())  # another person's session stays
    assert await aredis.scard(Keys("bonusd", site).staff_sessions("7")) == 0


async def _next_message(pubsub: PubSub) -> str:
    async with asyncio.timeout(5):
        while True:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1)
            if message is not None:
                return str(message["data"])


async def test_the_session_index_forgets_ended_sessions(
    sessions: StaffSessions, clock: ManualClock, aredis: Redis, site: str
) -> None:
    index = Keys("bonusd", site).staff_sessions("1042")
    for _ in range(3):
        await sessions.sign_in("1042", PIN, clock.now())
        clock.advance(11 * 60)  # each ends for inactivity before the next sign-in
    assert await aredis.scard(index) == 1


@pytest.mark.parametrize(
    ("headers", "host", "same"),
    [
        ({"origin": "http://127.0.0.1:8000"}, "127.0.0.1:8000", True),
        ({"origin": "https://bonus.casino.example"}, "bonus.casino.example", True),
        ({"origin": "https://BONUS.casino.example"}, "bonus.casino.example", True),
        ({"referer": "https://bonus.casino.example/desk#draws"}, "bonus.casino.example", True),
        ({"origin": "https://evil.example"}, "bonus.casino.example", False),
        ({"origin": "https://bonus.casino.example.evil.example"}, "bonus.casino.example", False),
        ({"origin": "http://127.0.0.1:9000"}, "127.0.0.1:8000", False),
        ({"origin": "null"}, "127.0.0.1:8000", False),
        ({"origin": "file:///tmp/x.html"}, "", False),
        ({"referer": "javascript:alert(1)"}, "127.0.0.1:8000", False),
        ({}, "127.0.0.1:8000", False),
        (
            {"origin": "https://evil.example", "referer": "http://127.0.0.1:8000/"},
            "127.0.0.1:8000",
            False,
        ),
    ],
)
def test_same_origin(headers: dict[str, str], host: str, same: bool) -> None:
    assert same_origin(headers, host) is same


async def test_a_new_pin_lifts_the_lock_and_ends_the_sessions(
    sessions: StaffSessions, clock: ManualClock
) -> None:
    _, open_session = await sessions.sign_in("7", "11223344", clock.now())
    for _ in range(5):
        await _refusal(sessions, "7", "000000", clock.now())
    assert (await _refusal(sessions, "7", "11223344", clock.now())).status == 423
    member, ended = await sessions.reset_pin("7", "55443322", clock.now())
    assert (member.number, ended) == ("7", 1)
    with pytest.raises(AuthError, match="PIN reset"):
        await sessions.tokens.check(open_session.token, clock.now())
    await sessions.sign_in("7", "55443322", clock.now(), client="10.0.0.5")
