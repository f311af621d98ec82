"""The closed vocabularies of a promotion file: sides, tombolas, kinds of window and rule.

Each is a `StrEnum` whose values are the spellings a promotion file uses.
"""

from __future__ import annotations

from enum import StrEnum


class Side(StrEnum):
    """Where points are earned; the two sides are never summed."""

    SLOTS = "slots"
    TABLES = "tables"


BOTH_SIDES = (Side.SLOTS, Side.TABLES)


class Tombola(StrEnum):
    """An entry pool of a draw: one pooled tombola, or one per side."""

    POOLED = "pooled"
    SLOTS = "slots"
    TABLES = "tables"


class TombolaMode(StrEnum):
    POOLED = "pooled"
    SEPARATE = "separate"


class WindowKind(StrEnum):
    """How a draw's earning window is given."""

    GAMING_DAYS = "gaming_days"  # first..last gaming day (08:00 on first to 07:59 after last)
    MONTHS_BEFORE_DRAW = "months_before_draw"  # N months before the draw day, to the bin close
    PLAY_WINDOW = "play_window"  # start..end on the draw date


class QualificationKind(StrEnum):
    THRESHOLD = "threshold"  # a side qualifies when its window points reach the threshold
    ACTIVES = "actives"  # a gaming visit in the window (or a member `last_visit` in it)
    PLAY_IN_WINDOW = "play_in_window"  # a side qualifies with any rated play in the window


class Channel(StrEnum):
    KIOSK = "kiosk"
    APP = "app"


class DrawMode(StrEnum):
    ELECTRONIC = "electronic"
    MANUAL = "manual"  # a physical tombola: bonusd exports the tickets, checks hand-drawn ones


class Weekday(StrEnum):
    MONDAY = "monday"
    TUESDAY = "tuesday"
    WEDNESDAY = "wednesday"
    THURSDAY = "thursday"
    FRIDAY = "friday"
    SATURDAY = "saturday"
    SUNDAY = "sunday"

    @property
    def number(self) -> int:
        """0 for Monday, as `date.weekday()`."""
        return list(Weekday).index(self)


class PrizeKind(StrEnum):
    REVEAL = "reveal"  # the verified winner picks one sealed reveal
    CASH = "cash"


class EmptyPoolAction(StrEnum):
    SKIP = "skip"
    CARRY_OVER = "carry_over"  # the prize moves to the session's next jackpot time
