"""Properties of the ticket rules and entry pools over both seed promotions (hypothesis)."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from bonusd.promotions import (
    Draw,
    EntryPool,
    MemberWindowStats,
    Promotion,
    SideStats,
    Tombola,
    standing,
)
from bonusd.registry.records import Member, Tier
from tests.promotions.helpers import all_draws, seeds

points = st.integers(min_value=0, max_value=3_000_000)
side_stats = st.builds(
    SideStats,
    points=points,
    visits=st.integers(min_value=0, max_value=80),
    plays=st.integers(min_value=0, max_value=500),
)


@st.composite
def window_stats(draw: st.DrawFn) -> MemberWindowStats:
    slots, tables = draw(side_stats), draw(side_stats)
    low = max(slots.visits, tables.visits)
    visits = draw(st.integers(min_value=low, max_value=low + 80))
    return MemberWindowStats(slots=slots, tables=tables, visits=visits)


members = st.builds(
    Member,
    card=st.from_regex(r"[0-9]{4,8}", fullmatch=True),
    name=st.just("Test Member"),
    tier=st.sampled_from(list(Tier)),
    app_user=st.booleans(),
    excluded=st.booleans(),
    date_of_birth=st.one_of(
        st.none(), st.dates(min_value=dt.date(1930, 1, 1), max_value=dt.date(2012, 1, 1))
    ),
    last_visit=st.one_of(
        st.none(), st.dates(min_value=dt.date(2026, 1, 1), max_value=dt.date(2026, 12, 1))
    ),
)
promotion_draws = st.sampled_from(all_draws())


@given(promotion_draws, members, window_stats(), st.booleans())
def test_tickets_never_negative_and_caps_hold(
    pd: tuple[Promotion, Draw], member: Member, stats: MemberWindowStats, activated: bool
) -> None:
    promotion, draw = pd
    s = standing(promotion, draw, member, stats, activated=activated)
    assert s.tickets >= 0
    assert all(n >= 0 for n in s.per_tombola.values())
    assert s.tickets == sum(s.per_tombola.values())
    assert set(s.per_tombola) == set(draw.tombola_names)
    cap = draw.caps.get(member.tier)
    if cap is not None:
        assert s.tickets <= cap
    assert 0 <= s.entries <= s.tickets
    if not s.qualified:
        assert s.tickets == 0


@given(promotion_draws, members, window_stats())
def test_excluded_members_never_hold_tickets(
    pd: tuple[Promotion, Draw], member: Member, stats: MemberWindowStats
) -> None:
    promotion, draw = pd
    excluded = member.model_copy(update={"excluded": True})
    s = standing(promotion, draw, excluded, stats, activated=True)
    assert (s.eligible, s.tickets, s.entries) == (False, 0, 0)


@given(
    st.sampled_from(["halfway", "bonus", "final"]),
    st.sampled_from(list(Tier)),
    points,
    points,
)
def test_slots_and_tables_are_never_summed(draw_id: str, tier: Tier, a: int, b: int) -> None:
    """With no visits and no app bonus, a member's tickets are exactly what each side
    earns alone, and a side qualifies on its own points only."""
    promotion = seeds()[0]
    member = Member(card="1", name="x", tier=tier)

    def tickets(slots: int, tables: int) -> int:
        stats = MemberWindowStats(slots=SideStats(slots), tables=SideStats(tables))
        return standing(promotion, draw_id, member, stats, activated=True).tickets

    threshold = promotion.draw(draw_id).qualification.threshold
    assert threshold is not None
    assert tickets(a, b) == tickets(a, 0) + tickets(0, b)
    assert tickets(a, b) == (a // 1000) * (a >= threshold) + (b // 1000) * (b >= threshold)


@given(
    st.sampled_from(seeds()[1].draw_list),
    st.sampled_from(list(Tier)),
    st.integers(min_value=100, max_value=400_000),
    st.integers(min_value=100, max_value=400_000),
)
def test_festa_sides_count_apart_then_cap(draw: Draw, tier: Tier, a: int, b: int) -> None:
    promotion = seeds()[1]
    member = Member(card="1", name="x", tier=tier)
    stats = MemberWindowStats(slots=SideStats(a, 1, 1), tables=SideStats(b, 1, 1), visits=1)
    s = standing(promotion, draw, member, stats, activated=True)
    if tier not in promotion.draw_tiers(draw):
        assert s.tickets == 0
        return
    earned = a // 100 + b // 100
    assert s.tickets == min(earned, draw.caps.get(tier, earned))


holdings = st.dictionaries(
    st.from_regex(r"[0-9A-Z]{1,10}", fullmatch=True), st.integers(0, 5_000), max_size=40
)


@given(holdings, holdings, st.lists(st.from_regex(r"[0-9A-Z]{1,10}", fullmatch=True)))
def test_a_frozen_pool_never_changes(
    slots: dict[str, int], tables: dict[str, int], seated: list[str]
) -> None:
    closed = dt.datetime(2026, 12, 12, 18, tzinfo=dt.UTC)

    def freeze(s: dict[str, int], t: dict[str, int], seats: list[str]) -> EntryPool:
        return EntryPool.freeze(
            promotion_id="golden-horse-mega-points-chase",
            draw_id="final",
            closed_at=closed,
            counts={Tombola.TABLES: t, Tombola.SLOTS: s},
            seated=seats,
        )

    pool = freeze(slots, tables, seated)
    digest = pool.sha256
    # Input order does not matter; the canonical form round-trips; the hash is stable.
    reordered = freeze(dict(reversed(slots.items())), dict(reversed(tables.items())), seated[::-1])
    assert reordered == pool
    assert reordered.sha256 == digest
    assert EntryPool.parse(pool.canonical()).sha256 == digest
    assert pool.sha256 == digest
    # Seated members and zero counts hold no tickets; everyone else keeps their count.
    for tombola, given_counts in ((Tombola.SLOTS, slots), (Tombola.TABLES, tables)):
        kept = {c: n for c, n in given_counts.items() if n and c not in seated}
        assert pool.entries(tombola) == kept


@given(stats=window_stats(), member=members, activated=st.booleans())
def test_explain_changes_texts_never_numbers(
    stats: MemberWindowStats, member: Member, activated: bool
) -> None:
    """Bulk recomputes skip the texts; the numbers must be the very same."""
    for promotion, draw in all_draws():
        full = standing(promotion, draw, member, stats, activated=activated)
        quick = standing(promotion, draw, member, stats, activated=activated, explain=False)
        assert quick.tickets == full.tickets
        assert dict(quick.per_tombola) == dict(full.per_tombola)
        assert (quick.qualified, quick.eligible, quick.visits) == (
            full.qualified,
            full.eligible,
            full.visits,
        )
        assert [(x.rule, x.tickets) for x in quick.breakdown] == [
            (x.rule, x.tickets) for x in full.breakdown
        ]
