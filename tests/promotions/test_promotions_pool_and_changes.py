"""Frozen entry pools (canonical form, hash) and rule-change diffs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from pathlib import Path

import pytest

from bonusd.promotions import EntryPool, Tombola, diff_promotions, load_promotion, parse_promotion

FOLDER = Path(__file__).parents[2] / "promotions"
CLOSED = dt.datetime(2026, 11, 7, 17, 0, tzinfo=dt.UTC)  # 19:00 SAST


def pool(**counts: int) -> EntryPool:
    return EntryPool.freeze(
        promotion_id="golden-horse-mega-points-chase",
        draw_id="halfway",
        closed_at=CLOSED,
        counts={Tombola.POOLED: counts},
    )


def test_canonical_form_and_hash() -> None:
    p = pool(c1003=2, c1001=39, c1002=0)
    expected = (
        b'{"closed_at":"2026-11-07T17:00:00Z","draw":"halfway","format":1,'
        b'"promotion":"golden-horse-mega-points-chase","seated":[],'
        b'"tombolas":{"pooled":[["c1001",39],["c1003",2]]}}'
    )
    assert p.canonical() == expected  # sorted keys and cards; zero counts left out
    assert p.sha256 == hashlib.sha256(expected).hexdigest()
    assert EntryPool.parse(expected) == p


def test_pool_is_immutable() -> None:
    p = pool(a=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.draw_id = "bonus"  # type: ignore[misc]


def test_entries_per_tombola_are_a_copy() -> None:
    p = pool(a=3, b=1, c=2)
    entries = p.entries(Tombola.POOLED)
    assert entries == {"a": 3, "b": 1, "c": 2}
    entries["a"] = 99
    assert p.entries(Tombola.POOLED)["a"] == 3
    assert p.total(Tombola.POOLED) == 6
    with pytest.raises(KeyError, match="no slots tombola"):
        p.holders(Tombola.SLOTS)


def test_parse_refuses_a_non_canonical_serialisation() -> None:
    text = pool(a=1).canonical().replace(b'"format":1,', b'"format": 1,')
    with pytest.raises(ValueError, match="not a canonical"):
        EntryPool.parse(text)


def test_diff_lists_each_rule_change_in_words() -> None:
    path = FOLDER / "golden-horse-mega-points-chase.toml"
    old = load_promotion(path)
    text = path.read_text(encoding="utf-8")
    text = text.replace("threshold = 20000", "threshold = 25000")
    text = text.replace("date = 2026-12-12                # cl. 8 Final", "date = 2026-12-11 #")
    text = text.replace(
        'sides = ["slots", "tables"]\n\n[[multipliers]]\nid = "halfway-day"',
        'sides = ["slots"]\n\n[[multipliers]]\nid = "halfway-day"',
    )
    new = parse_promotion(text, source=path.name)
    assert [str(c) for c in diff_promotions(old, new)] == [
        'multipliers.launch-day.sides: removed ["tables"]',
        "draws.halfway.qualification.threshold: 20000 -> 25000",
        "draws.final.date: 2026-12-12 -> 2026-12-11",
    ]
    assert diff_promotions(old, old) == []


def test_diff_reports_added_and_removed_draws() -> None:
    path = FOLDER / "montecasino-festa-fortuna.toml"
    old = load_promotion(path)
    text = path.read_text(encoding="utf-8").replace("2026-01-07, 2026-01-14,", "2026-01-07,")
    new = parse_promotion(text, source=path.name)
    assert [str(c) for c in diff_promotions(old, new)] == [
        'draw_series.wednesday.dates: removed ["2026-01-14"]'
    ]
    assert [str(c) for c in diff_promotions(new, old)] == [
        'draw_series.wednesday.dates: added ["2026-01-14"]'
    ]
