"""Behaviour tables of the simulated players: when they come, where they sit, what they bet.

All amounts are in cents. Slot bets are the stake per game; table bets are average bets,
kept at multiples of R25 so that every table wager is whole rands. Loyalty points are
1 point per R1 wagered (`points = wager_cents // 100`) on slots and tables alike.

The numbers are assumptions in line with what casinos publish about their floors (busy
Friday and Saturday nights, quiet early mornings, 500-700 spins an hour on video slots,
a return to player near 95%); `FloorConfig` and the floor files can override the
per-floor ones. docs/simulator.md lists them with their reasons.
"""

from __future__ import annotations

from typing import Final

# Share of the peak occupancy by local hour (0..23): quiet mornings, busy evenings.
HOURLY_OCCUPANCY: Final = (
    0.55, 0.45, 0.35, 0.25, 0.15, 0.10, 0.08, 0.10, 0.15, 0.22, 0.28, 0.33,
    0.38, 0.42, 0.45, 0.48, 0.55, 0.68, 0.82, 0.92, 1.00, 1.00, 0.90, 0.72,
)  # fmt: skip

# Share of the peak by night, Monday..Sunday: Friday and Saturday nights are the busiest.
WEEKDAY_FACTOR: Final = (0.60, 0.60, 0.65, 0.70, 0.95, 1.00, 0.75)
NIGHT_ENDS_HOUR: Final = 6
"""Hours before this belong to the previous day's night (Saturday 01:00 is Friday night)."""
LATE_NIGHT_BOOST: Final = 0.25
"""Friday and Saturday nights run late: 22:00-03:59 of those nights are 25% busier."""
LATE_NIGHT_HOURS: Final = frozenset({22, 23, 0, 1, 2, 3})

# Per tier ("10", "J", "Q", "K", "A"), indexed like floor.TIERS.
TIER_PACE: Final = (0.9, 0.95, 1.0, 1.05, 1.1)
"""Games per hour relative to the floor's `games_per_hour`: regulars play faster."""
TIER_VISIT_WEIGHT: Final = (1.0, 1.5, 2.2, 3.0, 4.0)
"""How much more often a member of each tier visits than a `10`."""
TIER_TABLE_FACTOR: Final = (0.7, 0.9, 1.2, 1.6, 2.0)
"""Multiplies the floor's table share: high tiers favour tables."""
TIER_PRIVE_PREFERENCE: Final = (0.02, 0.05, 0.2, 0.6, 0.8)
SMOKER_RATE: Final = 0.25

SLOT_BETS: Final = (
    ((50, 100, 150, 200, 300, 500), (3, 4, 2, 2, 1, 1)),
    ((100, 200, 300, 500, 1000), (2, 4, 3, 2, 1)),
    ((200, 300, 500, 1000, 2000), (2, 3, 4, 2, 1)),
    ((500, 1000, 2000, 2500, 5000), (2, 4, 3, 2, 1)),
    ((1000, 2000, 5000, 10000, 20000), (2, 3, 4, 2, 1)),
)
"""(stakes, weights) per tier; a session keeps its stake and sometimes changes it."""
STAKE_CHANGE_RATE: Final = 0.02
"""Chance per game that the player picks a new stake for the following games."""

TABLE_BETS: Final = (
    (2500, 5000, 7500, 10000),
    (5000, 10000, 15000, 20000),
    (10000, 20000, 30000, 50000),
    (25000, 50000, 100000, 150000),
    (50000, 100000, 250000, 500000),
)
"""Starting average bets per tier (equally likely)."""
TABLE_BET_STEP: Final = 2500
TABLE_BET_DRIFT_RATE: Final = 0.25
"""Chance per rating interval that the average bet moves by one step."""
HANDS_PER_HOUR: Final = (
    ("blackjack", 60.0),
    ("roulette", 40.0),
    ("poker", 30.0),
    ("baccarat", 70.0),
)

# Slot returns: the chance of a win and its size as a multiple of the stake (RTP ~ 95%).
WIN_RATE: Final = 0.28
WIN_MEAN_MULTIPLE: Final = 2.5
BIG_WIN_RATE: Final = 0.001
BIG_WIN_MULTIPLES: Final = (100.0, 400.0)

# Pace of slot play, as multiples of the mean gap between games (3600 / games_per_hour):
# a quick spin most of the time and, once in a while, a pause (a drink, a chat). The two
# parts average exactly one mean gap, so a carded-in player plays `games_per_hour`.
SPIN_GAP: Final = (0.5, 7 / 6)
PAUSE_RATE: Final = 0.01
PAUSE_GAP: Final = (50 / 6, 150 / 6)
