"""When things happen in a promotion: the instants behind the local dates and times of a file.

Owns earning-window bounds (half-open [opens, closes) instants and the gaming days they
cover), activation and bin-close instants, draw-round instants, the proxy cut-off and the
prize-letter lapse. Everything returned is timezone-aware; nothing here reads a clock.
"""

from __future__ import annotations

import calendar as _cal
import datetime as dt
from dataclasses import dataclass

from bonusd.promotions.kinds import WindowKind
from bonusd.promotions.schema import Draw, DrawSpec, Promotion


@dataclass(frozen=True)
class EarningWindow:
    """Play at `opens <= t < closes` counts; it covers gaming days `first_day..last_day`."""

    opens: dt.datetime
    closes: dt.datetime
    first_day: dt.date
    last_day: dt.date

    def __contains__(self, instant: object) -> bool:
        return isinstance(instant, dt.datetime) and self.opens <= instant < self.closes

    def covers_day(self, day: dt.date) -> bool:
        return self.first_day <= day <= self.last_day


def local(promotion: Promotion, day: dt.date, time: dt.time) -> dt.datetime:
    """The aware instant of local `time` on `day` in the promotion's zone."""
    return dt.datetime.combine(day, time, tzinfo=promotion.zone)


def months_before(day: dt.date, months: int) -> dt.date:
    """The same day-of-month `months` earlier, clamped to the month's end (31 May - 3 = 28 Feb)."""
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    last = _cal.monthrange(year, month + 1)[1]
    return dt.date(year, month + 1, min(day.day, last))


def round_instants(promotion: Promotion, draw: Draw) -> tuple[dt.datetime, ...]:
    return tuple(local(promotion, draw.date, r.time) for r in draw.rounds)


def bin_close_time(draw: DrawSpec) -> dt.time:
    """Local time the entry bin closes: as configured, else the first round's time."""
    return draw.activation.bin_close or draw.rounds[0].time


def bin_closes_at(promotion: Promotion, draw: Draw) -> dt.datetime:
    return local(promotion, draw.date, bin_close_time(draw))


def activation_opens_at(promotion: Promotion, draw: Draw) -> dt.datetime:
    return local(promotion, draw.date, draw.activation.opens)


def proxy_cutoff_at(promotion: Promotion, draw: Draw) -> dt.datetime:
    """Proxy forms are taken until this many minutes before the first round."""
    first = round_instants(promotion, draw)[0]
    return first - dt.timedelta(minutes=promotion.claims.proxy_cutoff_minutes)


def prize_letters_lapse_at(promotion: Promotion, draw: Draw) -> dt.datetime:
    """End of the last calendar day a prize letter of this draw can be redeemed."""
    last_day = draw.date + dt.timedelta(days=promotion.claims.prize_letter_days)
    return local(promotion, last_day + dt.timedelta(days=1), dt.time(0, 0))


def earning_window(promotion: Promotion, draw: Draw) -> EarningWindow:
    """The draw's earning window. The file is checked on load, so each kind has its fields."""
    window = draw.window
    cal = promotion.calendar
    if window.kind is WindowKind.GAMING_DAYS:
        assert window.first is not None
        assert window.last is not None
        opens, closes = cal.day_opens(window.first), cal.day_closes(window.last)
    elif window.kind is WindowKind.MONTHS_BEFORE_DRAW:
        assert window.months is not None
        opens = cal.day_opens(months_before(draw.date, window.months))
        closes = bin_closes_at(promotion, draw)
    else:
        assert window.start is not None
        assert window.end is not None
        opens = local(promotion, draw.date, window.start)
        closes = local(promotion, draw.date, window.end)
    last_instant = closes - dt.timedelta(microseconds=1)
    return EarningWindow(opens, closes, cal.gaming_day(opens), cal.gaming_day(last_instant))
