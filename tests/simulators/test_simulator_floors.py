"""Named floors and the member base: the floor files, their checks, and the members.csv
bonusd imports (tiers, app users, SMS opt-ins with mobiles, exclusions and staff)."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bonusd.registry.files import read_file
from bonusd.registry.records import Device as RegDevice
from bonusd.registry.records import Member as RegMember
from simulators import (
    FloorConfig,
    FloorFileError,
    build_floor,
    export_registry,
    floor_names,
    load_floor,
    parse_floor,
)
from tests.daemon_helpers import PROJECT

DAY = dt.date(2026, 10, 3)
VALID = """
name = "Test casino"
site = "test"
[areas.main]
egms = 20
bank_sizes = [6, 8]
tables = { blackjack = 2, roulette = 1 }
[areas.smoking]
egms = 10
[population]
members = 500
"""


def test_the_named_floors_have_their_casinos_size() -> None:
    assert set(floor_names()) >= {"montecasino", "golden-horse", "ci"}
    monte = load_floor("montecasino")
    assert monte.site == "montecasino"
    assert 1_650 <= monte.config.egms <= 1_750
    assert monte.config.tables == 70
    assert [a.name for a in monte.config.layout] == ["main", "smoking", "prive"]
    horse = load_floor("golden-horse")
    assert 950 <= horse.config.egms <= 1_050
    assert horse.config.tables == 30
    ci = load_floor("ci")
    assert ci.config.egms <= 200
    assert str(ci.zone) == "Africa/Johannesburg"


def test_a_named_floor_builds_its_layout_in_banks_and_pits() -> None:
    spec = load_floor("montecasino")
    # its layout, built before its 80,000 members, does not depend on them: a few will do
    config = dataclasses.replace(spec.config, members=50)
    floor = build_floor(config, seed=1, as_of=DAY)
    egms, tables = floor.egms, floor.tables
    assert len(egms) == spec.config.egms
    assert len(tables) == 70
    assert len({d.device for d in floor.devices}) == len(floor.devices)
    by_area = Counter(d.area for d in egms)
    assert by_area == {a.name: a.egms for a in spec.config.layout}
    banks = Counter((d.area, d.bank) for d in egms)
    assert all(2 <= size <= 12 for size in banks.values())
    assert all(d.bank[0] == d.area[0].upper() for d in egms)
    games = Counter(d.game for d in tables)
    assert set(games) == {"blackjack", "roulette", "poker", "baccarat"}
    assert all(d.bank.startswith("PIT-") for d in tables)
    # explicit layouts use no randomness: another seed, the same devices
    assert build_floor(config, seed=2, as_of=DAY).devices == floor.devices


def test_a_floor_file_parses_with_defaults() -> None:
    spec = parse_floor(VALID, source="test.toml")
    assert (spec.config.egms, spec.config.tables, spec.config.members) == (30, 3, 500)
    assert spec.config.name == "Test casino"
    floor = build_floor(spec.config, seed=3, as_of=DAY)
    assert [d.device for d in floor.tables] == ["BJ-01", "BJ-02", "RL-03"]
    assert Counter(d.bank for d in floor.egms if d.area == "main") == {"M01": 6, "M02": 8, "M03": 6}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("egms = 20", "egms = -5"), "test.toml: areas.main.egms: "),
        (("members = 500", "members = 500\nvip = true"), "test.toml: population.vip: unknown key"),
        (
            ("members = 500", 'members = 500\ntiers = { "10" = 1.0, X = 1 }'),
            "test.toml: population.tiers: unknown tier(s) ['X']",
        ),
        (
            ("members = 500", "members = 500\n[behaviour]\nlost_card_out_rate = 1.5"),
            "test.toml: behaviour.lost_card_out_rate: must be within 0..1, got 1.5",
        ),
        (
            ("members = 500", "members = 500\n[behaviour]\nsession_minuts = [1, 2, 3]"),
            "test.toml: behaviour.session_minuts: unknown key",
        ),
        (
            ("members = 500", "members = 500\n[behaviour]\nweekday_factor = { monday = 1 }"),
            "test.toml: behaviour.weekday_factor: needs exactly the days",
        ),
        (
            ("members = 500", 'members = 500\n[behaviour]\npeak_occupancy = "high"'),
            "test.toml: behaviour.peak_occupancy: must be a number, got 'high'",
        ),
        (("roulette = 1", "craps = 1"), "test.toml: areas.main.tables.craps: unknown game"),
        (('site = "test"', 'site = "Test Site"'), "test.toml: site: "),
        (('site = "test"', 'site = "test"\ntimezone = "Mars/Olympus"'), "test.toml: timezone:"),
        (("[population]\nmembers = 500", ""), "test.toml: population: required"),
    ],
)
def test_a_bad_floor_file_names_the_place(change: tuple[str, str], expected: str) -> None:
    old, new = change
    assert old in VALID
    with pytest.raises(FloorFileError) as info:
        parse_floor(VALID.replace(old, new), source="test.toml")
    assert any(p.startswith(expected) for p in info.value.problems), info.value.problems
    assert "test.toml" in str(info.value)


def test_every_problem_is_reported_at_once() -> None:
    bad = VALID.replace("egms = 20", "egms = -1").replace("members = 500", "members = -2")
    with pytest.raises(FloorFileError) as info:
        parse_floor(bad, source="x.toml")
    assert len(info.value.problems) == 2


def test_an_unknown_floor_name_lists_the_known_ones() -> None:
    with pytest.raises(FloorFileError, match=r"no floor named 'vegas' \(known: .*montecasino"):
        load_floor("vegas")


def test_a_config_layout_must_match_its_totals() -> None:
    spec = load_floor("ci")
    with pytest.raises(ValueError, match="layout: holds 100 EGMs"):
        FloorConfig(layout=spec.config.layout, egms=99, tables=spec.config.tables)


def test_the_member_base_has_its_mix_exclusions_staff_and_mobiles(tmp_path: Path) -> None:
    spec = load_floor("ci")
    floor = build_floor(spec.config, seed=5, as_of=DAY)
    members = floor.members
    n = len(members)
    assert n == 3000
    assert Counter(m.tier for m in members) == {"10": 1200, "J": 900, "Q": 540, "K": 240, "A": 120}
    reasons = Counter(m.exclusion_reason for m in members if m.excluded)
    # exact counts: round(share * members) for each reason of the config
    assert reasons == {r: round(s * n) for r, s in spec.config.exclusions}
    assert reasons["staff"] >= 3
    assert reasons["staff_family"] >= 1
    assert all(m.excluded == bool(m.exclusion_reason) for m in members)
    assert sum(m.staff for m in members) == reasons["staff"] + reasons["staff_family"]
    assert 0.28 < sum(m.app_user for m in members) / n < 0.42
    assert all(m.mobile for m in members if m.sms_opt_in)
    assert 0.87 < sum(m.mobile is not None for m in members) / n < 0.97
    assert all(m.mobile is None or m.mobile.startswith("+27") for m in members)
    # through bonusd's own import: every row valid, staff and exclusions as bonusd marks them
    devices_csv, members_csv = export_registry(floor, tmp_path)
    imported = read_file(RegMember, members_csv)
    assert len(imported) == n
    assert len(read_file(RegDevice, devices_csv)) == len(floor.devices)
    staff = [m for m in imported if m.exclusion_reason == "staff"]
    assert staff
    assert all(m.excluded for m in staff)
    assert sum(m.mobile is not None for m in imported) == sum(m.mobile is not None for m in members)
    with members_csv.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["excluded"] for r in rows} == {"true", "false"}


def test_the_same_seed_builds_the_same_member_base() -> None:
    config = load_floor("ci").config
    first = build_floor(config, seed=9, as_of=DAY)
    assert build_floor(config, seed=9, as_of=DAY).members == first.members
    assert build_floor(config, seed=10, as_of=DAY).members != first.members


def test_the_command_line_takes_a_named_floor_or_counts(tmp_path: Path) -> None:
    def simulators(*args: str) -> subprocess.Popen[str]:
        """`python -m simulators ARGS`, started (the five commands run side by side)."""
        command = [sys.executable, "-m", "simulators", *args]
        return subprocess.Popen(
            command, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def done(started: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
        out, err = started.communicate(timeout=120)
        return subprocess.CompletedProcess(started.args, started.returncode, out, err)

    commands = {
        "exported": simulators("export", "--floor", "ci", "--seed", "5", "--out", str(tmp_path)),
        # the options bonusd's demo passes: an unnamed floor by its counts
        "dumped": simulators(
            "dump", "--egms", "20", "--tables", "2", "--members", "100", "--duration", "10m",
            "--run-id", "cli", "--out", "-",
        ),
        "both": simulators("dump", "--floor", "ci", "--egms", "5", "--out", "-"),
        "v1": simulators(
            "dump", "--egms", "20", "--tables", "2", "--members", "100", "--duration", "10m",
            "--run-id", "cli", "--contract", "v1", "--out", "-",
        ),
        "v3": simulators("dump", "--egms", "5", "--duration", "1m", "--contract", "v3", "--out", "-"),
    }  # fmt: skip
    try:
        ran = {name: done(started) for name, started in commands.items()}
    finally:
        for started in commands.values():
            if started.poll() is None:
                started.kill()
    exported, dumped, both, v1, v3 = (ran[n] for n in ("exported", "dumped", "both", "v1", "v3"))
    assert exported.returncode == 0, exported.stderr
    floor = build_floor(load_floor("ci").config, seed=5, as_of=dt.date(2026, 10, 3))
    assert len(read_file(RegMember, tmp_path / "members.csv")) == len(floor.members)
    assert dumped.returncode == 0, dumped.stderr
    lines = dumped.stdout.splitlines()
    assert lines
    assert all(line.startswith("bonusd/demo/") for line in lines)
    assert both.returncode != 0
    assert "either --floor or --egms" in both.stderr
    # contract v2 by default (epoch = the run id), v1 (ids) on request, nothing else
    assert '"epoch":"cli","seq":1,' in dumped.stdout
    assert v1.returncode == 0, v1.stderr
    assert '{"id":"cli-' in v1.stdout and '"epoch"' not in v1.stdout
    assert v3.returncode != 0
    assert "v1 or v2" in v3.stderr
