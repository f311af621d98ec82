"""The gaming day: 08:00 to 08:00 in Africa/Johannesburg, whatever zone an instant is
given in; midnight does not split it."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from bonusd.clocks.clock import GamingCalendar

CAL = GamingCalendar(ZoneInfo("Africa/Johannesburg"), dt.time(8, 0))


@pytest.mark.parametrize(
    ("instant", "day"),
    [
        ("2026-10-03T08:00:00+02:00", "2026-10-03"),
        ("2026-10-04T07:59:59.999+02:00", "2026-10-03"),  # still the previous gaming day
        ("2026-10-04T08:00:00+02:00", "2026-10-04"),
        ("2026-10-03T23:59:59+02:00", "2026-10-03"),  # midnight does not split a gaming day
        ("2026-10-04T00:00:00+02:00", "2026-10-03"),
        ("2026-10-04T05:59:59Z", "2026-10-03"),  # 07:59:59 local, given in UTC
        ("2026-10-04T06:00:00Z", "2026-10-04"),
    ],
)
def test_gaming_day_boundary(instant: str, day: str) -> None:
    assert CAL.gaming_day(dt.datetime.fromisoformat(instant)).isoformat() == day


def test_gaming_day_opens_and_closes_at_0800_local() -> None:
    day = dt.date(2026, 10, 3)
    assert CAL.day_opens(day).isoformat() == "2026-10-03T08:00:00+02:00"
    assert CAL.day_closes(day).isoformat() == "2026-10-04T08:00:00+02:00"
