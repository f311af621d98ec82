"""Rendered terms (Markdown and HTML), the `render` command, and the schema reference in
docs/promotions.md staying complete."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from bonusd.promotions import load_promotion, parse_promotion, render_html, render_markdown
from bonusd.promotions import schema as schema_module
from bonusd.promotions.cli import app

ROOT = Path(__file__).parents[2]
GH = ROOT / "promotions" / "golden-horse-mega-points-chase.toml"
FESTA = ROOT / "promotions" / "montecasino-festa-fortuna.toml"


@pytest.mark.parametrize("path", [GH, FESTA], ids=["golden-horse", "festa"])
def test_kept_terms_are_current(path: Path) -> None:
    """docs/terms holds the rendering of each seed; re-render after changing a file."""
    promotion = load_promotion(path)
    terms = ROOT / "docs" / "terms"
    assert (terms / f"{promotion.id}.md").read_text(encoding="utf-8") == render_markdown(promotion)
    assert (terms / f"{promotion.id}.html").read_text(encoding="utf-8") == render_html(promotion)


def test_golden_horse_schedule_sections() -> None:
    md = render_markdown(load_promotion(GH))
    for expected in (
        "| Halfway draw | Saturday 07 November 2026 | 19:00 (5 winners); 20:00 (5 winners); "
        "21:00 (5 winners) | 01 October 2026 08:00 – 06 November 2026 07:59 |",
        "at least 20,000 points on slots or on tables in the earning window",
        "2 tickets per gaming visit in the window (once per member, not per side)",
        "the 3 months before the draw: 03 July 2026 08:00 until the entry bin closes at 20:00 "
        "on 03 October 2026",
        "5 from the slots tombola and 3 from the tables tombola",
        "| Saturday 03 October 2026 | 17:00 | 22:00 | 3x | slots and tables |",
        "the last update is on Friday 11 December 2026",
        "has 90 seconds from the announcement",
        "within 15 days of the draw",
        "from 08:00 until 15 minutes before each draw",
    ):
        assert expected in md, expected


def test_festa_schedule_sections() -> None:
    md = render_markdown(load_promotion(FESTA))
    for expected in (
        "**Open to:** tiers J, Q only.",
        "J and 10: 200 tickets; Q: 500 tickets; A and K: 1,500 tickets per draw, after bonus",
        "10 bonus tickets for Tsogo Sun App users",
        "a jackpot every 30 minutes from 14:30 to 21:00 (14 per session)",
        "spent at least R100 on the gaming day of the session",
        "in the main and smoking areas",
        # unconfirmed placeholders are never printed as if they were rules:
        "21:30 (number of winners to be confirmed by the promotions desk)",
        "**If nobody qualifies:** to be confirmed by the promotions desk.",
    ):
        assert expected in md, expected


def test_text_is_escaped() -> None:
    text = GH.read_text(encoding="utf-8").replace(
        'name = "Halfway draw"', 'name = "<b>Halfway</b> | *big* & more"'
    )
    promotion = parse_promotion(text, source="x.toml")
    page = render_html(promotion)
    assert "&lt;b&gt;Halfway&lt;/b&gt; | *big* &amp; more" in page
    assert "<b>Halfway" not in page
    md = render_markdown(promotion)
    assert r"## \<b\>Halfway\</b\> \| \*big\* & more" in md
    assert r"| \<b\>Halfway\</b\> \| \*big\* & more | Saturday 07 November 2026 |" in md


def test_render_command_writes_both_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["render", str(GH), "--out", str(tmp_path / "terms")])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (tmp_path / "terms").iterdir())
    assert names == ["golden-horse-mega-points-chase.html", "golden-horse-mega-points-chase.md"]


def test_render_command_refuses_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GH.read_text(encoding="utf-8").replace("factor = 3", "factor = 0", 1))
    result = CliRunner().invoke(app, ["render", str(bad), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "bad.toml: multipliers[1].factor: must be >= 1, got 0" in result.stderr
    assert not list(tmp_path.glob("*.md"))


def _models() -> list[type[BaseModel]]:
    found = []
    for value in vars(schema_module).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel:
            found.append(value)
    return found


def test_every_schema_key_is_documented() -> None:
    doc = (ROOT / "docs" / "promotions.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`(?:[\w<>\[\].-]*\.)?(\w+)`", doc))
    missing = []
    for model in _models():
        if model.__name__ in ("Draw", "JackpotSession"):  # expanded forms, not file keys
            continue
        fields = model.model_fields
        missing += [f"{model.__name__}.{name}" for name in fields if name not in documented]
    assert not missing, f"keys missing from docs/promotions.md: {missing}"
