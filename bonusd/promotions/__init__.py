"""Promotions as configuration, and their live side in Redis.

May import `infra`, `settings`, `clocks`, `registry` and `errors`. The modules named
below are pure (no I/O library, by contract); `store`, `summaries`, `rulesync` and
`timetable` keep standings, boards, activations, frozen pools and the site's rules in
Redis.

A promotion is a TOML file (`promotions/*.toml`, format in `docs/promotions.md`), loaded
and checked into a `Promotion`. The rules engine is synchronous and pure: it takes a
promotion, plain data and instants, and never reads a clock, Redis or MQTT.

- `load_promotion` / `parse_promotion` / `load_promotions` read files (`PromotionFileError`);
  `promotion_warnings` lists what loads but deserves a look;
- `standing` gives a member's qualification and tickets in a draw, from `MemberWindowStats`
  (`aggregate` builds those from individual plays);
- `multiplier_at` gives the points factor for a play;
- `activation_refusal` says whether an activation (kiosk or app) is allowed right now;
- `rank_leaderboard` and `seat_holders` rank boards and seat leaders;
- `EntryPool` is the frozen, hashed pool a draw is made from;
- `schedule` lists every timed action; `diff_promotions` lists rule changes;
- `render_markdown` / `render_html` / `write_terms` write the terms schedule.
"""

from bonusd.promotions.changes import Change, diff_promotions
from bonusd.promotions.checks import promotion_warnings
from bonusd.promotions.errors import PromotionFileError, PromotionProblem
from bonusd.promotions.kinds import Channel, Side, Tombola
from bonusd.promotions.leaderboard import BoardEntry, Ranked, Seat, rank_leaderboard, seat_holders
from bonusd.promotions.loader import load_promotion, load_promotions, parse_promotion
from bonusd.promotions.multipliers import multiplier_at
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.render import render_html, render_markdown, write_terms
from bonusd.promotions.rules import (
    RuleLine,
    SideStanding,
    Standing,
    activation_refusal,
    exclusion_reasons,
    ineligibility,
    standing,
)
from bonusd.promotions.schedule import Action, TimedAction, schedule
from bonusd.promotions.schema import Draw, JackpotSession, Promotion
from bonusd.promotions.stats import MemberWindowStats, RatedPlay, SideStats, aggregate
from bonusd.promotions.timing import EarningWindow, earning_window

__all__ = [
    "Action",
    "BoardEntry",
    "Change",
    "Channel",
    "Draw",
    "EarningWindow",
    "EntryPool",
    "JackpotSession",
    "MemberWindowStats",
    "Promotion",
    "PromotionFileError",
    "PromotionProblem",
    "Ranked",
    "RatedPlay",
    "RuleLine",
    "Seat",
    "Side",
    "SideStanding",
    "SideStats",
    "Standing",
    "TimedAction",
    "Tombola",
    "activation_refusal",
    "aggregate",
    "diff_promotions",
    "earning_window",
    "exclusion_reasons",
    "ineligibility",
    "load_promotion",
    "load_promotions",
    "multiplier_at",
    "parse_promotion",
    "promotion_warnings",
    "rank_leaderboard",
    "render_html",
    "render_markdown",
    "schedule",
    "seat_holders",
    "standing",
    "write_terms",
]
