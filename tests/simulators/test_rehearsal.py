"""Campaign rehearsal end to end: real Redis, a real Mosquitto, the real daemon.

A short rehearsal of each seed promotion (a few simulated days on the CI floor) runs
through MQTT into `bonusd.service.root.Service`; the simulator also writes every event it
published. The daemon's standings, read from its Redis after the run, must equal the
standings the pure engine computes from that event log (`aggregate` + `standing`), member
by member and draw by draw, and every frozen pool must hold exactly the engine's tickets
of the members who activated. Draws, RAPS jackpots and claims must have happened.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import redis.asyncio as aioredis

from bonusd.clocks.clock import ManualClock
from bonusd.infra.keys import Keys
from bonusd.promotions import EntryPool, Promotion, RatedPlay, Side, aggregate, standing
from bonusd.promotions.rules import Standing
from bonusd.promotions.store import PromotionStore
from bonusd.registry.records import Member
from bonusd.service.claimtimers import ClaimTimers
from simulators.local.services import LocalMosquitto
from simulators.rehearsal.crew import CrewModel
from simulators.rehearsal.plan import RehearsalPlan, prepare
from simulators.rehearsal.report import SECTIONS, render, write_report
from simulators.rehearsal.run import delete_keys, rehearse
from tests.daemon_helpers import PROJECT

GOLDEN_HORSE = PROJECT / "promotions" / "golden-horse-mega-points-chase.toml"
FESTA = PROJECT / "promotions" / "montecasino-festa-fortuna.toml"
PRIZES = "prize_sets.reveal.values_cents=[" + ", ".join(["100000"] * 15) + "]"
PLAY_TYPES = {"play", "game", "rating_start", "rating_update", "rating_end"}
# more proxies and register signatures than the default, so that a short rehearsal surely
# has winners presented by a proxy and RAPS winners settled by the decline register
PEOPLE = CrewModel(proxy=0.4, decline=0.3)


@dataclass
class Rehearsed:
    """A finished rehearsal and what its daemon held at the end."""

    summary: dict[str, Any]
    promotion: Promotion
    members: dict[str, Member]
    daemon: dict[tuple[str, str], Standing]
    pools: dict[str, EntryPool | None]
    log: Path
    since: dt.date


async def _run(plan: RehearsalPlan, redis_url: str, mqtt_url: str) -> Rehearsed:
    prepared = prepare(plan)
    summary = await rehearse(
        prepared, redis_url=redis_url, mqtt_url=mqtt_url, keep=True, progress=False
    )
    p = prepared.promotion
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    prefix = summary["run"]["key_prefix"]
    try:
        store = PromotionStore(r, Keys(prefix, p.site), [p])
        index = cast(dict[str, str], await r.hgetall(store.keys.member_index))
        members = {c: Member.from_index(c, t) for c, t in index.items()}
        cards = sorted(members)
        daemon, pools = {}, {}
        for draw in p.draw_list:
            activated = set(cast(list[str], await r.hkeys(store.keys.activations(p.id, draw.id))))
            stats = await store.window_stats(p, draw, cards)
            for card, st in zip(cards, stats, strict=True):
                daemon[(draw.id, card)] = standing(
                    p, draw, members[card], st, activated=card in activated, on_date=draw.date
                )
            pools[draw.id] = await store.pool(p.id, draw.id)
    finally:
        await delete_keys(r, prefix)
        await r.aclose()
    assert plan.events_log is not None
    return Rehearsed(summary, p, members, daemon, pools, plan.events_log, prepared.start.date())


def _rehearse(plan: RehearsalPlan, redis_url: str, broker: LocalMosquitto) -> Rehearsed:
    return asyncio.run(_run(plan, redis_url, broker.url))


@pytest.fixture(scope="module")
def golden_horse(
    redis_url: str, broker: LocalMosquitto, tmp_path_factory: pytest.TempPathFactory
) -> Rehearsed:
    """Three days of the Mega Points Chase: the launch draw (3x window, 10 winners) and
    the first points of the halfway, bonus and final windows."""
    log = tmp_path_factory.mktemp("gh") / "events.jsonl"
    plan = RehearsalPlan(
        GOLDEN_HORSE,
        floor="ci",
        first=dt.date(2026, 10, 1),
        last=dt.date(2026, 10, 3),
        sets=(PRIZES,),
        events_log=log,
        crew=PEOPLE,
    )
    return _rehearse(plan, redis_url, broker)


@pytest.fixture(scope="module")
def festa(
    redis_url: str, broker: LocalMosquitto, tmp_path_factory: pytest.TempPathFactory
) -> Rehearsed:
    """Festa Fortuna from Saturday 11 to Wednesday 15 October 2025: a RAPS session (14
    jackpots) and the first Wednesday J and Q draw."""
    log = tmp_path_factory.mktemp("festa") / "events.jsonl"
    plan = RehearsalPlan(
        FESTA,
        floor="ci",
        first=dt.date(2025, 10, 11),
        last=dt.date(2025, 10, 15),
        events_log=log,
        crew=PEOPLE,
    )
    return _rehearse(plan, redis_url, broker)


def _engine(run: Rehearsed) -> dict[tuple[str, str], Standing]:
    """Every member's standing in every draw, computed by the pure engine from the
    published event log (and the member records the daemon imported)."""
    plays: dict[str, list[RatedPlay]] = defaultdict(list)
    with run.log.open(encoding="utf-8") as fh:
        for line in fh:
            topic, body = line.rstrip("\n").split("\t", 1)
            event = json.loads(body)
            if event["type"] in PLAY_TYPES:
                side = Side.SLOTS if "/egm/" in topic else Side.TABLES
                at = dt.datetime.fromisoformat(event["ts"])
                plays[event["card"]].append(RatedPlay(at, side, int(event.get("points", 0))))
    p, out = run.promotion, {}
    for draw in p.draw_list:
        for card, member in run.members.items():
            activated = run.daemon[(draw.id, card)].activated  # not telemetry: the desk's
            stats = aggregate(p, draw, plays.get(card, []), telemetry_since=run.since)
            out[(draw.id, card)] = standing(
                p, draw, member, stats, activated=activated, on_date=draw.date
            )
    return out


def _numbers(s: Standing) -> tuple[object, ...]:
    sides = tuple((x.side, x.points, x.qualified, x.tickets) for x in s.sides)
    per_tombola = dict(s.per_tombola)
    return (s.eligible, s.qualified, s.visits, s.tickets, per_tombola, sides, s.breakdown)


def _check_standings(run: Rehearsed) -> None:
    engine = _engine(run)
    assert engine.keys() == run.daemon.keys()
    differ = [k for k in engine if _numbers(engine[k]) != _numbers(run.daemon[k])]
    assert not differ, f"{len(differ)} standings differ, e.g. {differ[:3]}"
    with_tickets = sum(s.tickets > 0 for s in engine.values())
    assert with_tickets > 20  # the comparison is not vacuous
    for draw in run.promotion.draw_list:
        pool = run.pools[draw.id]
        if pool is None:
            continue
        for tombola, _ in pool.tombolas:
            expected = {
                card: s.per_tombola[tombola]
                for (d, card), s in engine.items()
                if d == draw.id and s.activated and s.per_tombola.get(tombola)
            }
            assert pool.entries(tombola) == expected, f"pool of {draw.id}/{tombola}"


def test_golden_horse_standings_equal_the_engine_on_the_event_log(
    golden_horse: Rehearsed,
) -> None:
    run = golden_horse
    _check_standings(run)
    figures = run.summary["run"]
    assert figures["events_published"] == figures["applied"] > 10_000
    assert figures["dead_letters"] == {}
    launch, halfway = run.summary["draws"][0], run.summary["draws"][1]
    assert launch["status"] == "drawn"
    assert launch["won"] == 10  # no-shows were redrawn until ten presented
    assert launch["pool"]["pooled"]["members"] == launch["summary"]["activated"]
    # prizes loaded from --set: every verified winner picked a reveal and got a letter
    states = {w["state"] for w in launch["winners"]}
    assert states <= {"no_show", "letter_issued", "redeemed"}
    assert run.summary["prizes"]["draws"][0]["budget_cents"] == 15 * 100_000
    assert run.summary["prizes"]["draws"][0]["cost_cents"] == 10 * 100_000
    assert launch["proxies"] > 0
    _check_proxies(run)
    assert halfway["status"] == "after the rehearsal"
    assert halfway["summary"]["qualified"] > 0
    window = run.summary["multipliers"]["windows"][0]
    assert window["id"] == "launch-day"
    assert window["draws"]["halfway"]["slots"]["points"] > 0


def test_festa_standings_equal_the_engine_on_the_event_log(festa: Rehearsed) -> None:
    run = festa
    _check_standings(run)
    assert run.summary["run"]["left_out"] == ["jackpot_series.jackpot (2025-10-04)"]
    wednesday = next(d for d in run.summary["draws"] if d["id"] == "wednesday-2025-10-15")
    assert wednesday["status"] == "drawn"
    assert wednesday["summary"]["activated"] > 0
    assert set(wednesday["summary"]["by_tier"]) == {"10", "J", "Q", "K", "A"}
    assert {w["tier"] for w in wednesday["winners"]} <= {"J", "Q"}
    session = next(s for s in run.summary["jackpots"] if s["id"] == "jackpot-2025-10-11")
    outcomes = [j["outcome"] for j in session["jackpots"]]
    assert len(outcomes) == 14
    assert "won" in outcomes
    assert all(o in ("won", "carried_over", "skipped") for o in outcomes)
    assert {j["how"] for j in session["jackpots"] if j["how"]} <= {
        "verified_at_device",
        "verified",
        "declined_register",
    }
    # the desk took signatures before the session; a signer who won was away, and the
    # register settled the claim: the prize stands
    assert session["decline_register"] > 0
    settled = [j for j in session["jackpots"] if j["how"] == "declined_register"]
    assert settled and all(j["outcome"] == "won" for j in settled)
    # a winner with a registered proxy was presented by the proxy
    assert wednesday["proxies"] > 0
    _check_proxies(run)


def _check_proxies(run: Rehearsed) -> None:
    """Winners presented by a proxy had one registered, and went on like any winner."""
    winners = [w for d in run.summary["draws"] for w in d["winners"]]
    by_proxy = [w for w in winners if w["presented_by"] == "proxy"]
    assert by_proxy, "no winner was presented by a proxy"
    assert all(w["state"] not in ("announced", "no_show") for w in by_proxy)
    assert {w["presented_by"] for w in winners} <= {"winner", "proxy", None}


def test_the_report_is_self_contained_and_has_every_section(
    golden_horse: Rehearsed, tmp_path: Path
) -> None:
    html_path, json_path = write_report(golden_horse.summary, tmp_path / "report.html")
    page = html_path.read_text(encoding="utf-8")
    for ident, title in SECTIONS:
        assert f'<section id="{ident}"><h2>{title}</h2>' in page
    for outside in ("http://", "https://", "src=", "<link", "<script", "url(", "@import"):
        assert outside not in page
    assert page.count("<svg") >= 3
    assert json.loads(json_path.read_text()) == golden_horse.summary
    both = render(golden_horse.summary, compare=golden_horse.summary)
    assert '<section id="compare">' in both


def test_set_changes_the_outcome_as_expected(
    golden_horse: Rehearsed, redis_url: str, broker: LocalMosquitto, tmp_path: Path
) -> None:
    """The same three days with the halfway threshold at 10,000 points: the same floor,
    so the same points, and more qualifiers and tickets; nothing else changes."""
    plan = RehearsalPlan(
        GOLDEN_HORSE,
        floor="ci",
        first=dt.date(2026, 10, 1),
        last=dt.date(2026, 10, 3),
        sets=(PRIZES, "draws.halfway.qualification.threshold=10000"),
        events_log=tmp_path / "events.jsonl",
        crew=PEOPLE,
    )
    lower = _rehearse(plan, redis_url, broker)
    _check_standings(lower)
    before = {d["id"]: d for d in golden_horse.summary["draws"]}
    after = {d["id"]: d for d in lower.summary["draws"]}
    assert after["halfway"]["summary"]["qualified"] > before["halfway"]["summary"]["qualified"]
    assert after["halfway"]["summary"]["tickets"] > before["halfway"]["summary"]["tickets"]
    for draw_id in ("launch", "bonus", "final"):
        assert after[draw_id]["summary"] == before[draw_id]["summary"]
    # and the launch draw, the same pool and seeds, has the same winners
    assert after["launch"]["winners"] == before["launch"]["winners"]
    assert _bodies(lower.log) == _bodies(golden_horse.log)  # topics carry each run's prefix


def _bodies(log: Path) -> list[str]:
    return [line.split("\t", 1)[1] for line in log.read_text(encoding="utf-8").splitlines()]


def test_an_unknown_set_key_stops_the_command_with_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bonusd",
            "rehearse",
            str(GOLDEN_HORSE),
            "--floor=ci",
            "--set",
            "draws.halfway.qualification.treshold=15000",
            f"--out={tmp_path / 'r.html'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "draws.halfway.qualification.treshold" in done.stderr
    assert "did you mean 'threshold'?" in done.stderr
    assert not (tmp_path / "r.html").exists()


async def test_a_deadline_at_the_very_instant_of_the_clock_is_the_next_wake(
    aredis: aioredis.Redis, site: str
) -> None:
    """Found by the rehearsal: a prize letter expires at the instant the scheduler's lapse
    action runs. The claim timers then tick with the deadline exactly at `now` (not due:
    deadlines are strict) and must wake just after it, not `IDLE` later."""
    at = dt.datetime(2026, 11, 22, 22, 0, tzinfo=dt.UTC)
    clock = ManualClock(at)
    key = f"bonusd:{{{site}}}:deadlines"
    await aredis.zadd(key, {"draw:d": at.timestamp()})
    looked, acted = asyncio.Event(), asyncio.Event()

    async def run_due(subject: str) -> int:
        if clock.now() <= at:  # what the runners do: strictly after the deadline
            looked.set()
            return 0
        await aredis.zrem(key, f"draw:{subject}")
        acted.set()
        return 1

    timers = ClaimTimers(redis=aredis, key=key, clock=clock, owners={"draw": run_due})
    stop = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(timers.run(stop))
        async with asyncio.timeout(5):
            await looked.wait()  # it ticked at `at`: nothing was due yet
        clock.set(at + dt.timedelta(seconds=1))  # far less than IDLE (5 minutes) later
        async with asyncio.timeout(5):
            await acted.wait()
        stop.set()
    assert timers.fired == 1


@pytest.mark.slow
@pytest.mark.timeout(900)  # about a minute on a quiet machine; the machine is shared
def test_the_whole_golden_horse_campaign_on_the_ci_floor(
    redis_url: str, broker: LocalMosquitto, tmp_path: Path
) -> None:
    """The CI-sized form of the full rehearsal: ten weeks, four draws, on the CI floor
    (the full form, on the Golden Horse floor, is in docs/rehearsal.md)."""
    plan = RehearsalPlan(GOLDEN_HORSE, floor="ci", sets=(PRIZES,))
    summary = asyncio.run(
        rehearse(prepare(plan), redis_url=redis_url, mqtt_url=broker.url, progress=False)
    )
    write_report(summary, tmp_path / "report.html")
    draws = {d["id"]: d for d in summary["draws"]}
    assert all(d["status"] == "drawn" for d in draws.values())
    assert [draws[d]["won"] for d in ("launch", "halfway", "bonus")] == [10, 15, 15]
    assert draws["final"]["won"] == 8  # 5 slots + 3 tables, drawn by hand
    assert len(draws["final"]["seats"]) == 2  # plus the leaders of both boards
    boards = summary["leaderboards"]
    assert [len(boards[d]["weeks"]) for d in ("halfway", "bonus", "final")] == [6, 9, 11]
    assert summary["run"]["dead_letters"] == {}
    assert summary["run"]["events_published"] == summary["run"]["applied"]
    never = {n["rule"] for n in summary["never_triggered"]}
    assert "multipliers[4] (final-day)" in never  # the 12 Dec 3x counts for no draw
    states = {w["state"] for d in draws.values() for w in d["winners"]}
    assert "lapsed" in states or "redeemed" in states  # letters lapse 15 days after
