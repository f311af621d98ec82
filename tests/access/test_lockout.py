"""The wrong-PIN lockout (bonusd/access/lockout.py) against the real Redis, on a ManualClock:
tries arriving together are counted one by one, the lock lifts after `lock_s` of the
clock (not of Redis), a right PIN clears the count, and old tries are forgotten."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis

from bonusd.access.lockout import Lockout, LockState
from bonusd.access.pins import hash_pin, verify_pin
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys

ATTEMPTS, LOCK_S = 5, 900
CARD = "1001"


@pytest.fixture
def lockout(aredis: Redis, site: str) -> Lockout:
    return Lockout(aredis, Keys("bonusd", site), "kiosk-pin", attempts=ATTEMPTS, lock_s=LOCK_S)


async def test_a_fresh_card_has_every_try_left(lockout: Lockout, clock: ManualClock) -> None:
    assert await lockout.state(CARD, clock.now()) == LockState(False, 0, ATTEMPTS)


async def test_wrong_tries_count_down_and_the_last_locks(
    lockout: Lockout, clock: ManualClock
) -> None:
    for left in range(ATTEMPTS - 1, 0, -1):
        assert await lockout.failed(CARD, clock.now()) == LockState(False, 0, left, True)
        clock.advance(10)
    assert await lockout.failed(CARD, clock.now()) == LockState(True, LOCK_S, 0, True)
    clock.advance(1)
    assert await lockout.state(CARD, clock.now()) == LockState(True, LOCK_S - 1, 0)
    # while locked nothing is counted: the lock does not grow with more tries
    assert await lockout.failed(CARD, clock.now()) == LockState(True, LOCK_S - 1, 0, False)


async def test_a_storm_of_concurrent_wrong_tries_counts_exactly_the_attempts(
    lockout: Lockout, clock: ManualClock, aredis: Redis, site: str
) -> None:
    states = await asyncio.gather(*(lockout.failed(CARD, clock.now()) for _ in range(50)))
    counted = [s for s in states if s.counted]
    assert len(counted) == ATTEMPTS
    assert sorted(s.left for s in counted) == list(range(ATTEMPTS))  # 4, 3, 2, 1 and 0
    assert [s.locked for s in counted].count(True) == 1  # exactly one try locked the card
    assert all(s.locked and s.retry_after_s == LOCK_S for s in states if not s.counted)
    stored = await aredis.hget(Keys("bonusd", site).lockout("kiosk-pin", CARD), "n")
    assert stored == str(ATTEMPTS)


async def test_counting_before_checking_lets_only_the_attempts_be_checked(
    lockout: Lockout, clock: ManualClock
) -> None:
    """The kiosk's order (the module's text): count, then check the PIN in a thread. Fifty
    guesses sent together get exactly `attempts` PIN checks, not fifty."""
    pin_hash = hash_pin("4321")
    checked: list[str] = []

    async def guess(pin: str) -> str:
        state = await lockout.failed(CARD, clock.now())
        if not state.counted:
            return "locked"
        checked.append(pin)
        if await asyncio.to_thread(verify_pin, pin_hash, pin):
            await lockout.cleared(CARD)
            return "right"
        return "locked" if state.locked else "wrong"

    outcomes = await asyncio.gather(*(guess(f"{n:04d}") for n in range(50)))
    assert len(checked) == ATTEMPTS
    assert outcomes.count("wrong") == ATTEMPTS - 1
    assert outcomes.count("locked") == 50 - ATTEMPTS + 1


async def test_the_lock_lifts_after_lock_s_on_the_clock(
    lockout: Lockout, clock: ManualClock
) -> None:
    for _ in range(ATTEMPTS):
        await lockout.failed(CARD, clock.now())
    clock.advance(LOCK_S - 1)
    assert await lockout.state(CARD, clock.now()) == LockState(True, 1, 0)
    clock.advance(1)
    assert await lockout.state(CARD, clock.now()) == LockState(False, 0, ATTEMPTS)
    # a fresh count: the next wrong try is the first of a new series, not a new lock
    assert await lockout.failed(CARD, clock.now()) == LockState(False, 0, ATTEMPTS - 1, True)


async def test_a_right_pin_clears_the_count(lockout: Lockout, clock: ManualClock) -> None:
    for _ in range(ATTEMPTS - 1):
        await lockout.failed(CARD, clock.now())
    await lockout.cleared(CARD)
    assert await lockout.state(CARD, clock.now()) == LockState(False, 0, ATTEMPTS)
    assert (await lockout.failed(CARD, clock.now())).left == ATTEMPTS - 1


async def test_a_right_pin_on_the_locking_try_lifts_the_lock(
    lockout: Lockout, clock: ManualClock
) -> None:
    """Counted first, the last allowed try locks before it is checked; right, it clears."""
    for _ in range(ATTEMPTS):
        state = await lockout.failed(CARD, clock.now())
    assert state.locked and state.counted
    await lockout.cleared(CARD)
    assert not (await lockout.state(CARD, clock.now())).locked


async def test_old_wrong_tries_are_forgotten_after_the_window(
    aredis: Redis, site: str, clock: ManualClock
) -> None:
    lockout = Lockout(
        aredis, Keys("bonusd", site), "kiosk-pin", attempts=3, lock_s=900, window_s=60
    )
    await lockout.failed(CARD, clock.now())
    await lockout.failed(CARD, clock.now())
    clock.advance(60)
    assert await lockout.state(CARD, clock.now()) == LockState(False, 0, 3)
    assert await lockout.failed(CARD, clock.now()) == LockState(False, 0, 2, True)


async def test_subjects_and_scopes_are_counted_apart(
    aredis: Redis, site: str, clock: ManualClock, lockout: Lockout
) -> None:
    staff = Lockout(aredis, Keys("bonusd", site), "staff-pin", attempts=2, lock_s=60)
    for _ in range(ATTEMPTS):
        await lockout.failed(CARD, clock.now())
    assert (await lockout.state(CARD, clock.now())).locked
    assert await lockout.state("1002", clock.now()) == LockState(False, 0, ATTEMPTS)
    assert await staff.state(CARD, clock.now()) == LockState(False, 0, 2)


async def test_the_redis_expiry_outlasts_the_lock(
    lockout: Lockout, clock: ManualClock, aredis: Redis, site: str
) -> None:
    """Housekeeping never lifts a lock early on a real clock: the key outlives it."""
    for _ in range(ATTEMPTS):
        await lockout.failed(CARD, clock.now())
    ttl = await aredis.ttl(Keys("bonusd", site).lockout("kiosk-pin", CARD))
    assert ttl > LOCK_S


def test_a_lockout_refuses_nonsense_settings(aredis: Redis, site: str) -> None:
    keys = Keys("bonusd", site)
    with pytest.raises(ValueError, match="attempts >= 1"):
        Lockout(aredis, keys, "kiosk-pin", attempts=0, lock_s=900)
    with pytest.raises(ValueError, match="lock_s >= 1"):
        Lockout(aredis, keys, "kiosk-pin", attempts=5, lock_s=0)
