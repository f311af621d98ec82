"""The kiosk tests' fixtures: the Golden Horse promotion at this test's site, and an MQTT
publisher to play on its floor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.browser.helpers import GH, promotions_folder
from tests.telemetry_helpers import Publisher


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    return settings.model_copy(update={"promotions": promotions_folder(tmp_path, site, GH)})


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    publisher = Publisher(broker, site)
    yield publisher
    publisher.close()
