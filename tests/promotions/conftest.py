"""Fixtures of the promotion tests: a folder holding Golden Horse's promotion for this
test's site, the daemon settings that read it, and a telemetry publisher."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT
from tests.promotions.helpers import GH
from tests.telemetry_helpers import Publisher


@pytest.fixture
def promotions_dir(tmp_path: Path, site: str) -> Path:
    """The seed promotion file, moved to this test's site."""
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return folder


@pytest.fixture
def gh_settings(settings: Settings, promotions_dir: Path) -> Settings:
    """The suite's daemon settings, running the seed promotion moved to this test's site."""
    return settings.model_copy(update={"promotions": promotions_dir})


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()
