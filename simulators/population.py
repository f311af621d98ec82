"""The member base of a simulated floor: tiers, app users, SMS opt-ins, exclusions, staff.

One `Member` is one row of the `members.csv` bonusd imports. The tier mix is exact (the
largest-remainder split of `FloorConfig.tier_mix`), and so are the exclusions: each
reason of `FloorConfig.exclusions` gets `round(share * members)` members, marked the way
bonusd's member import expects (`excluded = true`, `exclusion_reason` = the reason), so
staff and their families are on the floor and play, and must never win. Members with a
mobile number get a South African one in international format (`+27...`); every member
who opted in to SMS has one.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from simulators.config import FloorConfig
from simulators.names import random_name

MOBILE_PREFIXES: Final = (
    "60", "61", "62", "63", "64", "65", "66", "67", "71", "72", "73", "74", "76", "78",
    "79", "81", "82", "83", "84",
)  # fmt: skip
"""South African mobile number ranges (after the country code 27)."""


@dataclass(frozen=True, slots=True)
class Member:
    """A loyalty member: one row of `members.csv`."""

    card: str
    name: str
    tier: str
    app_user: bool
    date_of_birth: dt.date
    sms_opt_in: bool
    excluded: bool
    exclusion_reason: str
    last_visit: dt.date | None
    mobile: str | None = None
    """International format, e.g. `+27821234567`; None when the casino has none."""

    @property
    def staff(self) -> bool:
        """Staff or a staff member's family: excluded from every promotion."""
        return self.exclusion_reason in ("staff", "staff_family")


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    """Split `total` into integer parts proportional to `weights` (largest remainder)."""
    scale = sum(weights)
    exact = [total * w / scale for w in weights]
    parts = [int(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: parts[i] - exact[i])
    for i in by_remainder[: total - sum(parts)]:
        parts[i] += 1
    return parts


def build_members(config: FloorConfig, rng: random.Random, as_of: dt.date) -> tuple[Member, ...]:
    """The member base: adults on `as_of`, with last visits before it."""
    n = config.members
    cards = rng.sample(range(10**8), n)
    tiers = [
        tier
        for (tier, _), count in zip(
            config.tier_mix, apportion(n, [w for _, w in config.tier_mix]), strict=True
        )
        for _ in range(count)
    ]
    rng.shuffle(tiers)
    reasons = _exclusions(config, rng)
    youngest = _years_before(as_of, 18) - dt.timedelta(days=1)
    out: list[Member] = []
    for i, (card, tier) in enumerate(zip(cards, tiers, strict=True)):
        age_days = int(rng.triangular(18.0, 85.0, 42.0) * 365.25)
        born = min(as_of - dt.timedelta(days=age_days), youngest)
        last_visit = None
        if rng.random() >= config.never_visited_rate:
            last_visit = as_of - dt.timedelta(days=min(400, 1 + int(rng.expovariate(1 / 35))))
        sms = rng.random() < config.sms_opt_in_rate
        has_mobile = sms or rng.random() < config.mobile_rate
        reason = reasons.get(i, "")
        out.append(
            Member(
                card=f"70{card:08d}",
                name=random_name(rng),
                tier=tier,
                app_user=rng.random() < config.app_user_rate,
                date_of_birth=born,
                sms_opt_in=sms,
                excluded=bool(reason),
                exclusion_reason=reason,
                last_visit=last_visit,
                mobile=_mobile(rng) if has_mobile else None,
            )
        )
    return tuple(out)


def _exclusions(config: FloorConfig, rng: random.Random) -> dict[int, str]:
    """Member index -> exclusion reason, exact counts per reason, spread at random."""
    n = config.members
    counts = [round(share * n) for _, share in config.exclusions]
    chosen = rng.sample(range(n), min(n, sum(counts)))
    out: dict[int, str] = {}
    at = 0
    for (reason, _), count in zip(config.exclusions, counts, strict=True):
        for index in chosen[at : at + count]:
            out[index] = reason
        at += count
    return out


def _mobile(rng: random.Random) -> str:
    return f"+27{rng.choice(MOBILE_PREFIXES)}{rng.randrange(10**7):07d}"


def _years_before(day: dt.date, years: int) -> dt.date:
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # 29 February in a non-leap year
        return day.replace(year=day.year - years, day=28)
