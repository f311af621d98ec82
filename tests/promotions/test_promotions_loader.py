"""Loading promotion files: the seeds load and `check` passes; each kind of error names the
file, the path inside it and what is wrong; all problems come at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bonusd.errors import ConfigError
from bonusd.promotions import PromotionFileError, load_promotion, load_promotions, parse_promotion
from bonusd.promotions.cli import app

FOLDER = Path(__file__).parents[2] / "promotions"
GH = FOLDER / "golden-horse-mega-points-chase.toml"
FESTA = FOLDER / "montecasino-festa-fortuna.toml"


def gh_text() -> str:
    return GH.read_text(encoding="utf-8")


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def problems(text: str, source: str = "golden-horse.toml") -> list[str]:
    with pytest.raises(PromotionFileError) as caught:
        parse_promotion(text, source=source)
    assert isinstance(caught.value, ConfigError)
    return [str(p) for p in caught.value.problems]


def test_both_seeds_load() -> None:
    promotions = {p.id: p for p in load_promotions(FOLDER)}
    assert set(promotions) >= {"golden-horse-mega-points-chase", "montecasino-festa-fortuna"}
    gh = promotions["golden-horse-mega-points-chase"]
    assert [d.id for d in gh.draw_list] == ["launch", "halfway", "bonus", "final"]


@pytest.mark.parametrize("path", [GH, FESTA], ids=["golden-horse", "festa"])
def test_check_passes_on_the_seeds(path: Path) -> None:
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    assert f"{path.name}: ok: " in result.stdout


def test_check_warns_about_placeholders_and_idle_multipliers() -> None:
    festa = CliRunner().invoke(app, ["check", str(FESTA)])
    assert "warning: draw_series.wednesday.rounds[1].winners: placeholder" in festa.stderr
    gh = CliRunner().invoke(app, ["check", str(GH)])
    assert "warning: multipliers[4] (final-day): falls in no points draw" in gh.stderr


ERROR_CASES = [
    # a limit: the example of the brief
    (
        "threshold = 20000",
        "threshold = -5",
        "golden-horse.toml: draws.halfway.qualification.threshold: must be > 0, got -5",
    ),
    # a wrong type
    (
        "per_visit = 2                    # cl. 7 Halfway",
        'per_visit = "two" #',
        "golden-horse.toml: draws.halfway.tickets.per_visit: must be a whole number, got 'two'",
    ),
    # a misspelt key, with a suggestion
    (
        "app_bonus = 5 ",
        "app_bonnus = 5 ",
        "golden-horse.toml: draws.launch.tickets.app_bonnus: unknown key "
        "(did you mean 'app_bonus'?)",
    ),
    # a value outside a closed list
    (
        'weekday = "friday"',
        'weekday = "fri"',
        "golden-horse.toml: leaderboards.weekday: must be 'monday', 'tuesday', 'wednesday', "
        "'thursday', 'friday', 'saturday' or 'sunday', got 'fri'",
    ),
    # a required key missing (list items count from 1)
    (
        'time = "19:00"                   # cl. 8 Halfway',
        "#",
        "golden-horse.toml: draws.halfway.rounds[1].time: is required",
    ),
    # a bad id used as a table key
    (
        "[prize_sets.reveal]",
        "[prize_sets.Reveal]",
        "golden-horse.toml: prize_sets.Reveal: key must match ^[a-z0-9][a-z0-9-]{0,63}$, "
        "got 'Reveal'",
    ),
    # a bad id as a value
    (
        'id = "bonus-day"',
        'id = "Bonus Day"',
        "golden-horse.toml: multipliers[3].id: value must match ^[a-z0-9][a-z0-9-]{0,63}$, "
        "got 'Bonus Day'",
    ),
    # a winners value of the wrong shape
    (
        "winners = 10 ",
        'winners = "ten" ',
        "golden-horse.toml: draws.launch.rounds[1].winners: must be a whole number (pooled) "
        "or a table like { slots = 5, tables = 3 }, got 'ten'",
    ),
    # cross-field: a window ending before it starts
    (
        "first = 2026-10-01, last = 2026-11-05",
        "first = 2026-11-05, last = 2026-10-01",
        "golden-horse.toml: draws.halfway.window.last: must be on or after first (2026-11-05), "
        "got 2026-10-01",
    ),
    # cross-field: a field the window kind does not use
    (
        'window = { kind = "months_before_draw", months = 3 }',
        'window = { kind = "months_before_draw", months = 3, first = 2026-07-01 }',
        "golden-horse.toml: draws.launch.window.first: is not used by kind "
        "'months_before_draw'; remove it",
    ),
    # cross-field: a reference to a prize set that does not exist
    (
        'prize_set = "reveal"             # cl. 8 Bonus',
        'prize_set = "revea" #',
        "golden-horse.toml: draws.bonus.prize_set: no prize set 'revea' (prize_sets: reveal)",
    ),
    # cross-field: a tombola the draw does not have
    (
        "winners = { slots = 5, tables = 3 }",
        "winners = { slots = 5, pooled = 3 }",
        "golden-horse.toml: draws.final.rounds[1].winners.pooled: no such tombola (slots, tables)",
        # ... and so the tables tombola has no winners at all:
        "golden-horse.toml: draws.final.rounds: every tombola needs winners in some round",
    ),
    # cross-field: overlapping multiplier windows on one side
    (
        'date = 2026-11-28                # cl. 7 Bonus "on the day of the draw"',
        "date = 2026-11-07 #",
        "golden-horse.toml: multipliers[3]: overlaps multipliers[2] (halfway-day) on slots, tables",
    ),
    # cross-field: a draw after the promotion ends
    (
        "date = 2026-12-12                # cl. 8 Final",
        "date = 2027-01-09 #",
        "golden-horse.toml: draws.final.date: must fall within the promotion "
        "(2026-10-01 to 2026-12-12), got 2027-01-09",
    ),
    # cross-field: the bin closing after the first round
    (
        'bin_close = "19:00"',
        'bin_close = "19:30"',
        "golden-horse.toml: draws.halfway.activation.bin_close: must not be after the first round",
    ),
    # a `defaulted` entry that names nothing
    (
        '"draws.final.tickets.per_points",',
        '"draws.final.tickets.per_pts",',
        "golden-horse.toml: defaulted[10]: 'draws.final.tickets.per_pts' names no setting "
        "in this file",
    ),
    # an unknown time zone
    (
        'timezone = "Africa/Johannesburg"',
        'timezone = "Africa/Joburg"',
        "golden-horse.toml: timezone: unknown time zone 'Africa/Joburg' (use an IANA name)",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [(c[0], c[1], list(c[2:])) for c in ERROR_CASES],
    ids=[c[2].split(": ")[1] for c in ERROR_CASES],
)
def test_each_kind_of_error_names_file_path_and_problem(
    old: str, new: str, expected: list[str]
) -> None:
    assert problems(edit(gh_text(), old, new)) == expected


def test_all_problems_are_reported_at_once() -> None:
    text = edit(gh_text(), "threshold = 20000", "threshold = -5")
    text = edit(text, "app_bonus = 5 ", "app_bonnus = 5 ")
    text = edit(text, 'weekday = "friday"', 'weekday = "fri"')
    found = problems(text)
    assert len(found) == 3
    assert all(p.startswith("golden-horse.toml: ") for p in found)


def test_toml_syntax_error_names_the_line() -> None:
    found = problems('id = \nname = "x"\n', source="broken.toml")
    assert len(found) == 1
    assert re.match(r"broken\.toml: \(file\): not valid TOML: .*line", found[0])


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(PromotionFileError, match=r"missing\.toml: \(file\): cannot read it"):
        load_promotion(tmp_path / "missing.toml")


def test_folder_refuses_a_promotion_id_used_twice(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(gh_text(), encoding="utf-8")
    (tmp_path / "b.toml").write_text(gh_text(), encoding="utf-8")
    (tmp_path / "c.toml").write_text("id = 1\n", encoding="utf-8")
    with pytest.raises(PromotionFileError) as caught:
        load_promotions(tmp_path)
    found = [str(p) for p in caught.value.problems]
    assert "b.toml: id: 'golden-horse-mega-points-chase' is also the id in a.toml" in found
    assert any(p.startswith("c.toml: id: ") for p in found)


def test_check_exits_2_with_every_message(tmp_path: Path) -> None:
    bad = tmp_path / "golden-horse.toml"
    text = edit(gh_text(), "threshold = 20000", "threshold = -5")
    bad.write_text(edit(text, "app_bonus = 5 ", "app_bonnus = 5 "), encoding="utf-8")
    result = CliRunner().invoke(app, ["check", str(bad)])
    assert result.exit_code == 2
    assert (
        "golden-horse.toml: draws.halfway.qualification.threshold: must be > 0, got -5"
        in result.stderr
    )
    assert "golden-horse.toml: draws.launch.tickets.app_bonnus: unknown key" in result.stderr
    assert "refused (2 problem(s))" in result.stderr
