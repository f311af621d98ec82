"""Tests of the floor simulator: determinism, floor invariants, the contract, the registry.

Pure tests on small floors; one optional test publishes to a real Mosquitto on
the test broker under a unique topic prefix.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import statistics
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from bonusd.clocks.clock import GamingCalendar
from bonusd.floor.telemetry import DecodeLimits, FloorEvent, TelemetryDecoder
from bonusd.registry.files import read_file
from bonusd.registry.records import Device as RegDevice
from bonusd.registry.records import Member as RegMember
from simulators import (
    DEVICE_COLUMNS,
    MEMBER_COLUMNS,
    Encoder,
    Floor,
    FloorConfig,
    SimEvent,
    build_floor,
    export_registry,
    generate_events,
    parse_duration,
    parse_mqtt_url,
    publish_events,
    topic_for,
    write_jsonl,
)
from simulators.identity import contract_of
from simulators.local.services import LocalMosquitto

START = dt.datetime.fromisoformat("2026-10-03T17:00:00+02:00")
# no outages here: the replay below checks lost card-outs' holds (outages, whose players
# move on at once, are checked in test_simulator_behaviour.py)
SMALL = FloorConfig(egms=40, tables=4, members=400, offline_per_egm_day=0.0)
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+02:00$")
HOLD_MS = 10 * 60_000


def _floor(config: FloorConfig = SMALL, seed: int = 42) -> Floor:
    return build_floor(config, seed=seed, as_of=START.date())


def _events(
    config: FloorConfig = SMALL,
    seed: int = 42,
    hours: float = 3.0,
    start: dt.datetime = START,
    run_id: str | None = None,
) -> list[SimEvent]:
    floor = _floor(config, seed)
    span = dt.timedelta(hours=hours)
    return list(generate_events(floor, seed=seed, start=start, duration=span, run_id=run_id))


@pytest.fixture(scope="module")
def stream() -> list[SimEvent]:
    return _events()


@pytest.fixture(scope="module")
def lossy_stream() -> list[SimEvent]:
    """Many lost card-outs and machine moves, to exercise the hold and the moves."""
    config = replace(SMALL, lost_card_out_rate=0.25, lost_card_out_hold_minutes=10.0, move_rate=0.8)
    return _events(config, seed=7, hours=3.0)


def _wire(events: list[SimEvent]) -> str:
    out = io.StringIO()
    write_jsonl(events, out)
    return out.getvalue()


def test_same_seed_same_stream_and_different_seed_differs() -> None:
    first, again = _events(hours=1.0), _events(hours=1.0)
    assert first == again
    assert _wire(first) == _wire(again)
    other = _events(seed=43, hours=0.25)
    assert other != first[: len(other)]


def test_a_shorter_run_is_a_prefix_of_a_longer_one(stream: list[SimEvent]) -> None:
    short = _events(hours=1.0)
    assert short == stream[: len(short)]
    assert stream[len(short)].t_ms >= START.timestamp() * 1000 + 3_600_000


def _identity(e: SimEvent) -> tuple[str, str, int]:
    return e.device, str(e.payload["epoch"]), int(e.payload["seq"])


def test_v2_identities_are_unique_numbered_per_device_and_take_the_run_id(
    stream: list[SimEvent],
) -> None:
    assert all("id" not in e.payload for e in stream)  # contract v2 by default
    ids = [_identity(e) for e in stream]
    assert len(set(ids)) == len(ids)
    last: dict[tuple[str, str], int] = {}
    for device, epoch, seq in ids:  # 1, 2, 3, ... per device and epoch, in stream order
        assert seq == last.get((device, epoch), 0) + 1
        last[device, epoch] = seq
    other_start = {_identity(e) for e in _events(hours=0.2, start=START + dt.timedelta(days=1))}
    assert not other_start & set(ids)
    other_floor = _events(replace(SMALL, egms=41), hours=0.2)
    assert not {_identity(e) for e in other_floor} & set(ids)
    tagged = _events(hours=0.1, run_id="bench7")
    assert {e.payload["epoch"] for e in tagged} == {"bench7"}


def test_an_egm_back_from_an_outage_starts_a_new_epoch() -> None:
    config = replace(SMALL, offline_per_egm_day=6.0)
    events = _events(config, hours=6.0, run_id="r1")
    epochs: dict[str, list[str]] = defaultdict(list)
    for e in events:
        mine = epochs[e.device]
        if not mine or mine[-1] != e.payload["epoch"]:
            assert e.payload["seq"] == 1  # a boot numbers its events from 1
            mine.append(str(e.payload["epoch"]))
    rebooted = [m for m in epochs.values() if len(m) > 1]
    assert rebooted, "no EGM came back from an outage"
    for mine in epochs.values():  # r1, then r1.{n} after its n-th outage
        boots = [0 if m == "r1" else int(m.removeprefix("r1.")) for m in mine]
        assert boots == sorted(set(boots))


def test_v1_ids_are_unique_and_take_the_run_id() -> None:
    floor, span = _floor(), dt.timedelta(hours=1)
    stream = list(generate_events(floor, seed=42, start=START, duration=span, contract="v1"))
    ids = [e.payload["id"] for e in stream]
    assert all("epoch" not in e.payload and "seq" not in e.payload for e in stream)
    assert len(set(ids)) == len(ids)
    tagged = generate_events(floor, seed=42, start=START, duration=span / 10, run_id="bench7")
    assert all(str(e.payload["epoch"]) == "bench7" for e in tagged)
    tagged = generate_events(
        floor, seed=42, start=START, duration=span / 10, run_id="bench7", contract="v1"
    )
    assert all(str(e.payload["id"]).startswith(f"bench7-{e.device}-") for e in tagged)


def test_a_run_id_too_long_for_an_epoch_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="epoch is at most 64"):
        generate_events(_floor(), seed=1, start=START, duration=dt.timedelta(0), run_id="x" * 60)


def test_every_event_carries_its_fields(stream: list[SimEvent]) -> None:
    floor = _floor()
    devices = {d.device: d for d in floor.devices}
    cards = {m.card for m in floor.members}
    common = {"epoch", "seq", "type", "ts", "card", "area"}
    fields = {
        "card_in": common,
        "card_out": common,
        "game": common | {"wager_cents", "win_cents", "points"},
        "rating_start": common | {"seat", "avg_bet_cents"},
        "rating_update": common | {"seat", "avg_bet_cents", "wager_cents", "points"},
        "rating_end": common | {"seat", "avg_bet_cents", "wager_cents", "points"},
    }
    seen: Counter[str] = Counter()
    for e in stream:
        p = e.payload
        kind = str(p["type"])
        seen[kind] += 1
        assert set(p) == fields[kind], p
        expected_kind = "egm" if kind in ("card_in", "card_out", "game") else "table"
        assert e.kind == devices[e.device].kind == expected_kind
        assert p["area"] == devices[e.device].area
        assert p["card"] in cards
        assert str(p["card"]).isdigit()
        for name in fields[kind] - common:
            value = p[name]
            assert isinstance(value, int)
            assert value >= 0, p
        if "seat" in p:
            assert 1 <= int(p["seat"]) <= 7
    assert set(seen) == set(fields)


def test_timestamps_are_local_ordered_and_millisecond(stream: list[SimEvent]) -> None:
    previous = 0
    for e in stream:
        ts = str(e.payload["ts"])
        assert TS.match(ts), ts
        assert dt.datetime.fromisoformat(ts).timestamp() * 1000 == pytest.approx(e.t_ms)
        assert e.t_ms >= previous
        previous = e.t_ms
    assert stream[0].t_ms >= START.timestamp() * 1000
    assert stream[-1].t_ms < (START + dt.timedelta(hours=3)).timestamp() * 1000


def _replay(events: list[SimEvent]) -> tuple[int, int]:
    """Check one place per player and one player per place; return (moves, lost)."""
    at_place: dict[tuple[str, int], tuple[str, int]] = {}  # place -> (card, last ms)
    of_card: dict[str, tuple[str, int]] = {}  # card -> place
    moves = lost = 0
    left_at: dict[str, str] = {}

    def free_stale(place: tuple[str, int], t: int) -> None:
        nonlocal lost
        card, last = at_place.pop(place)
        assert t - last >= HOLD_MS, f"{place} reused {t - last} ms after its last event"
        del of_card[card]
        lost += 1

    for e in events:
        p, t = e.payload, e.t_ms
        card, kind = str(p["card"]), str(p["type"])
        place = (e.device, int(p.get("seat", 0)))
        if kind in ("card_in", "rating_start"):
            if place in at_place:
                free_stale(place, t)
            if card in of_card:
                free_stale(of_card[card], t)
            moves += left_at.get(card, "") not in ("", e.device)
            at_place[place] = (card, t)
            of_card[card] = place
        else:
            assert at_place[place][0] == card, f"{kind} by {card} at {place}: not carded in"
            at_place[place] = (card, t)
            if kind in ("card_out", "rating_end"):
                del at_place[place]
                del of_card[card]
                left_at[card] = e.device
    return moves, lost


def test_one_place_per_player_and_one_player_per_place(stream: list[SimEvent]) -> None:
    _replay(stream)


def test_lost_card_outs_hold_the_device_and_players_move(lossy_stream: list[SimEvent]) -> None:
    moves, lost = _replay(lossy_stream)
    assert moves > 5
    assert lost > 5


def test_slot_pace_is_about_600_games_an_hour(stream: list[SimEvent]) -> None:
    carded: dict[str, int] = {}
    games: Counter[str] = Counter()
    counted = 0
    hours = 0.0
    for e in stream:
        kind = e.payload["type"]
        if kind == "card_in":
            carded[e.device] = e.t_ms
            games[e.device] = 0
        elif kind == "game":
            games[e.device] += 1
        elif kind == "card_out":
            hours += (e.t_ms - carded.pop(e.device)) / 3_600_000
            counted += games[e.device]
    assert hours > 5
    assert counted / hours == pytest.approx(600, rel=0.08)


def test_rating_increments_add_up(stream: list[SimEvent]) -> None:
    ratings: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    closed = []
    for e in stream:
        if e.kind != "table":
            continue
        p = e.payload
        key = (e.device, int(p["seat"]))
        ratings[key].append({**p, "t_ms": e.t_ms})
        if p["type"] == "rating_end":
            closed.append(ratings.pop(key))
    assert len(closed) >= 5
    for rating in closed:
        first, *rest = rating
        assert first["type"] == "rating_start"
        assert [r["type"] for r in rest[:-1]] == ["rating_update"] * (len(rest) - 1)
        assert rest
        assert rest[-1]["type"] == "rating_end"
        for before, r in zip(rating, rest, strict=False):
            assert r["t_ms"] - before["t_ms"] <= 12 * 60_000 + 1
            assert r["wager_cents"] % r["avg_bet_cents"] == 0
            assert r["points"] == r["wager_cents"] // 100
        total_wager = sum(r["wager_cents"] for r in rest)
        assert sum(r["points"] for r in rest) == total_wager // 100
        assert total_wager > 0


def test_points_are_one_per_rand_and_higher_tiers_bet_more(stream: list[SimEvent]) -> None:
    tier = {m.card: m.tier for m in _floor().members}
    stakes: dict[str, list[int]] = defaultdict(list)
    for e in stream:
        if e.payload["type"] == "game":
            wager = int(e.payload["wager_cents"])
            assert e.payload["points"] == wager // 100
            stakes[tier[str(e.payload["card"])]].append(wager)
    assert statistics.mean(stakes["10"]) < statistics.mean(stakes["Q"])
    if stakes["A"]:
        assert statistics.mean(stakes["Q"]) < statistics.mean(stakes["A"])


def test_evenings_are_busier_than_mornings() -> None:
    config = FloorConfig(egms=30, tables=2, members=300, offline_per_egm_day=0.0)
    morning = START.replace(hour=5)
    evening = START.replace(hour=19)
    first = Counter(e.payload["type"] for e in _events(config, hours=1.5, start=morning))
    second = Counter(e.payload["type"] for e in _events(config, hours=1.5, start=evening))
    assert second["game"] > 3 * first["game"]
    assert second["card_in"] > first["card_in"]


def test_floor_and_registry_files(tmp_path: Path) -> None:
    floor = _floor(FloorConfig(egms=60, tables=6, members=1000))
    devices_csv, members_csv = export_registry(floor, tmp_path / "registry")
    with devices_csv.open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == DEVICE_COLUMNS
        devices = list(reader)
    assert len(devices) == 66
    assert len({d["device"] for d in devices}) == 66
    assert Counter(d["kind"] for d in devices) == {"egm": 60, "table": 6}
    assert {d["area"] for d in devices} <= {"main", "smoking", "prive"}
    assert all(d["bank"] and int(d["position"]) >= 1 for d in devices)
    with members_csv.open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == MEMBER_COLUMNS
        members = list(reader)
    assert len({m["card"] for m in members}) == 1000
    tiers = Counter(m["tier"] for m in members)
    assert tiers == {"10": 400, "J": 300, "Q": 180, "K": 80, "A": 40}
    adult = dt.date(START.year - 18, START.month, START.day)
    for m in members:
        assert re.fullmatch(r"70\d{8}", m["card"])
        assert len(m["name"].split()) >= 2
        for flag in ("app_user", "sms_opt_in", "excluded"):
            assert m[flag] in ("true", "false")
        assert dt.date.fromisoformat(m["date_of_birth"]) < adult
        assert (m["exclusion_reason"] != "") == (m["excluded"] == "true")
        if m["last_visit"]:
            assert dt.date.fromisoformat(m["last_visit"]) < START.date()
    app_users = sum(m["app_user"] == "true" for m in members) / 1000
    assert 0.28 < app_users < 0.42
    assert 0 < sum(m["excluded"] == "true" for m in members) < 30
    again = tmp_path / "again"
    export_registry(_floor(FloorConfig(egms=60, tables=6, members=1000)), again)
    assert (again / "members.csv").read_bytes() == members_csv.read_bytes()


def test_wire_format(stream: list[SimEvent]) -> None:
    lines = _wire(stream[:50]).splitlines()
    assert len(lines) == 50
    for line, event in zip(lines, stream, strict=False):
        topic, body = line.split("\t")
        assert topic == f"bonusd/demo/{event.kind}/{event.device}/events"
        assert json.loads(body) == event.payload
    assert topic_for(stream[0], prefix="x/y", site="s1").startswith("x/y/s1/")
    with pytest.raises(ValueError, match="site"):
        topic_for(stream[0], site="a/#")


def test_parsers() -> None:
    assert parse_duration("2h") == dt.timedelta(hours=2)
    assert parse_duration("1h30m") == dt.timedelta(minutes=90)
    assert parse_duration("1.5d") == dt.timedelta(hours=36)
    with pytest.raises(ValueError, match="duration"):
        parse_duration("2 hours")
    target = parse_mqtt_url("mqtt://bonus%40d:p%3Ass@broker.local:1884")
    assert (target.host, target.port, target.username, target.password, target.tls) == (
        "broker.local",
        1884,
        "bonus@d",
        "p:ss",
        False,
    )
    assert parse_mqtt_url("mqtt://127.0.0.1").port == 1883
    assert parse_mqtt_url("mqtts://h").port == 8883
    with pytest.raises(ValueError, match="scheme"):
        parse_mqtt_url("http://h:1883")
    with pytest.raises(ValueError, match="invalid FloorConfig"):
        FloorConfig(egms=-1)


def test_publish_to_mosquitto_delivers_every_event_paced(broker: LocalMosquitto) -> None:
    prefix = f"test-{uuid.uuid4().hex}"
    events = _events(FloorConfig(egms=60, tables=4, members=300), hours=1.0)[:300]
    got: set[tuple[str, str, int]] = set()
    done = threading.Event()
    subscribed = threading.Event()

    def on_message(_c: Any, _u: Any, msg: Any) -> None:
        body = json.loads(msg.payload)
        got.add((msg.topic, body["epoch"], body["seq"]))
        if len(got) >= len(events):
            done.set()

    sub = mqtt.Client(CallbackAPIVersion.VERSION2)
    sub.on_message = on_message
    sub.on_subscribe = lambda *_a: subscribed.set()
    sub.connect("127.0.0.1", broker.port)
    sub.subscribe(f"{prefix}/#", qos=1)
    sub.loop_start()
    try:
        assert subscribed.wait(5)
        speed = 600.0
        span_s = (events[-1].t_ms - START.timestamp() * 1000) / 1000
        began = time.monotonic()
        counts = publish_events(
            events, mqtt_url=broker.url, prefix=prefix, site="t", speed=speed,
            start=START, max_inflight=50,
        )  # fmt: skip
        assert time.monotonic() - began >= span_s / speed * 0.9
        assert counts.total() == len(events)
        assert done.wait(10), f"{len(got)} of {len(events)} arrived"
    finally:
        sub.disconnect()
        sub.loop_stop()
    for e in events:
        topic = f"{prefix}/t/{e.kind}/{e.device}/events"
        assert (topic, e.payload["epoch"], e.payload["seq"]) in got


@pytest.mark.parametrize("contract", ["v2", "v1"])
def test_every_simulated_event_passes_the_bonusd_decoder(tmp_path: Path, contract: str) -> None:
    """The simulator speaks contract v2 (or v1) exactly: nothing it sends is dead-lettered."""
    config = FloorConfig(egms=60, tables=4, members=300)
    floor = _floor(config)
    span = dt.timedelta(hours=2)
    chosen = contract_of(contract)
    events = list(generate_events(floor, seed=42, start=START, duration=span, contract=chosen))
    decoder = TelemetryDecoder(
        prefix="bonusd",
        site="sim",
        calendar=GamingCalendar(ZoneInfo("Africa/Johannesburg"), dt.time(8, 0)),
        limits=DecodeLimits(4096, dt.timedelta(minutes=5), dt.timedelta(days=7)),
    )
    encoder = Encoder(prefix="bonusd", site="sim")
    for e in events:
        topic, payload = encoder.topic(e), encoder.body(e.payload)
        now = dt.datetime.fromtimestamp(e.t_ms / 1000, dt.UTC)
        assert isinstance(decoder.decode(topic, payload, now), FloorEvent), payload
    floor = build_floor(config, seed=42, as_of=START.date())
    devices, members = export_registry(floor, tmp_path)
    assert len(read_file(RegDevice, devices)) == 64
    assert len(read_file(RegMember, members)) == 300
