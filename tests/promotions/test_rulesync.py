"""Promotion rules stay the same on every daemon of a site: a reload on one daemon is
run by the others (whose files give the same rules) without a second audit record, and a
daemon whose files differ keeps its rules and says so. Two real daemons, one Redis."""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path

import pytest

from bonusd.clocks.clock import ManualClock
from bonusd.promotions.rulesync import fingerprint
from bonusd.settings import Settings
from simulators.local.services import free_port
from tests.daemon_helpers import Daemon, running
from tests.promotions.helpers import GH, at

THRESHOLD = 'qualification = { kind = "threshold", threshold = 20000'


def threshold(folder: Path, value: int) -> None:
    path = folder / f"{GH}.toml"
    text = path.read_text()
    marker = THRESHOLD[: -len("20000")]
    start = text.index(marker) + len(marker)
    end = start + len(text[start:]) - len(text[start:].lstrip("0123456789"))
    path.write_text(text[:start] + str(value) + text[end:])


def rule(d: Daemon) -> int | None:
    return d.service.promotions[0].draw("halfway").qualification.threshold


async def same_rules(one: Daemon, two: Daemon) -> None:
    async with asyncio.timeout(10):
        while fingerprint(one.service.promotions) != fingerprint(two.service.promotions):
            await asyncio.sleep(0.02)


async def test_a_reload_reaches_every_daemon_and_a_daemon_with_other_files_says_so(
    gh_settings: Settings, promotions_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = tmp_path / "other-host"
    shutil.copytree(promotions_dir, other)
    second = gh_settings.model_copy(
        update={
            "promotions": other,
            "http_port": free_port(),
            "mqtt_client_id": gh_settings.mqtt_client_id + "-2",
        }
    )
    clock = ManualClock(at(10, 9))
    async with running(gh_settings, clock) as one, running(second, clock) as two:
        assert rule(one) == rule(two) == 20_000
        threshold(promotions_dir, 25_000)  # the new files, deployed on both hosts
        threshold(other, 25_000)
        r = await one.http.post("/promotions/reload")
        assert r.status_code == 200, r.text
        await same_rules(one, two)
        assert rule(two) == 25_000
        changes = await two.get("/promotions/changes")
        assert len(changes) == 1  # recorded once, by the daemon that reloaded

        threshold(promotions_dir, 30_000)  # deployed on the first host only
        with caplog.at_level(logging.ERROR, logger="bonusd.promotions.rulesync"):
            r = await one.http.post("/promotions/reload")
            assert r.status_code == 200, r.text
            async with asyncio.timeout(10):
                while "deploy the same promotion files" not in caplog.text:
                    await asyncio.sleep(0.02)
        assert rule(one) == 30_000
        assert rule(two) == 25_000  # kept: its files do not give the site's rules

        threshold(other, 30_000)  # the missed host is fixed; a restart of it, or a reload:
        r = await one.http.post("/promotions/reload")
        assert r.status_code == 200
        await same_rules(one, two)
        assert rule(two) == 30_000
