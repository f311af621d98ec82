"""The ticket rules: who may take part in a draw, who qualifies, and how many tickets they hold.

`standing` is pure: a promotion, a draw, a member record, the member's window stats and
whether they activated. It returns the tickets per tombola with a line per rule that
produced them, and the reasons for anything that does not count, in words a promotions
desk can read out ("tables: 18,400 of 20,000 points").

The rules, in the order they apply (DOMAIN.md, "Tickets and entries"):
1. exclusions are absolute: an excluded member, or one under the minimum age on the draw
   date, or of a tier the draw is not open to, holds no tickets;
2. qualification: per side (a threshold on window points, or any rated play in a play
   window) or per member ("3 months actives");
3. tickets: 1 per `per_points` points of each qualified side (sides never summed),
   optionally at least 1 for any rated play; `per_visit` per gaming visit, once per
   member in a pooled draw, per side's visits in a separate tombola; `base`; `app_bonus`;
4. the tier cap, last.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from bonusd.promotions.kinds import Channel, QualificationKind, Side, Tombola, TombolaMode
from bonusd.promotions.schema import Draw, Promotion
from bonusd.promotions.stats import MemberWindowStats
from bonusd.promotions.timing import activation_opens_at, bin_closes_at, earning_window
from bonusd.registry.records import Member


@dataclass(frozen=True)
class RuleLine:
    """Tickets one rule gave (or, for a cap, took) in one tombola."""

    rule: str  # points | side_visits | min_one | visits | base | app_bonus | cap
    tombola: Tombola
    tickets: int
    detail: str
    side: Side | None = None  # set for the per-side rules (points, side_visits)


@dataclass(frozen=True)
class SideStanding:
    side: Side
    points: int
    threshold: int | None
    qualified: bool
    tickets: int  # from this side's points (and in a separate tombola, its visits)


@dataclass(frozen=True)
class Standing:
    """A member's position in one draw. `tickets` is final once the bin closes; it counts
    as entries only if `activated`."""

    promotion_id: str
    draw_id: str
    card: str
    eligible: bool
    qualified: bool
    activated: bool
    visits: int
    tickets: int
    per_tombola: Mapping[Tombola, int]
    sides: tuple[SideStanding, ...]
    breakdown: tuple[RuleLine, ...]
    reasons: tuple[str, ...]

    @property
    def entries(self) -> int:
        """Tickets that count in the draw: all of them once activated, else none."""
        return self.tickets if self.activated else 0


def exclusion_reasons(promotion: Promotion, member: Member, day: dt.date) -> tuple[str, ...]:
    """Why `member` takes no part in anything of the promotion on `day` (empty if none):
    the exclusion flag, age, and the promotion's tiers."""
    reasons: list[str] = []
    if member.excluded:
        reasons.append(f"excluded: {member.exclusion_reason or 'on the exclusion list'}")
    minimum = promotion.exclusions.minimum_age
    age = member.age_on(day)
    if age is None:
        if promotion.exclusions.require_date_of_birth:
            reasons.append("no date of birth on record (required to prove age)")
    elif age < minimum:
        reasons.append(f"under {minimum} on {day.isoformat()}")
    return tuple(reasons)


def ineligibility(
    promotion: Promotion, draw: Draw, member: Member, *, on_date: dt.date | None = None
) -> tuple[str, ...]:
    """Why `member` may not take part in `draw` at all (empty when they may).

    Age is judged on `on_date`, by default the draw date (pass the new date of a
    rescheduled draw)."""
    reasons = exclusion_reasons(promotion, member, on_date or draw.date)
    tiers = promotion.draw_tiers(draw)
    if member.tier not in tiers:
        allowed = ", ".join(t.value for t in tiers)
        reasons += (f"tier {member.tier.value} is not eligible for this draw ({allowed} only)",)
    return reasons


def standing(
    promotion: Promotion,
    draw: Draw | str,
    member: Member,
    stats: MemberWindowStats,
    *,
    activated: bool,
    on_date: dt.date | None = None,
    explain: bool = True,
) -> Standing:
    """The member's qualification, tickets per tombola, and the reasons behind them.

    `explain=False` leaves the texts out (each rule line's `detail` and the `reasons` of
    a member who may take part) and gives the same numbers faster: for bulk work such as
    freezing a pool, where nobody reads 200,000 explanations."""
    if isinstance(draw, str):
        draw = promotion.draw(draw)
    barred = ineligibility(promotion, draw, member, on_date=on_date)
    if barred:
        return _barred(promotion, draw, member, barred, activated=activated)
    reasons: list[str] = []
    qualification = _qualification(promotion, draw, member, stats, reasons, explain=explain)
    lines = (
        _ticket_lines(
            draw, member, stats, qualification.visits, qualification.sides, explain=explain
        )
        if qualification.qualified
        else []
    )
    per_tombola = {t: sum(x.tickets for x in lines if x.tombola is t) for t in draw.tombola_names}
    tickets = sum(per_tombola.values())
    if tickets and not activated and explain:
        reasons.append(_activation_hint(promotion, draw))
    return Standing(
        promotion_id=promotion.id,
        draw_id=draw.id,
        card=member.card,
        eligible=True,
        qualified=qualification.qualified,
        activated=activated,
        visits=qualification.visits,
        tickets=tickets,
        per_tombola=MappingProxyType(per_tombola),
        sides=_side_standings(draw, stats, qualification, lines),
        breakdown=tuple(lines),
        reasons=tuple(reasons),
    )


class _Qualification(NamedTuple):
    """How a member who may take part fares against a draw's qualification rule."""

    visits: int  # the gaming visits credited in the earning window
    judged: tuple[Side, ...]  # the sides the rule looks at (none for "actives")
    sides: list[Side]  # the sides that qualify
    qualified: bool


def _barred(
    promotion: Promotion, draw: Draw, member: Member, barred: tuple[str, ...], *, activated: bool
) -> Standing:
    """The standing of a member who may not take part: no tickets, the reasons why."""
    return Standing(
        promotion_id=promotion.id,
        draw_id=draw.id,
        card=member.card,
        eligible=False,
        qualified=False,
        activated=activated,
        visits=0,
        tickets=0,
        per_tombola=MappingProxyType(dict.fromkeys(draw.tombola_names, 0)),
        sides=(),
        breakdown=(),
        reasons=barred,
    )


def _qualification(
    promotion: Promotion,
    draw: Draw,
    member: Member,
    stats: MemberWindowStats,
    reasons: list[str],
    *,
    explain: bool,
) -> _Qualification:
    """Judge the draw's qualification rule; when `explain`, add to `reasons` why not."""
    if draw.qualification.kind is QualificationKind.ACTIVES:
        visits = _credited_visits(promotion, draw, member, stats)
        qualified = visits > 0
        if not qualified and explain:
            window = _window_text(promotion, draw)
            reasons.append(f"no gaming visit in the earning window ({window})")
        return _Qualification(visits, (), [], qualified)
    sides = _qualified_sides(promotion, draw, stats, reasons if explain else None)
    return _Qualification(stats.visits, tuple(draw.qualification.sides), sides, bool(sides))


def _side_standings(
    draw: Draw, stats: MemberWindowStats, qualification: _Qualification, lines: list[RuleLine]
) -> tuple[SideStanding, ...]:
    """Each judged side's points, threshold, verdict and the tickets it gave."""
    return tuple(
        SideStanding(
            side=side,
            points=stats.side(side).points,
            threshold=draw.qualification.threshold,
            qualified=side in qualification.sides,
            tickets=sum(x.tickets for x in lines if x.side is side),
        )
        for side in qualification.judged
    )


def activation_refusal(
    promotion: Promotion,
    draw: Draw | str,
    channel: Channel,
    at: dt.datetime,
    *,
    active_on_floor: bool,
) -> str | None:
    """Why an activation through `channel` at instant `at` is refused, or None if allowed.

    Activation runs from `activation.opens` on the draw day until the bin closes; the app
    registers only while the member is active (carded in at an EGM or rated at a table)."""
    if isinstance(draw, str):
        draw = promotion.draw(draw)
    if channel not in draw.activation.channels:
        return f"{channel.value} activation is not offered for this draw"
    opens, closes = activation_opens_at(promotion, draw), bin_closes_at(promotion, draw)
    if at < opens:
        return f"activation opens at {opens:%H:%M on %d %b %Y}"
    if at >= closes:
        return f"the entry bin closed at {closes:%H:%M on %d %b %Y}"
    if channel is Channel.APP and draw.activation.app_requires_active and not active_on_floor:
        return "the app registers entries only while you are playing (carded in or rated)"
    return None


def _credited_visits(
    promotion: Promotion, draw: Draw, member: Member, stats: MemberWindowStats
) -> int:
    """Telemetry visits, plus the member record's `last_visit` where telemetry is blind."""
    last = member.last_visit
    if last is None or not earning_window(promotion, draw).covers_day(last):
        return stats.visits
    if stats.telemetry_since is None:
        return max(stats.visits, 1)
    return stats.visits + (1 if last < stats.telemetry_since else 0)


def _qualified_sides(
    promotion: Promotion, draw: Draw, stats: MemberWindowStats, reasons: list[str] | None
) -> list[Side]:
    """The sides that qualify; with a `reasons` list, why the others do not."""
    rule = draw.qualification
    if rule.kind is QualificationKind.THRESHOLD:
        assert rule.threshold is not None
        qualified = [s for s in rule.sides if stats.side(s).points >= rule.threshold]
        if reasons is None:
            return qualified
        reasons.extend(
            f"{s.value}: {stats.side(s).points:,} of {rule.threshold:,} points"
            for s in rule.sides
            if s not in qualified
        )
        return qualified
    qualified = [s for s in rule.sides if stats.side(s).plays > 0]
    if not qualified and reasons is not None:
        where = " or ".join(s.value for s in rule.sides)
        reasons.append(f"no rated play on {where} in the window ({_window_text(promotion, draw)})")
    return qualified


def _ticket_lines(
    draw: Draw,
    member: Member,
    stats: MemberWindowStats,
    visits: int,
    qualified_sides: list[Side],
    *,
    explain: bool = True,
) -> list[RuleLine]:
    rules = draw.tickets
    separate = draw.tombolas is TombolaMode.SEPARATE
    lines: list[RuleLine] = []
    for side in qualified_sides:
        tombola = Tombola(side.value) if separate else Tombola.POOLED
        points = stats.side(side).points
        if rules.per_points:
            tickets = points // rules.per_points
            detail = (
                f"{side.value}: {points:,} points / {rules.per_points:,} = {tickets:,}"
                if explain
                else ""
            )
            lines.append(RuleLine("points", tombola, tickets, detail, side))
        if separate and rules.per_visit:
            side_visits = stats.side(side).visits
            tickets = side_visits * rules.per_visit
            detail = (
                f"{side.value}: {side_visits} gaming visit(s) x {rules.per_visit} = {tickets}"
                if explain
                else ""
            )
            lines.append(RuleLine("side_visits", tombola, tickets, detail, side))
    if separate:
        return lines
    pooled = Tombola.POOLED
    if rules.min_one_if_played and not any(x.tickets for x in lines):
        lines.append(RuleLine("min_one", pooled, 1, "rated play in the window: at least 1"))
    if rules.per_visit and visits:
        tickets = visits * rules.per_visit
        detail = f"{visits} gaming visit(s) x {rules.per_visit} = {tickets}" if explain else ""
        lines.append(RuleLine("visits", pooled, tickets, detail))
    if rules.base:
        lines.append(RuleLine("base", pooled, rules.base, f"{rules.base} free ticket(s)"))
    if rules.app_bonus and member.app_user:
        detail = f"Tsogo Sun App user: +{rules.app_bonus}"
        lines.append(RuleLine("app_bonus", pooled, rules.app_bonus, detail))
    cap = draw.caps.get(member.tier)
    total = sum(x.tickets for x in lines)
    if cap is not None and total > cap:
        detail = f"tier {member.tier.value} cap {cap:,} (earned {total:,})" if explain else ""
        lines.append(RuleLine("cap", pooled, cap - total, detail))
    return lines


def _window_text(promotion: Promotion, draw: Draw) -> str:
    window = earning_window(promotion, draw)
    opens = window.opens.astimezone(promotion.zone)
    closes = window.closes.astimezone(promotion.zone)
    if opens.date() == closes.date():
        return f"{opens:%H:%M}-{closes:%H:%M} on {opens:%d %b %Y}"
    return f"{opens:%d %b %Y %H:%M} to {closes:%d %b %Y %H:%M}"


def _activation_hint(promotion: Promotion, draw: Draw) -> str:
    ways = []
    if Channel.KIOSK in draw.activation.channels:
        ways.append("print the receipt at an eHost kiosk")
    if Channel.APP in draw.activation.channels:
        playing = " while playing" if draw.activation.app_requires_active else ""
        ways.append(f"register in the Tsogo Sun App{playing}")
    closes = f"{bin_closes_at(promotion, draw):%H:%M on %d %b %Y}"
    return f"not activated: {' or '.join(ways)}, before the bin closes at {closes}"
