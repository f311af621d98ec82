"""The bulk (numpy) rules give exactly the numbers of the reference `standing`, member by
member, for every draw of both seed promotions."""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bonusd.promotions import MemberWindowStats, SideStats, standing
from bonusd.promotions.bulk import MemberArrays, StatArrays, bulk_standings, needed_fields
from bonusd.registry.records import Member, Tier
from tests.promotions.helpers import all_draws

dates = st.dates(min_value=dt.date(1940, 1, 1), max_value=dt.date(2012, 12, 31))
member_st = st.builds(
    Member,
    card=st.from_regex(r"[0-9]{6}", fullmatch=True),
    name=st.just("M"),
    tier=st.sampled_from(list(Tier)),
    app_user=st.booleans(),
    excluded=st.booleans(),
    date_of_birth=st.one_of(st.none(), dates),
    last_visit=st.one_of(st.none(), st.dates(dt.date(2025, 6, 1), dt.date(2026, 12, 31))),
)
side_st = st.builds(
    SideStats,
    points=st.one_of(st.integers(0, 30), st.integers(0, 2_000_000)),
    visits=st.integers(0, 30),
    plays=st.integers(0, 3),
)


@st.composite
def stats_st(draw: st.DrawFn) -> MemberWindowStats:
    slots, tables = draw(side_st), draw(side_st)
    low = max(slots.visits, tables.visits)
    return MemberWindowStats(slots, tables, draw(st.integers(low, low + 10)))


@settings(max_examples=60)
@given(
    rows=st.lists(st.tuples(member_st, stats_st()), min_size=1, max_size=40),
    since=st.one_of(st.none(), st.dates(dt.date(2025, 9, 1), dt.date(2026, 12, 1))),
)
def test_bulk_equals_reference(
    rows: list[tuple[Member, MemberWindowStats]], since: dt.date | None
) -> None:
    members = [m for m, _ in rows]
    stats = [MemberWindowStats(s.slots, s.tables, s.visits, telemetry_since=since) for _, s in rows]
    arrays = MemberArrays.from_members(members)
    columns = StatArrays(
        slots_points=np.array([s.slots.points for s in stats], np.int64),
        tables_points=np.array([s.tables.points for s in stats], np.int64),
        slots_plays=np.array([s.slots.plays for s in stats], np.int64),
        tables_plays=np.array([s.tables.plays for s in stats], np.int64),
        slots_visits=np.array([s.slots.visits for s in stats], np.int64),
        tables_visits=np.array([s.tables.visits for s in stats], np.int64),
        visits=np.array([s.visits for s in stats], np.int64),
        telemetry_since=since,
    )
    for promotion, draw in all_draws():
        bulk = bulk_standings(promotion, draw, arrays, columns)
        # a recompute fetches only the needed columns: the others must not matter
        needed = needed_fields(draw)
        sparse = dataclasses.replace(
            columns,
            **{
                f.name: np.zeros_like(getattr(columns, f.name))
                for f in dataclasses.fields(StatArrays)
                if f.name != "telemetry_since" and f.name not in needed
            },
        )
        lean = bulk_standings(promotion, draw, arrays, sparse)
        assert np.array_equal(lean.tickets, bulk.tickets), (promotion.id, draw.id, needed)
        assert np.array_equal(lean.qualified, bulk.qualified), (promotion.id, draw.id)
        for i, (member, st_) in enumerate(zip(members, stats, strict=True)):
            ref = standing(promotion, draw, member, st_, activated=True)
            where = (promotion.id, draw.id, member, st_)
            assert bool(bulk.eligible[i]) == ref.eligible, where
            assert bool(bulk.qualified[i]) == ref.qualified, where
            assert int(bulk.tickets[i]) == ref.tickets, where
            assert int(bulk.visits[i]) == ref.visits, where
            for tombola, n in ref.per_tombola.items():
                assert int(bulk.per_tombola[tombola][i]) == n, where
            for side in ref.sides:
                assert bool(bulk.side_qualified[side.side][i]) == side.qualified, where
