"""Telemetry contract v2 through the whole daemon, on a real Mosquitto and Redis: exactly
once under QoS 1 redelivery, and a floor where v1 and v2 devices play side by side with
reboots, gaps, a sequence going backwards and a replayed old epoch, as docs/telemetry.md
("Contract v2") defines them. The broker restart mid-burst with reordering and the
`kill -9` mid-burst run on v2 in tests/service (test_faults_broker.py, test_crash.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

import pytest

from bonusd.floor.store import FloorStore
from bonusd.ingest.consumer import Ingest
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import SAST, Daemon
from tests.telemetry_helpers import Publisher, game, sequenced

T = dt.datetime(2026, 10, 3, 19, 0, tzinfo=SAST)  # an hour before the daemon's clock
DAY = "2026-10-03"


def _v2_game(card: str, epoch: str, seq: int, minute: float = 0, wager: int = 100) -> Any:
    ts = T + dt.timedelta(minutes=minute, milliseconds=seq)
    return sequenced("game", card, ts, epoch, seq, wager_cents=wager, win_cents=0, points=1)


async def _until_stat(store: FloorStore, field: str, at_least: int) -> None:
    async with asyncio.timeout(20):
        while (await store.stats()).get(field, 0) < at_least:
            await asyncio.sleep(0.02)


async def test_v2_events_redelivered_after_lost_acknowledgements_apply_once(
    daemon: Daemon,
    broker: LocalMosquitto,
    site: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A batch committed in Redis whose PUBACKs are never sent (the ingest dies between
    the two) is redelivered by the broker to the daemon's persistent session: every event
    in it is then a duplicate by its device's sequence, never applied twice."""
    ingest: Ingest = daemon.service.ingest
    real_commit = ingest._commit
    gate = asyncio.Event()
    lost = [RuntimeError("the ingest died after its commit, before the acknowledgements")]
    crashed: list[int] = []  # the size of the batch committed but never acknowledged

    async def commit_then_die(batch: list[Any], stop: asyncio.Event) -> Any:
        if len(batch) > 1:
            await gate.wait()  # the burst's messages pile up meanwhile
        result = await real_commit(batch, stop)
        if len(batch) > 1 and lost:
            crashed.append(len(batch))
            raise lost.pop()
        return result

    monkeypatch.setattr(ingest, "_commit", commit_then_die)
    monkeypatch.setattr(ingest, "_backoff_max_s", 0.2)
    cards = {"EGM-1": "4001", "EGM-2": "4002", "EGM-3": "4003"}
    store = daemon.service.store
    pub = Publisher(broker, site)
    try:
        with caplog.at_level(logging.WARNING, logger="bonusd.ingest.consumer"):
            pub.egm("EGM-1", _v2_game("4001", "boot-a", 1))
            await daemon.wait_committed(1)
            for block in range(4):  # each device's seqs 2..41, reversed in blocks of ten
                for seq in reversed(range(2 + block * 10, 12 + block * 10)):
                    for device, card in cards.items():
                        if (device, seq) != ("EGM-1", 1):
                            pub.egm(device, _v2_game(card, "boot-a", seq, wager=seq))
            await asyncio.sleep(0.3)
            gate.set()
            sent = 1 + 3 * 40
            await _until_stat(store, "applied", sent)
            await asyncio.sleep(0.3)  # anything more would be a double application
        assert crashed and crashed[0] > 1, "no batch was committed and left unacknowledged"
        stats = await store.stats()
        assert stats["applied"] == sent
        assert stats["duplicates"] == crashed[0]  # the broker sent it again
        assert any("ingest failed" in rec.getMessage() for rec in caplog.records)
        for device, card in cards.items():
            day = await daemon.get(f"/members/{card}/days/{DAY}")
            first = 1 if device == "EGM-1" else 0
            assert day["games"] == 40 + first
            assert day["spend_cents"] == sum(range(2, 42)) + 100 * first
            seq = await daemon.get(f"/devices/{device}/sequence")
            assert seq["current"] == {"epoch": "boot-a", "seq": 41, "missing": 1 - first}
            assert seq["gaps"] == 0
    finally:
        pub.close()


async def _floor(pub: Publisher) -> int:
    """What the mixed floor sends; returns how many messages."""
    sent = 0
    # EGM-1 still speaks v1: ids, one re-sent
    v1 = [game("1001", T + dt.timedelta(seconds=n), wager=100, points=1) for n in range(3)]
    sent += pub.egm("EGM-1", *v1, v1[1])
    # EGM-2: an epoch with a duplicate and a hole, a reboot, then the old epoch's late
    # events: the hole filled (applied), and a copy of its first (a duplicate)
    sent += pub.egm("EGM-2", *(_v2_game("2002", "a1", s) for s in (1, 2, 3, 3, 5)))
    sent += pub.egm("EGM-2", *(_v2_game("2002", "a2", s, minute=10) for s in (1, 2)))
    sent += pub.egm("EGM-2", _v2_game("2002", "a1", 4), _v2_game("2002", "a1", 1))
    # EGM-3: a jump ahead (71 events lost at the device), then a sequence going backwards
    # more than the window: dead-lettered
    sent += pub.egm("EGM-3", *(_v2_game("3003", "b1", s) for s in (1, 200, 50)))
    # EGM-4: three boots, then a late event of the first (forgotten by now) and of an
    # unknown epoch older than the current one
    sent += pub.egm("EGM-4", *(_v2_game("4004", f"x{n}", 1, minute=n) for n in (1, 2, 3)))
    sent += pub.egm("EGM-4", _v2_game("4004", "x1", 2, minute=1), _v2_game("4004", "x0", 1))
    return sent


async def test_a_floor_of_v1_and_v2_devices_with_reboots_gaps_and_old_epochs(
    daemon: Daemon, broker: LocalMosquitto, site: str
) -> None:
    pub = Publisher(broker, site)
    try:
        await daemon.wait_committed(await _floor(pub))
    finally:
        pub.close()
    games = {card: (await daemon.get(f"/members/{card}/days/{DAY}"))["games"] for card in
             ("1001", "2002", "3003", "4004")}  # fmt: skip
    assert games == {"1001": 3, "2002": 7, "3003": 2, "4004": 3}
    egm2 = await daemon.get("/devices/EGM-2/sequence")
    assert egm2["current"] == {"epoch": "a2", "seq": 2, "missing": 0}
    assert egm2["previous"] == {"epoch": "a1", "seq": 5, "missing": 0}
    assert (egm2["epochs"], egm2["gaps"]) == (2, 0)
    assert egm2["current_since"].startswith("2026-10-03T17:10:00.001")  # UTC
    egm3 = await daemon.get("/devices/EGM-3/sequence")
    assert (egm3["current"]["seq"], egm3["gaps"], egm3["current"]["missing"]) == (200, 71, 127)
    egm4 = await daemon.get("/devices/EGM-4/sequence")
    assert (egm4["current"]["epoch"], egm4["previous"]["epoch"], egm4["epochs"]) == ("x3", "x2", 3)
    missing = await daemon.http.get("/devices/EGM-1/sequence")  # a v1 device
    assert missing.status_code == 404
    assert "no contract v2 event" in missing.json()["detail"]
    letters = await daemon.get("/deadletters")
    reasons = sorted(x["reason"] for x in letters)
    assert reasons == ["behind_window", "old_epoch", "old_epoch"]
    behind = next(x for x in letters if x["reason"] == "behind_window")
    assert behind["topic"] == f"bonusd/{site}/egm/EGM-3/events"
    assert '"seq": 50' in behind["payload"]
    metrics = (await daemon.http.get("/metrics")).text
    assert "bonusd_sequence_gaps_total 71.0" in metrics
    assert 'bonusd_dead_letters_total{reason="behind_window"} 1.0' in metrics
    assert 'bonusd_dead_letters_total{reason="old_epoch"} 2.0' in metrics
    assert "bonusd_events_duplicate_total 3.0" in metrics  # v1 once, v2 twice
    stats = await daemon.service.store.stats()
    assert (stats["applied"], stats["duplicates"], stats["sequence_gaps"]) == (15, 3, 71)
