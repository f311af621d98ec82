"""Rule changes for a rehearsal (`--set`), its date range, the promotion written back as
TOML, and the report's self-containment: pure, no services."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path

import pytest

from bonusd.promotions import PromotionFileError, parse_promotion
from bonusd.promotions.overrides import (
    apply_overrides,
    parse_path,
    parse_value,
    restrict_to_dates,
    to_toml,
)
from simulators.rehearsal.plan import RehearsalPlan, prepare
from simulators.stepped import _count_pubacks, _packet
from tests.daemon_helpers import PROJECT

GOLDEN_HORSE = PROJECT / "promotions" / "golden-horse-mega-points-chase.toml"
FESTA = PROJECT / "promotions" / "montecasino-festa-fortuna.toml"


def _raw(path: Path = GOLDEN_HORSE) -> dict[str, object]:
    return tomllib.loads(path.read_text())


@pytest.mark.parametrize("path", [GOLDEN_HORSE, FESTA], ids=["golden-horse", "festa"])
def test_a_promotion_written_back_reads_the_same(path: Path) -> None:
    raw = _raw(path)
    text = to_toml(raw)
    assert tomllib.loads(text) == raw
    assert parse_promotion(text, source="x") == parse_promotion(path.read_text(), source="x")


def test_paths_use_the_files_notation() -> None:
    assert parse_path("draws.halfway.rounds[2].winners") == [
        "draws",
        "halfway",
        "rounds",
        1,
        "winners",
    ]
    assert parse_path('draw_series.saturday.caps."J|10"') == [
        "draw_series",
        "saturday",
        "caps",
        "J|10",
    ]
    assert parse_value("15000") == 15000
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value("2026-10-05") == dt.date(2026, 10, 5)
    assert parse_value("14:30") == "14:30"  # not TOML: taken as text, as the file writes times


def test_set_changes_the_rule_and_nothing_else() -> None:
    raw = _raw()
    changed = apply_overrides(
        raw,
        [
            "draws.halfway.qualification.threshold=15000",
            "multipliers[2].factor=2",
            "draws.bonus.caps.Q=300",  # a table the file leaves at its default
            "prize_sets.reveal.values_cents=[500000, 100000]",
        ],
        source="gh.toml",
    )
    promotion = parse_promotion(to_toml(changed), source="gh.toml")
    assert promotion.draw("halfway").qualification.threshold == 15000
    assert promotion.multipliers[1].factor == 2
    assert {t.value: c for t, c in promotion.draw("bonus").caps.items()} == {"Q": 300}
    assert promotion.prize_sets["reveal"].values_cents == [500000, 100000]
    assert raw == _raw()  # the original is not touched
    original = parse_promotion(GOLDEN_HORSE.read_text(), source="gh.toml")
    assert promotion.draw("final") == original.draw("final")


@pytest.mark.parametrize(
    ("assignment", "says"),
    [
        ("draws.halfway.qualification.treshold=1", "unknown key 'treshold' in draws.halfway"),
        ("draws.halfway.qualification.treshold=1", "did you mean 'threshold'?"),
        ("draws.halfwya.tickets.per_visit=3", "draws has no 'halfwya' (there is: launch,"),
        ("draws.halfway.rounds[7].time=19:30", "has 3 item(s); there is no [7]"),
        ("draws.halfway.name.first=x", "draws.halfway.name is a single value"),
        ("threshold", "write PATH=VALUE"),
        ("multipliers[0].factor=2", "list items are counted from 1"),
    ],
)
def test_an_unknown_or_malformed_setting_is_refused_clearly(assignment: str, says: str) -> None:
    with pytest.raises(PromotionFileError) as caught:
        prepare(RehearsalPlan(GOLDEN_HORSE, floor="ci", sets=(assignment,)))
    assert says in str(caught.value)
    assert "golden-horse-mega-points-chase.toml (with --set)" in str(caught.value)


def test_a_bad_value_is_refused_by_the_files_own_checks() -> None:
    with pytest.raises(PromotionFileError) as caught:
        prepare(
            RehearsalPlan(
                GOLDEN_HORSE, floor="ci", sets=("draws.halfway.qualification.threshold=-5",)
            )
        )
    assert "draws.halfway.qualification.threshold: must be > 0, got -5" in str(caught.value)


def test_draws_and_sessions_before_the_first_day_are_left_out() -> None:
    raw = _raw(FESTA)
    kept, left_out = restrict_to_dates(raw, dt.date(2025, 10, 20))
    promotion = parse_promotion(to_toml(kept), source="festa")
    assert left_out == [
        "draw_series.wednesday (2025-10-15)",
        "jackpot_series.jackpot (2025-10-04, 2025-10-11, 2025-10-18)",
    ]
    assert min(d.date for d in promotion.draw_list) == dt.date(2025, 10, 22)
    assert min(s.date for s in promotion.jackpot_sessions) == dt.date(2025, 10, 26)
    gh, gone = restrict_to_dates(_raw(), dt.date(2026, 10, 5))
    assert gone == ["draws.launch (2026-10-03)"]
    assert not any(p.startswith("draws.launch") for p in gh["defaulted"])  # type: ignore[union-attr]
    parse_promotion(to_toml(gh), source="gh")


def test_the_rehearsal_span_must_lie_in_the_promotion() -> None:
    with pytest.raises(Exception, match="rehearse days inside the promotion"):
        prepare(RehearsalPlan(GOLDEN_HORSE, floor="ci", first=dt.date(2026, 9, 1)))
    prepared = prepare(RehearsalPlan(GOLDEN_HORSE, floor="ci", last=dt.date(2026, 10, 3)))
    assert prepared.start.isoformat() == "2026-10-01T08:00:00+02:00"
    assert prepared.floor_end.isoformat() == "2026-10-04T08:00:00+02:00"
    assert prepared.settle_end == prepared.floor_end  # a part of the campaign stops there
    whole = prepare(RehearsalPlan(GOLDEN_HORSE, floor="ci"))
    assert whole.settle_end > whole.floor_end  # the whole one runs on to the letters' lapse


def test_the_stepped_publisher_counts_pubacks_across_reads() -> None:
    acks = b"".join(_packet(0x40, n.to_bytes(2, "big")) for n in (1, 2, 3))
    ping = _packet(0xD0, b"")
    counted, rest = _count_pubacks(acks + ping + acks[:2])
    assert (counted, rest) == (3, acks[:2])
    counted, rest = _count_pubacks(rest + acks[2:4])
    assert (counted, rest) == (1, b"")
    big = _packet(0x30, b"x" * 300)  # a two-byte remaining length
    assert _count_pubacks(big[:2]) == (0, big[:2])
    assert _count_pubacks(big + acks) == (3, b"")
