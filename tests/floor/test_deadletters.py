"""Bad input never stops the floor: every bad message is dead-lettered with its reason,
and good messages interleaved with them are all applied."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest

from bonusd.clocks.clock import ManualClock
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import SAST, Daemon
from tests.telemetry_helpers import Publisher, event, game

NOW = dt.datetime(2026, 10, 3, 21, 0, tzinfo=SAST)
T = NOW - dt.timedelta(minutes=10)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


def _bad_corpus(site: str) -> list[tuple[str, bytes, str]]:
    egm = f"bonusd/{site}/egm/EGM-1/events"
    table = f"bonusd/{site}/table/T1/events"

    def dump(d: dict[str, object]) -> bytes:
        return json.dumps(d).encode()

    good = game("1001", T, 100, 1)
    return [
        (egm, b"this is not json", "not_json"),
        (egm, b"\xff\xfe\x00garbage", "not_json"),
        (egm, b'{"id": "x", "type": "game"', "not_json"),
        (egm, b"[1, 2, 3]", "invalid"),
        (egm, dump({**good, "id": "neg", "wager_cents": -500}), "invalid"),
        (egm, dump({**good, "id": "str", "points": "ten"}), "invalid"),
        (egm, dump({**good, "id": "bool", "points": True}), "invalid"),
        (egm, dump({k: v for k, v in good.items() if k != "card"}), "invalid"),
        (egm, dump({**good, "id": ""}), "invalid"),
        (egm, dump({**good, "id": "naive", "ts": "2026-10-03T20:50:00"}), "invalid"),
        (egm, dump({**good, "id": "badts", "ts": "yesterday"}), "invalid"),
        (egm, dump({**good, "id": "card", "card": "12 34"}), "invalid"),
        (egm, dump({**good, "id": "jackpot", "type": "jackpot_hit"}), "unknown_type"),
        (egm, dump({**good, "id": "big", "pad": "x" * 5000}), "too_large"),
        (
            egm,
            dump({**good, "id": "fut", "ts": (NOW + dt.timedelta(hours=1)).isoformat()}),
            "future",
        ),
        (
            egm,
            dump({**good, "id": "old", "ts": (NOW - dt.timedelta(days=30)).isoformat()}),
            "too_old",
        ),
        (table, dump({**good, "id": "gameattable"}), "wrong_device_kind"),
        (f"bonusd/{site}/slot/EGM-1/events", dump({**good, "id": "topic"}), "bad_topic"),
    ]


async def test_bad_corpus_dead_lettered_good_ones_applied(
    daemon: Daemon, pub: Publisher, site: str
) -> None:
    corpus = _bad_corpus(site)
    wager = 0
    sent = 0
    for n, (topic, payload, _) in enumerate(corpus):
        pub.send(topic, payload)
        sent += 1
        ok = game("1001", T + dt.timedelta(seconds=n), 100 + n, 1)
        wager += 100 + n
        sent += pub.egm("EGM-1", ok)
    await daemon.wait_committed(sent)

    letters = list(reversed(await daemon.get(f"/deadletters?count={len(corpus) + 5}")))
    assert [d["reason"] for d in letters] == [reason for _, _, reason in corpus]
    for letter, (topic, payload, _) in zip(letters, corpus, strict=True):
        assert letter["topic"] == topic
        assert letter["detail"]
        assert len(letter["payload"]) <= 2048 + 100  # truncated to the bound
        if len(payload) < 100 and payload.isascii():
            assert letter["payload"] == payload.decode()
        assert int(letter["arrived_ms"]) > 0
    day = await daemon.get("/members/1001/days/2026-10-03")
    assert day["games"] == len(corpus)
    assert day["spend_cents"] == wager

    metrics = (await daemon.http.get("/metrics")).text
    assert 'bonusd_dead_letters_total{reason="invalid"} 9.0' in metrics
    assert f"bonusd_events_applied_total {float(len(corpus))}" in metrics


async def test_rejected_input_leaves_floor_unchanged(
    daemon: Daemon, pub: Publisher, site: str
) -> None:
    sent = pub.egm("EGM-1", event("card_in", "1001", T))
    await daemon.wait_committed(sent)
    before = await daemon.get("/floor/active")
    for topic, payload, _ in _bad_corpus(site):
        pub.send(topic, payload)
        sent += 1
    await daemon.wait_committed(sent)
    assert await daemon.get("/floor/active") == before
    assert (await daemon.get("/members/1001/days/2026-10-03"))["spend_cents"] == 0
