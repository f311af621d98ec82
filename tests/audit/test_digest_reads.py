"""A gaming day's digest from the daemon's walk of the chain (`TrailReads.day_digest`, what
`GET /audit/digest` answers) is the digest the whole trail gives (`trail_digests`), for
days before, within and after the trail, with and without records; when the walk cannot
give it (the chain broken, a time out of form, a record changed since it was checked)
it says so and the whole trail is folded."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from bonusd.audit.anchor import trail_digests
from bonusd.audit.chain import record_hash
from bonusd.audit.digest import DigestChecks
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys
from tests.audit.helpers import CALENDAR, local, put_trail, trail

# records on 3, 4 and 6 October (gaming days: before 08:00 is the day before), none on
# the 5th, some right at a day's opening and just before it
INSTANTS = [
    local(3, 9),
    local(3, 23, 59, 59),
    local(4, 7, 59, 59),  # gaming day 3 October
    local(4, 8),  # gaming day 4 October, at its opening
    local(4, 12),
    local(4, 12),
    local(6, 9),
    local(7, 7),
]
DAYS = [dt.date(2026, 10, d) for d in range(1, 9)]


async def _store(aredis: aioredis.Redis, site: str) -> tuple[AuditStore, Keys]:
    keys = Keys("bonusd", site)
    await put_trail(aredis, keys.audit, trail(INSTANTS))
    return AuditStore(aredis, keys, clock=ManualClock(local(9, 9))), keys


async def test_each_days_digest_from_the_walk_is_the_whole_trails(
    aredis: aioredis.Redis, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = await _store(aredis, site)
    whole = await trail_digests(store, DAYS, site=site, calendar=CALENDAR)
    walked = [await store.reads.day_digest(day, site=site, calendar=CALENDAR) for day in DAYS]
    assert walked == whole
    assert [d.records for d in whole] == [0, 0, 3, 3, 0, 2, 0, 0]  # the test covers the cases
    inner = store.batches

    def walk_on_only(*args: Any, start: int = 0, **kwargs: Any) -> AsyncIterator[Any]:
        assert start > 0, "the whole trail walked again"
        return inner(*args, start=start, **kwargs)

    monkeypatch.setattr(store, "batches", walk_on_only)
    again = [await store.reads.day_digest(day, site=site, calendar=CALENDAR) for day in DAYS]
    assert again == whole


async def test_an_empty_trail_gives_the_empty_digest(aredis: aioredis.Redis, site: str) -> None:
    store = AuditStore(aredis, Keys("bonusd", site))
    [whole] = await trail_digests(store, DAYS[:1], site=site, calendar=CALENDAR)
    assert await store.reads.day_digest(DAYS[0], site=site, calendar=CALENDAR) == whole


async def test_the_walk_gives_no_digest_it_cannot_vouch_for(
    aredis: aioredis.Redis, site: str
) -> None:
    store, keys = await _store(aredis, site)
    records = trail(INSTANTS)
    day = dt.date(2026, 10, 4)
    before = await store.reads.day_digest(day, site=site, calendar=CALENDAR)
    assert before is not None and before.last_seq == 6
    # the day's last record changed after the walk checked it (hashed again on its own)
    changed = dataclasses.replace(records[5], actor="someone else")
    changed = dataclasses.replace(changed, hash=record_hash(changed.body()))
    await put_trail(aredis, keys.audit, [*records[:5], changed, *records[6:]])
    assert await store.reads.day_digest(day, site=site, calendar=CALENDAR) is None
    # walked again: the chain is broken at record 7, so no digest comes from the walk
    assert await store.reads.day_digest(day, site=site, calendar=CALENDAR) is None
    [whole] = await trail_digests(store, [day], site=site, calendar=CALENDAR)
    assert whole.last_seq == 6 and whole.head_hash == changed.hash != before.head_hash
    # a time out of form, hashed as it is: the walk's times cannot be searched
    odd = dataclasses.replace(records[7], time="2026-10-07 05:00:00Z")
    odd = dataclasses.replace(odd, hash=record_hash(odd.body()))
    await put_trail(aredis, keys.audit, [*records[:7], odd])
    assert await store.reads.day_digest(day, site=site, calendar=CALENDAR) is None


async def test_a_time_out_of_form_leaves_the_digest_to_the_whole_fold(
    aredis: aioredis.Redis, site: str
) -> None:
    keys, records = Keys("bonusd", site), trail(INSTANTS)
    day = dt.date(2026, 10, 6)
    # the same instant as an ISO week date, and with a second Z: the chain holds (times
    # compare as text), but their order as text is not their order in time
    for odd_time, counted in (
        ("2026-W41-2T05:00:00.000000Z", 1),  # after every close of 2026 as text
        ("2026-10-07T05:00:00.000000ZZ", 2),  # before this close as text
    ):
        odd = dataclasses.replace(records[7], time=odd_time)
        odd = dataclasses.replace(odd, hash=record_hash(odd.body()))
        await put_trail(aredis, keys.audit, [*records[:7], odd])
        store = AuditStore(aredis, keys)  # a daemon that never saw the trail before
        assert (await store.reads.page(8)).check.ok  # the reads go on
        assert await store.reads.day_digest(day, site=site, calendar=CALENDAR) is None
        [whole] = await trail_digests(store, [day], site=site, calendar=CALENDAR)
        assert whole.intact and whole.records == counted  # the fold orders times as text


async def test_a_bad_row_breaks_the_days_digest_not_its_read(
    aredis: aioredis.Redis, site: str
) -> None:
    keys, records = Keys("bonusd", site), trail(INSTANTS)
    day = dt.date(2026, 10, 4)
    odd = dataclasses.replace(records[2], time=5)  # type: ignore[arg-type]
    for row in ("not json", odd.to_json()):  # seq 3, gaming day 3 October
        await put_trail(aredis, keys.audit, records)
        await aredis.lset(keys.audit, 2, row)
        store = AuditStore(aredis, keys)
        [whole] = await trail_digests(store, [day], site=site, calendar=CALENDAR)
        assert not whole.intact and "record 3" in whole.chain
        assert (whole.last_seq, whole.records) == (6, 3)  # the records around it still count
        assert await store.reads.day_digest(day, site=site, calendar=CALENDAR) is None
    checks = DigestChecks([whole])
    checks.add([records[0], dataclasses.replace(records[1], seq=[2])])  # type: ignore[arg-type]
    assert not checks.checks()[0].ok
