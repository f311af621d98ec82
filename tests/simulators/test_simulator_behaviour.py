"""The simulated floor behaves like a casino floor, deterministically.

Byte-identical streams for one seed (also in other processes with other hash seeds),
arrivals that peak on Friday and Saturday nights, lost card-outs and offline machines at
their configured rates, players chasing a threshold as its window closes, and members
coming for a draw. Statistical assertions have generous margins; nothing is timed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import io
import itertools
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bonusd.promotions import Promotion, load_promotion, parse_promotion
from simulators import (
    Floor,
    FloorConfig,
    SimEvent,
    build_floor,
    generate_events,
    load_floor,
    plan_outages,
    write_jsonl,
)
from tests.daemon_helpers import PROJECT

JHB = ZoneInfo("Africa/Johannesburg")
FESTA = PROJECT / "promotions" / "montecasino-festa-fortuna.toml"
GOLDEN_HORSE = PROJECT / "promotions" / "golden-horse-mega-points-chase.toml"
FESTA_SATURDAY = dt.datetime(2025, 10, 25, 19, 0, tzinfo=JHB)  # the first Saturday draw night
N_EVENTS = 20_000  # the first 2.5 minutes of a Saturday night: some 1,300 machines
SPAN = dt.timedelta(minutes=4)  # the stream the digests are taken from (~47,000 events)


def _floor(name: str = "ci", seed: int = 3, config: FloorConfig | None = None) -> Floor:
    return build_floor(config or load_floor(name).config, seed=seed, as_of=dt.date(2025, 10, 1))


def _digest(lines: Iterable[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
    return h.hexdigest()


def _saturday_digest(seed: int) -> str:
    """sha256 of the first N_EVENTS `topic<TAB>json` lines of a Montecasino Saturday night."""
    floor = build_floor(load_floor("montecasino").config, seed=seed, as_of=FESTA_SATURDAY.date())
    stream = generate_events(
        floor,
        seed=seed,
        start=FESTA_SATURDAY,
        duration=SPAN,
        promotion=load_promotion(FESTA),
    )
    out = io.StringIO()
    write_jsonl(itertools.islice(stream, N_EVENTS), out, site="montecasino")
    lines = out.getvalue().splitlines(keepends=True)
    assert len(lines) == N_EVENTS
    return _digest(lines)


def test_the_same_seed_gives_a_byte_identical_stream_and_another_seed_does_not(
    tmp_path: Path,
) -> None:
    # Other processes with other str hash seeds: nothing depends on set order or id().
    # Started first (writing to files), they run beside the digests taken in this process.
    others = {}
    for hash_seed in ("0", "4242"):
        with (tmp_path / f"{hash_seed}.jsonl").open("wb") as out:
            others[hash_seed] = subprocess.Popen(
                [
                    sys.executable, "-m", "simulators", "dump", "--floor", "montecasino",
                    "--seed", "7", "--start", FESTA_SATURDAY.isoformat(), "--duration", "4m",
                    "--promotion", str(FESTA), "--out", "-",
                ],
                env={**os.environ, "PYTHONHASHSEED": hash_seed},
                cwd=PROJECT,
                stdout=out,
                stderr=subprocess.PIPE,
            )  # fmt: skip
    try:
        first = _saturday_digest(7)
        assert _saturday_digest(7) == first
        assert _saturday_digest(8) != first
        for hash_seed, other in others.items():
            _, err = other.communicate(timeout=120)
            assert other.returncode == 0, err.decode()
            text = (tmp_path / f"{hash_seed}.jsonl").read_text()
            lines = text.splitlines(keepends=True)
            assert len(lines) > N_EVENTS
            assert _digest(lines[:N_EVENTS]) == first
    finally:
        for other in others.values():
            if other.poll() is None:
                other.kill()


def _visits_by_night_and_hour(events: Iterable[SimEvent]) -> Counter[tuple[int, int]]:
    """Card-ins and rating starts by (weekday of the night, local hour)."""
    counts: Counter[tuple[int, int]] = Counter()
    for e in events:
        if e.payload["type"] in ("card_in", "rating_start"):
            local = dt.datetime.fromtimestamp(e.t_ms / 1000, JHB)
            counts[((local - dt.timedelta(hours=6)).weekday(), local.hour)] += 1
    return counts


def test_arrivals_peak_on_friday_and_saturday_nights() -> None:
    monday = dt.datetime(2026, 10, 5, 8, 0, tzinfo=JHB)
    events = generate_events(
        _floor(), seed=11, start=monday, duration=dt.timedelta(days=7), granularity="play"
    )
    counts = _visits_by_night_and_hour(events)
    evening = {night: sum(counts[night, h] for h in (20, 21, 22, 23)) for night in range(7)}
    weeknights = sum(evening[n] for n in range(4)) / 4  # Monday..Thursday
    assert evening[4] > 1.3 * weeknights  # Friday
    assert evening[5] > 1.3 * weeknights  # Saturday
    assert max(evening, key=lambda n: evening[n]) in (4, 5)
    assert evening[6] < evening[5]  # Sunday is quieter than Saturday
    for night in range(7):
        mornings = sum(counts[night, h] for h in (7, 8, 9, 10))
        assert evening[night] > 2 * mornings
    late = {n: sum(counts[n, h] for h in (0, 1, 2)) for n in range(7)}  # after midnight
    assert min(late[4], late[5]) > max(late[n] for n in range(4))  # Friday and Saturday run late


@dataclass
class _Stint:
    device: str
    card: str
    last_ms: int
    end: str = ""  # "out", or "silent" (no card_out: lost or offline)


def _stints(events: list[SimEvent], end_ms: int) -> list[_Stint]:
    """Every EGM stint and how it ended; stints still playing at the end are left out."""
    done: list[_Stint] = []
    at: dict[str, _Stint] = {}  # device -> open stint
    of_card: dict[str, _Stint] = {}
    for e in events:
        if e.kind != "egm":
            continue
        p = e.payload
        kind, card = p["type"], str(p["card"])
        if kind == "card_in":
            for old in (at.pop(e.device, None), of_card.pop(card, None)):
                if old is not None and not old.end:
                    old.end = "silent"
                    done.append(old)
            at[e.device] = of_card[card] = _Stint(e.device, card, e.t_ms)
        elif kind == "card_out":
            stint = at.pop(e.device)
            of_card.pop(card)
            assert stint.card == card
            stint.end = "out"
            done.append(stint)
        else:
            at[e.device].last_ms = e.t_ms
    for stint in at.values():
        if stint.last_ms < end_ms - 20_000:  # its card_out would have been sent by now
            stint.end = "silent"
            done.append(stint)
    return done


def test_lost_card_outs_and_offline_machines_happen_at_their_rates() -> None:
    config = dataclasses.replace(
        load_floor("ci").config, lost_card_out_rate=0.1, offline_per_egm_day=0.5
    )
    floor = _floor(config=config)
    start = dt.datetime(2026, 10, 9, 8, 0, tzinfo=JHB)
    span = dt.timedelta(days=1)
    end_ms = int((start + span).timestamp() * 1000)
    events = list(generate_events(floor, seed=5, start=start, duration=span, granularity="play"))
    outages = plan_outages(floor, seed=5, start=start, duration=span)
    # offline machines: a Poisson process of 0.5 a day on each of 100 EGMs
    assert 30 <= len(outages) <= 75
    assert {o.device for o in outages} <= {d.device for d in floor.egms}
    assert all(10 * 60_000 <= o.end_ms - o.start_ms <= 240 * 60_000 for o in outages)
    by_device: dict[str, list[tuple[int, int]]] = {}
    for o in outages:
        by_device.setdefault(o.device, []).append((o.start_ms, o.end_ms))
    for e in events:  # an offline EGM sends nothing
        for begin, end in by_device.get(e.device, ()):
            assert not begin <= e.t_ms < end, (e, begin, end)
    # a stint on an EGM that fails ends without a card_out; other silent ends are lost
    offline = lost = out = 0
    for stint in _stints(events, end_ms):
        if stint.end == "out":
            out += 1
        elif any(
            stint.last_ms < b <= stint.last_ms + 300_000 for b, _ in by_device.get(stint.device, ())
        ):
            offline += 1
        else:
            lost += 1
    assert out > 500
    assert 0.065 < lost / (lost + out) < 0.14, (lost, out)  # configured 0.1
    assert offline >= 5, offline


def _threshold_text(factor: int) -> str:
    text = GOLDEN_HORSE.read_text(encoding="utf-8")
    for threshold in ("20000", "50000", "100000"):
        text = text.replace(f"threshold = {threshold}", f"threshold = {int(threshold) * factor}")
    return text


def _points_by_tier(promotion: Promotion, start: dt.datetime, seed: int) -> Counter[str]:
    floor = _floor()
    tier = {m.card: m.tier for m in floor.members}
    points: Counter[str] = Counter()
    for e in generate_events(
        floor, seed=seed, start=start, duration=dt.timedelta(days=2), promotion=promotion,
        granularity="play",
    ):  # fmt: skip
        if "points" in e.payload:
            points[tier[str(e.payload["card"])]] += int(e.payload["points"])
    return points


def test_players_chase_a_threshold_as_its_window_closes() -> None:
    """The Golden Horse halfway window closes on 6 November 08:00. In its last two days,
    members near the 20,000 threshold (many J-tier regulars) play far more than they would
    with thresholds out of reach; two weeks earlier, before anybody chases, nothing changes."""
    real = parse_promotion(_threshold_text(1), source="real.toml")
    unreachable = parse_promotion(_threshold_text(10_000), source="unreachable.toml")
    last_days = dt.datetime(2026, 11, 4, 8, 0, tzinfo=JHB)
    for seed in (1, 2):
        chasing = _points_by_tier(real, last_days, seed)
        calm = _points_by_tier(unreachable, last_days, seed)
        assert chasing["J"] > 1.25 * calm["J"]
    early = dt.datetime(2026, 10, 21, 8, 0, tzinfo=JHB)  # 16 days before the close
    assert _points_by_tier(real, early, 1) == _points_by_tier(unreachable, early, 1)


def test_members_come_for_a_draw_they_can_enter() -> None:
    """Festa Fortuna's Wednesday draw is for J and Q tiers (21:00-21:30): in the four hours
    before it, J and Q members make up a larger share of the arrivals."""
    festa = load_promotion(FESTA)
    wednesday = dt.datetime(2025, 10, 15, 17, 30, tzinfo=JHB)
    floor = _floor()
    tier = {m.card: m.tier for m in floor.members}
    share: dict[bool, Counter[bool]] = {True: Counter(), False: Counter()}
    for seed, with_promotion in itertools.product((1, 2, 3), (True, False)):
        for e in generate_events(
            floor, seed=seed, start=wednesday, duration=dt.timedelta(hours=4),
            promotion=festa if with_promotion else None, granularity="play",
        ):  # fmt: skip
            if e.payload["type"] in ("card_in", "rating_start"):
                share[with_promotion][tier[str(e.payload["card"])] in ("J", "Q")] += 1
    ratio = {k: c[True] / c[False] for k, c in share.items()}
    assert ratio[True] > 1.2 * ratio[False]


def test_higher_tiers_bet_more() -> None:
    floor = _floor()
    tier = {m.card: m.tier for m in floor.members}
    start = dt.datetime(2026, 10, 10, 18, 0, tzinfo=JHB)
    stake: dict[str, list[int]] = {}
    table_bet: dict[str, list[int]] = {}
    for e in generate_events(floor, seed=4, start=start, duration=dt.timedelta(hours=6)):
        p = e.payload
        if p["type"] == "game":
            stake.setdefault(tier[str(p["card"])], []).append(int(p["wager_cents"]))
        elif p["type"] == "rating_start":
            table_bet.setdefault(tier[str(p["card"])], []).append(int(p["avg_bet_cents"]))
    mean = {t: sum(v) / len(v) for t, v in stake.items()}
    assert mean["10"] < mean["J"] < mean["Q"] < mean["K"] < mean["A"]
    assert sum(table_bet["10"]) / len(table_bet["10"]) < sum(table_bet["K"] + table_bet["A"]) / len(
        table_bet["K"] + table_bet["A"]
    )


@pytest.mark.parametrize("granularity", ["game", "play"])
def test_a_longer_run_starts_with_a_shorter_one(granularity: str) -> None:
    floor = _floor()
    start = dt.datetime(2026, 10, 3, 16, 0, tzinfo=JHB)
    promo = load_promotion(GOLDEN_HORSE)
    kind = "game" if granularity == "game" else "play"
    short = list(
        generate_events(floor, seed=2, start=start, duration=dt.timedelta(hours=1),
                        promotion=promo, granularity=kind)
    )  # fmt: skip
    longer = generate_events(
        floor, seed=2, start=start, duration=dt.timedelta(hours=3), promotion=promo,
        granularity=kind,
    )  # fmt: skip
    assert list(itertools.islice(longer, len(short))) == short


def test_the_montecasino_floor_is_busy_on_a_saturday_night() -> None:
    spec = load_floor("montecasino")
    floor = build_floor(spec.config, seed=1, as_of=FESTA_SATURDAY.date())
    carded: set[str] = set()
    for e in generate_events(
        floor, seed=1, start=FESTA_SATURDAY.replace(hour=21), duration=dt.timedelta(minutes=3)
    ):
        if e.payload["type"] == "card_in":
            carded.add(e.device)
    # 80% of 1,700 machines at the busiest hour, give or take the late-night boost
    assert 0.7 * spec.config.egms < len(carded) <= spec.config.egms
    assert Path(FESTA).exists()
