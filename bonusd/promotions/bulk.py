"""The ticket rules for a whole member base at once, on numpy arrays.

`standing` (rules.py) is the reference: one member, with every rule line explained. This
module computes the same numbers — eligibility, qualification, tickets per tombola — for
hundreds of thousands of members in one pass, for recomputes, summaries and reports.
`tests/promotions/test_promotions_bulk.py` holds it to the reference on random members and stats for
every draw of both seed promotions; a rule added to one must be added to the other.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bonusd.promotions.kinds import QualificationKind, Side, Tombola, TombolaMode
from bonusd.promotions.schema import Draw, Promotion
from bonusd.promotions.timing import earning_window
from bonusd.registry.records import Member, Tier

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
TIERS: tuple[Tier, ...] = tuple(Tier)
_TIER_CODE = {t.value: n for n, t in enumerate(TIERS)}
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()  # numpy's day 0 as a proleptic ordinal


@dataclass(frozen=True)
class MemberArrays:
    """The rules' view of N members, column by column (row i is one member)."""

    cards: Sequence[str] | Sequence[bytes]  # as read: `str`, or `bytes` on the raw path
    tier: Ints  # index into TIERS
    app_user: Bools
    excluded: Bools
    birth_year: Ints  # 0 when the date of birth is unknown
    birth_md: Ints  # month * 100 + day
    last_visit: Ints  # proleptic ordinal of the date; 0 for none

    @classmethod
    def from_index(cls, cards: Sequence[str], texts: Sequence[str | None]) -> MemberArrays:
        """From `Member.to_index` strings (None: not registered, treated as excluded)."""
        count = len(cards)
        tier = np.zeros(count, np.int64)
        app = np.zeros(count, np.bool_)
        excluded = np.zeros(count, np.bool_)
        by = np.zeros(count, np.int64)
        bmd = np.zeros(count, np.int64)
        last = np.zeros(count, np.int64)
        for index, text in enumerate(texts):
            if text is None:
                excluded[index] = True
                continue
            tier_code, app_flag, excluded_flag, dob, lv = text.split("|")
            tier[index] = _TIER_CODE[tier_code]
            app[index] = app_flag == "1"
            excluded[index] = excluded_flag == "1"
            if dob:
                by[index] = int(dob[:4])
                bmd[index] = int(dob[5:7]) * 100 + int(dob[8:10])
            if lv:
                last[index] = dt.date.fromisoformat(lv).toordinal()
        return cls(cards, tier, app, excluded, by, bmd, last)

    @classmethod
    def from_rows(cls, cards: Sequence[bytes], rows: Sequence[bytes | None]) -> MemberArrays:
        """The same arrays as `from_index`, from index rows as Redis sends them (bytes,
        undecoded; None: not registered), parsed column by column in numpy rather than
        row by row: no Python step per member."""
        count = len(rows)
        if not count:
            return cls.from_index([], [])
        missing = np.zeros(count, np.bool_)
        if None in rows:
            missing = np.fromiter((row is None for row in rows), np.bool_, count)
        texts = np.array([row or b"" for row in rows] if missing.any() else rows, np.bytes_)
        tier_text, _, rest = np.strings.partition(texts, b"|")
        app_flag, _, rest = np.strings.partition(rest, b"|")
        excluded_flag, _, rest = np.strings.partition(rest, b"|")
        dob, _, last = np.strings.partition(rest, b"|")
        tier = np.full(count, -1, np.int64)
        for code, known_tier in enumerate(TIERS):
            tier[tier_text == known_tier.value.encode()] = code
        tier[missing] = 0
        if (tier < 0).any():  # the row itself is not quoted: it holds a date of birth
            first = cards[int(np.argmax(tier < 0))]
            raise ValueError(f"the member index row of card {first!r} has no known tier")
        birth_year, birth_md = _birth_columns(dob)
        days = last.astype("datetime64[D]").astype(np.int64)  # since 1970-01-01; NaT if empty
        return cls(
            cards,
            tier,
            app_flag == b"1",
            (excluded_flag == b"1") | missing,
            birth_year,
            birth_md,
            np.where(last != b"", days + _EPOCH_ORDINAL, 0),
        )

    def take(
        self, cards: Sequence[str] | Sequence[bytes], rows: Ints, found: Bools
    ) -> MemberArrays:
        """The rows `rows` of these arrays as members `cards`; where not `found`, a card
        that was never registered (treated as excluded: it cannot be judged)."""
        return MemberArrays(
            cards,
            self.tier[rows],
            self.app_user[rows],
            self.excluded[rows] | ~found,
            self.birth_year[rows],
            self.birth_md[rows],
            self.last_visit[rows],
        )

    @classmethod
    def from_members(cls, members: Sequence[Member]) -> MemberArrays:
        return cls.from_index([m.card for m in members], [m.to_index() for m in members])


def _birth_columns(dob: npt.NDArray[np.bytes_]) -> tuple[Ints, Ints]:
    """Year and month * 100 + day of ISO dates (`YYYY-MM-DD`; 0 and 0 where empty), read
    digit by digit from the bytes as `from_index` reads them from the text."""
    digits = dob.astype("S10").view(np.uint8).reshape(-1, 10).astype(np.int64) - ord("0")
    year = digits[:, 0] * 1000 + digits[:, 1] * 100 + digits[:, 2] * 10 + digits[:, 3]
    month_day = (digits[:, 5] * 10 + digits[:, 6]) * 100 + digits[:, 8] * 10 + digits[:, 9]
    known = dob != b""
    return np.where(known, year, 0), np.where(known, month_day, 0)


@dataclass(frozen=True)
class StatArrays:
    """Window stats of the same N members (see `stats.MemberWindowStats`)."""

    slots_points: Ints
    tables_points: Ints
    slots_plays: Ints
    tables_plays: Ints
    slots_visits: Ints
    tables_visits: Ints
    visits: Ints
    telemetry_since: dt.date | None = None

    def points(self, side: Side) -> Ints:
        return self.slots_points if side is Side.SLOTS else self.tables_points

    def plays(self, side: Side) -> Ints:
        return self.slots_plays if side is Side.SLOTS else self.tables_plays

    def side_visits(self, side: Side) -> Ints:
        return self.slots_visits if side is Side.SLOTS else self.tables_visits


@dataclass(frozen=True)
class BulkStandings:
    """Numbers of every member's standing in one draw (row i is member i)."""

    eligible: Bools
    qualified: Bools
    visits: Ints  # credited visits (0 for a member who may not take part)
    tickets: Ints
    per_tombola: dict[Tombola, Ints]
    side_qualified: dict[Side, Bools]


def needed_fields(draw: Draw) -> frozenset[str]:
    """The `StatArrays` columns `bulk_standings` reads for `draw` (the others may be zero):
    a recompute fetches only these. Kept beside the rules; the bulk test checks it."""
    rule, ticket_rule = draw.qualification, draw.tickets
    separate = draw.tombolas is TombolaMode.SEPARATE
    fields: set[str] = set()
    if rule.kind is QualificationKind.ACTIVES:
        fields.add("visits")
    for side in rule.sides if rule.kind is not QualificationKind.ACTIVES else ():
        if rule.kind is QualificationKind.THRESHOLD or ticket_rule.per_points:
            fields.add(f"{side.value}_points")
        if rule.kind is QualificationKind.PLAY_IN_WINDOW:
            fields.add(f"{side.value}_plays")
        if separate and ticket_rule.per_visit:
            fields.add(f"{side.value}_visits")
    if not separate and ticket_rule.per_visit:
        fields.add("visits")
    return frozenset(fields)


def bulk_standings(
    promotion: Promotion,
    draw: Draw,
    members: MemberArrays,
    stats: StatArrays,
    *,
    on_date: dt.date | None = None,
) -> BulkStandings:
    """Every member's eligibility, qualification and tickets in `draw`."""
    day = on_date or draw.date
    eligible = ~members.excluded & _old_enough(promotion, members, day)
    allowed = [TIERS.index(t) for t in promotion.draw_tiers(draw)]
    eligible &= np.isin(members.tier, allowed)

    rule = draw.qualification
    zeros = np.zeros(len(members.cards), np.int64)
    side_q: dict[Side, Bools] = {}
    if rule.kind is QualificationKind.ACTIVES:
        visits = _credited_visits(promotion, draw, members, stats)
        qualified = visits > 0
    else:
        visits = stats.visits
        for side in rule.sides:
            if rule.kind is QualificationKind.THRESHOLD:
                assert rule.threshold is not None
                side_q[side] = stats.points(side) >= rule.threshold
            else:
                side_q[side] = stats.plays(side) > 0
        qualified = np.zeros(len(members.cards), np.bool_)
        for qualified_on_side in side_q.values():
            qualified |= qualified_on_side
    qualified &= eligible

    ticket_rule = draw.tickets
    separate = draw.tombolas is TombolaMode.SEPARATE
    per: dict[Tombola, Ints] = {name: zeros.copy() for name in draw.tombola_names}
    for side, qualified_on_side in side_q.items():
        tombola = Tombola(side.value) if separate else Tombola.POOLED
        if ticket_rule.per_points:
            per[tombola] += np.where(
                qualified_on_side, stats.points(side) // ticket_rule.per_points, 0
            )
        if separate and ticket_rule.per_visit:
            per[tombola] += np.where(
                qualified_on_side, stats.side_visits(side) * ticket_rule.per_visit, 0
            )
    if not separate:
        pooled = per[Tombola.POOLED]
        if ticket_rule.min_one_if_played:
            pooled += np.where(pooled == 0, 1, 0)
        if ticket_rule.per_visit:
            pooled += visits * ticket_rule.per_visit
        pooled += ticket_rule.base
        if ticket_rule.app_bonus:
            pooled += np.where(members.app_user, ticket_rule.app_bonus, 0)
        caps = np.full(len(TIERS), np.iinfo(np.int64).max, np.int64)
        for tier, cap in draw.caps.items():
            caps[TIERS.index(tier)] = cap
        np.minimum(pooled, caps[members.tier], out=pooled)
    for name, counts in per.items():
        per[name] = np.where(qualified, counts, 0)
    tickets = sum(per.values(), zeros.copy())
    return BulkStandings(
        eligible=eligible,
        qualified=qualified,
        visits=np.where(eligible, visits, 0),
        tickets=tickets,
        per_tombola=per,
        side_qualified={s: q & eligible for s, q in side_q.items()},
    )


def _old_enough(promotion: Promotion, members: MemberArrays, day: dt.date) -> Bools:
    known = members.birth_year > 0
    under = (day.month * 100 + day.day) < members.birth_md
    age = day.year - members.birth_year - under
    ok = age >= promotion.exclusions.minimum_age
    if promotion.exclusions.require_date_of_birth:
        return known & ok
    return ~known | ok


def _credited_visits(
    promotion: Promotion, draw: Draw, members: MemberArrays, stats: StatArrays
) -> Ints:
    window = earning_window(promotion, draw)
    first, last = window.first_day.toordinal(), window.last_day.toordinal()
    covered = (
        (members.last_visit >= first) & (members.last_visit <= last) & (members.last_visit > 0)
    )
    if stats.telemetry_since is None:
        return np.where(covered, np.maximum(stats.visits, 1), stats.visits)
    blind = members.last_visit < stats.telemetry_since.toordinal()
    return np.where(covered & blind, stats.visits + 1, stats.visits)
