"""The columnar RAPS judge against the per-player reference rules, and the snapshot file."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bonusd.raps.rules import FloorPlayer, PlayKind, RapsRules, eligibility
from bonusd.raps.snapshot import FloorSnapshot, SnapshotError, judge
from tests.raps.helpers import PLAY_AT, PLAY_AT_MS, players

AT, AT_MS = PLAY_AT, PLAY_AT_MS


def unique(ps: list[FloorPlayer]) -> list[FloorPlayer]:
    seen: dict[str, FloorPlayer] = {}
    for p in ps:
        seen.setdefault(p.card, p)
    return list(seen.values())


@settings(max_examples=300, deadline=None)
@given(
    ps=st.lists(players, max_size=40).map(unique),
    tiers=st.one_of(st.none(), st.frozensets(st.sampled_from("KQAJ"), min_size=1)),
    won=st.frozensets(st.text("0123456789ABC", min_size=1, max_size=6), max_size=5),
    minutes=st.integers(1, 10),
)
def test_judge_agrees_with_the_reference_rules(
    ps: list[FloorPlayer], tiers: frozenset[str] | None, won: frozenset[str], minutes: int
) -> None:
    rules = RapsRules(active_window=dt.timedelta(minutes=minutes), tiers=tiers)
    ref = eligibility(ps, at=AT, rules=rules, previous_winners=won)
    snap = FloorSnapshot.from_players(AT, ps)
    got = judge(FloorSnapshot.parse(snap.serialise()), rules, won)
    assert got.eligible == tuple(p.card for p in ref.eligible)
    cards = snap.columns[0]
    assert {cards[i]: rs for i, rs in got.others.items()} == {
        i.player.card: i.reasons for i in ref.ineligible
    }
    for p in ref.eligible:
        assert snap.place(p.card)["device"] == p.device


def test_the_snapshot_file_round_trips_and_its_report_names_the_reasons() -> None:
    ps = [
        FloorPlayer("C1", PlayKind.EGM, "main", "EGM-1", "B1", None, AT, 20_000, "Q"),
        FloorPlayer("C2", PlayKind.TABLE, "prive", "RL-2", "B2", 3, AT, 20_000, "K"),
    ]
    snap = FloorSnapshot.from_players(AT, ps)
    raw = snap.serialise()
    assert raw.startswith(f"bonusd-raps-floor 1 {AT_MS}\n".encode())
    assert FloorSnapshot.parse(raw).sha256 == snap.sha256
    report = judge(snap, RapsRules()).report("p.s.j1", 1).decode()
    assert (
        '"eligible":[{"area":"main","bank":"B1","card":"C1","device":"EGM-1","seat":""}]' in report
    )
    assert '"reasons":["outside_session_areas"]' in report


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"bonusd-raps-floor 2 1\n", "not a RAPS floor snapshot"),
        (b"bonusd-raps-floor 1 x\n", "not a RAPS floor snapshot"),
        (b"bonusd-raps-floor 1 1", "not a RAPS floor snapshot"),
        (b"bonusd-raps-floor 1 1\nC1\tegm\tmain\tE\t\tB\t1\t2\tQ\t0", "ends with a line feed"),
        (b"bonusd-raps-floor 1 1\nC1\tegm\tmain\tE\t\tB\t1\t2\tQ\n", "has 10 fields"),
        (b"bonusd-raps-floor 1 1\nC1\tslot\tmain\tE\t\tB\t1\t2\tQ\t0\n", "egm or table"),
        (b"bonusd-raps-floor 1 1\nC1\tegm\tmain\tE\t\tB\t1\t2\tQ\tyes\n", "0 or 1"),
        (b"bonusd-raps-floor 1 1\nC1\tegm\tmain\tE\t\tB\t-1\t2\tQ\t0\n", "last_play_ms"),
        (
            b"bonusd-raps-floor 1 1\nC1\tegm\tmain\tE\t\tB\t1\t2\tQ\t0\nC1\tegm\tm\tE\t\tB\t1\t2\tQ\t0\n",
            "appears twice",
        ),
    ],
)
def test_a_malformed_snapshot_is_refused(raw: bytes, says: str) -> None:
    with pytest.raises(SnapshotError, match=says):
        FloorSnapshot.parse(raw).columns  # noqa: B018


@settings(max_examples=100, deadline=None)
@given(
    ps=st.lists(players, max_size=30).map(unique),
    days=st.lists(st.sampled_from(["2025-10-03", "2025-10-04"]), min_size=30, max_size=30),
)
def test_floor_rows_become_the_snapshot_of_the_jackpots_gaming_day(
    ps: list[FloorPlayer], days: list[str]
) -> None:
    """A `floor-row` line is a snapshot line plus its gaming day: a line of another day
    has spent nothing on the jackpot's day."""
    lines = FloorSnapshot.from_players(AT, ps).body.splitlines()
    rows = "\n".join(f"{line}\t{day}" for line, day in zip(lines, days, strict=False))
    got = FloorSnapshot.of_rows(AT, "2025-10-04", rows)
    want = [
        replace(p, spend_cents=p.spend_cents if day == "2025-10-04" else 0)
        for p, day in zip(ps, days, strict=False)
    ]
    assert got == FloorSnapshot.from_players(AT, want)


def test_a_damaged_floor_row_index_is_refused() -> None:
    with pytest.raises(SnapshotError, match="rebuild it"):
        FloorSnapshot.of_rows(AT, "2025-10-04", "C1\tegm\tmain\tE\t\tB\t1\t2\tQ\t0")
