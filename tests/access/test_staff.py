"""Staff accounts (bonusd/access/staff.py) against the real Redis: the rules for numbers,
names, roles and PINs (a name with a control or text-direction character is refused, a
PIN is never repeated in an error), a number taken once, disabling and a new PIN."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis

from bonusd.access.auth import Role
from bonusd.access.pins import verify_pin
from bonusd.access.staff import StaffError, StaffStore
from bonusd.clocks.clock import ManualClock
from bonusd.errors import ConflictError, NotFoundError
from bonusd.infra.keys import Keys

PIN = "482913"


@pytest.fixture
def store(aredis: Redis, site: str) -> StaffStore:
    return StaffStore(aredis, Keys("bonusd", site))


async def test_an_account_is_kept_with_a_hash_of_its_pin_only(
    store: StaffStore, clock: ManualClock, aredis: Redis, site: str
) -> None:
    added = await store.add(
        number="1042", name="  Naledi Mahlangu ", role="desk", pin=PIN, now=clock.now()
    )
    assert (added.number, added.name, added.role, added.disabled) == (
        "1042",
        "Naledi Mahlangu",
        Role.DESK,
        False,
    )
    assert added.label == "Naledi Mahlangu (staff 1042)"
    assert await store.get("1042") == added
    assert [m.number for m in await store.list()] == ["1042"]
    raw = await aredis.hgetall(Keys("bonusd", site).staff("1042"))
    assert PIN not in "".join(raw.values())
    assert verify_pin(await store.pin_hash("1042"), PIN)
    assert await store.get("9999") is None
    assert await store.pin_hash("not a number!") == ""


async def test_a_staff_number_is_taken_once_even_when_added_at_once(
    store: StaffStore, clock: ManualClock
) -> None:
    results = await asyncio.gather(
        *(
            store.add(number="77", name=f"Person {n}", role="crew", pin=PIN, now=clock.now())
            for n in range(4)
        ),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert all(isinstance(r, ConflictError) for r in results if isinstance(r, BaseException))
    assert len(await store.list()) == 1


@pytest.mark.parametrize(
    ("number", "name", "role", "pin", "says"),
    [
        ("10 42", "Ann", "crew", PIN, "staff number"),
        ("1042\n", "Ann", "crew", PIN, "staff number"),
        ("x" * 17, "Ann", "crew", PIN, "staff number"),
        ("١٠٤٢", "Ann", "crew", PIN, "staff number"),  # Arabic-Indic digits
        ("1042", "Ann\u202eeviL", "crew", PIN, "control or text-direction"),
        ("1042", "Ann\x1b[31m", "crew", PIN, "control or text-direction"),
        ("1042", "Ann\nBob", "crew", PIN, "control or text-direction"),
        ("1042", "   ", "crew", PIN, "1 to 80 characters"),
        ("1042", "A" * 81, "crew", PIN, "1 to 80 characters"),
        ("1042", "Ann", "kiosk", PIN, "crew, desk or admin"),
        ("1042", "Ann", "signage", PIN, "crew, desk or admin"),
        ("1042", "Ann", "crew", "1234", "6 to 8 digits"),
        ("1042", "Ann", "crew", "12345678901", "6 to 8 digits"),
        ("1042", "Ann", "crew", "12a456", "6 to 8 digits"),
        ("1042", "Ann", "crew", "١٢٣٤٥٦", "6 to 8 digits"),
    ],
)
async def test_bad_numbers_names_roles_and_pins_are_refused_and_named(
    store: StaffStore, clock: ManualClock, *, number: str, name: str, role: str, pin: str, says: str
) -> None:
    with pytest.raises(StaffError, match=says) as refused:
        await store.add(number=number, name=name, role=role, pin=pin, now=clock.now())
    if pin != PIN:
        assert pin not in str(refused.value)
    assert await store.list() == []


async def test_disable_enable_and_a_new_pin(store: StaffStore, clock: ManualClock) -> None:
    await store.add(number="5", name="Sipho Dube", role="crew", pin=PIN, now=clock.now())
    clock.advance(60)
    disabled = await store.set_disabled("5", True, clock.now())
    assert disabled.disabled and disabled.changed == clock.now().isoformat()
    assert not (await store.set_disabled("5", False, clock.now())).disabled
    await store.set_pin("5", "55667788", clock.now())
    assert verify_pin(await store.pin_hash("5"), "55667788")
    assert not verify_pin(await store.pin_hash("5"), PIN)
    with pytest.raises(StaffError, match="6 to 8 digits"):
        await store.set_pin("5", "12", clock.now())
    with pytest.raises(NotFoundError, match="no staff member"):
        await store.set_disabled("6", True, clock.now())
