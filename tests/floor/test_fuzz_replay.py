"""Replayed, reordered and late telemetry, as docs/telemetry.md says ("Time", "Fields of
every event"):

- an event re-sent with the same id (and the same `ts`) is applied once, within a batch,
  across batches and over MQTT;
- totals are sums: any delivery order, batching and replay gives the same totals;
- for where a player is, an event older than the newest one already seen for the card
  (or for the place) does not move anyone, within a batch or across batches;
- an event older than the de-duplication window is dead-lettered as `too_old`, one too
  far ahead as `future`, and neither changes the floor.

Store-level tests decode and apply batches exactly as `bonusd/ingest/consumer.py` does (decode,
dead-letter refusals, one `apply_batch` per batch), so a batch's make-up is chosen here;
the MQTT tests run the whole daemon.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonusd.infra.keys import Keys
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import Daemon
from tests.fuzz_helpers import CAL, NOW, SKEW, WINDOW, Floor, floor_snapshot
from tests.telemetry_helpers import Publisher

T0 = NOW - dt.timedelta(minutes=25)  # inside the idle timeout: no sweep ends a session
DAY = CAL.gaming_day(T0).isoformat()


@dataclass(frozen=True)
class Msg:
    topic_tail: str
    body: dict[str, Any]

    @property
    def ts(self) -> str:
        return str(self.body["ts"])


def _at(minute: float) -> str:
    return (T0 + dt.timedelta(milliseconds=round(minute * 60_000))).isoformat(
        timespec="milliseconds"
    )


def egm(device: str, kind: str, card: str, minute: float, ident: str, **extra: Any) -> Msg:
    ts = _at(minute)
    body = {"id": ident, "type": kind, "ts": ts, "card": card, **extra}
    if kind == "game":
        body = {"wager_cents": 100, "win_cents": 0, "points": 1, **body}
    return Msg(f"egm/{device}/events", body)


def table(device: str, kind: str, card: str, minute: float, ident: str, *, seat: int) -> Msg:
    ts = _at(minute)
    body: dict[str, Any] = {
        "id": ident,
        "type": kind,
        "ts": ts,
        "card": card,
        "seat": seat,
        "avg_bet_cents": 500,
    }
    if kind != "rating_start":
        body |= {"wager_cents": 1000, "points": 10}
    return Msg(f"table/{device}/events", body)


class Floors:
    """Fresh floors on demand, each on a site of its own, removed when done."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self.made: list[Floor] = []

    def new(self) -> Floor:
        f = Floor(self.redis, f"r{uuid.uuid4().hex[:10]}", NOW)
        self.made.append(f)
        return f

    async def drop(self, *floors: Floor) -> None:
        for f in floors:
            await f.close()
            self.made.remove(f)


@pytest.fixture
async def floors(aredis: aioredis.Redis) -> AsyncIterator[Floors]:
    made = Floors(aredis)
    yield made
    await made.drop(*made.made)


# -- replays ----------------------------------------------------------------------------


async def test_a_replayed_message_is_applied_once_within_and_across_batches(floors: Floors) -> None:
    f = floors.new()
    g = egm("EGM-1", "game", "1001", 1, "g-1")
    assert await f.batch(g, g, g) == (1, 2, 0)  # one batch: the repeats are duplicates
    assert await f.batch(g, egm("EGM-1", "game", "1001", 2, "g-2"), g) == (1, 2, 0)
    assert await f.batch(g) == (0, 1, 0)  # a later batch: the id was seen
    day = await f.day("1001")
    assert (day["games"], day["spend_cents"], day["slots_points"]) == (2, 200, 2)
    stats = await f.stats()
    assert (stats["applied"], stats["duplicates"]) == (2, 5)


async def test_the_same_id_is_remembered_by_the_hour_of_its_ts(floors: Floors) -> None:
    """docs/telemetry.md (`id`): the id set is kept per hour of `ts`, so a re-sent event
    (same id, same ts) is a duplicate, as is the same id with another ts in that hour; an
    id reused with a ts in another hour is taken for a new event (ids must be unique)."""
    f = floors.new()
    hour = T0.replace(minute=0, second=0, microsecond=0)
    first = egm("EGM-1", "game", "1001", 0, "g-1")
    first.body["ts"] = (hour + dt.timedelta(minutes=5)).isoformat()
    same_hour = Msg(
        first.topic_tail, {**first.body, "ts": (hour + dt.timedelta(minutes=50)).isoformat()}
    )
    other_hour = Msg(
        first.topic_tail, {**first.body, "ts": (hour - dt.timedelta(minutes=5)).isoformat()}
    )
    assert await f.batch(first) == (1, 0, 0)
    assert await f.batch(same_hour) == (0, 1, 0)
    assert await f.batch(other_hour) == (1, 0, 0)


# -- reordering: the documented state ---------------------------------------------------

IN = egm("EGM-1", "card_in", "1001", 0, "in")
GAME = egm("EGM-1", "game", "1001", 5, "game")
OUT = egm("EGM-1", "card_out", "1001", 10, "out")
MOVE = egm("EGM-2", "card_in", "1001", 10, "move")
LATE_OUT = egm("EGM-1", "card_out", "1001", 8, "late-out")
OTHER = egm("EGM-1", "card_in", "2002", 10, "other-in")
T_START = table("T1", "rating_start", "3003", 0, "r-start", seat=4)
T_UPDATE = table("T1", "rating_update", "3003", 5, "r-update", seat=4)
T_END = table("T1", "rating_end", "3003", 10, "r-end", seat=4)
NOBODY: dict[str, tuple[str, str, int | None]] = {}
AT_1 = {"1001": ("egm", "EGM-1", None)}
AT_2 = {"1001": ("egm", "EGM-2", None)}
OTHER_AT_1 = {"2002": ("egm", "EGM-1", None)}

REORDERED = [
    # (name, events in the order they happened, delivery order, the documented placement)
    ("card-out before its card-in", [IN, OUT], [OUT, IN], NOBODY),
    ("card-out before game and card-in", [IN, GAME, OUT], [OUT, GAME, IN], NOBODY),
    ("game before its card-in", [IN, GAME], [GAME, IN], AT_1),
    ("late game after the card-out", [IN, GAME, OUT], [IN, OUT, GAME], NOBODY),
    ("late card-in after a move", [IN, MOVE], [MOVE, IN], AT_2),
    ("late card-out at the old EGM after a move", [IN, MOVE, LATE_OUT], [IN, MOVE, LATE_OUT], AT_2),
    ("late card-in at an EGM a newer card took", [IN, OTHER], [OTHER, IN], OTHER_AT_1),
    ("late game at an EGM a newer card took", [IN, GAME, OTHER], [OTHER, IN, GAME], OTHER_AT_1),
    ("rating end before its start", [T_START, T_UPDATE, T_END], [T_END, T_UPDATE, T_START], NOBODY),
    (
        "rating start after its update",
        [T_START, T_UPDATE],
        [T_UPDATE, T_START],
        {"3003": ("table", "T1", 4)},
    ),
]


@pytest.mark.parametrize("split", ["one batch", "one batch each"])
@pytest.mark.parametrize(
    ("happened", "delivered", "expected"),
    [case[1:] for case in REORDERED],
    ids=[case[0] for case in REORDERED],
)
async def test_reordered_events_land_in_the_documented_state(
    floors: Floors,
    happened: list[Msg],
    delivered: list[Msg],
    expected: dict[str, tuple[str, str, int | None]],
    split: str,
) -> None:
    in_order = floors.new()
    await in_order.feed([[m] for m in happened])
    assert await in_order.placement() == expected  # the same as in the order they happened

    f = floors.new()
    await f.feed([delivered] if split == "one batch" else [[m] for m in delivered])
    assert await f.placement() == expected
    for card in {m.body["card"] for m in happened}:  # totals are sums: order does not matter
        assert await f.day(card) == await in_order.day(card)


# -- reordering: any order, any batching, any replay ------------------------------------

EGMS = ("EGM-1", "EGM-2", "EGM-3")
SEATS = (("T1", 1), ("T1", 2))


@st.composite
def timelines(draw: st.DrawFn) -> list[Msg]:
    """What a floor whose boards lose nothing sends, in the order it happened: each card
    plays one session at a time, from its card-in to its card-out (the last one may still
    be open), and a place (EGM or table seat) holds one card at a time. Every event at its
    own millisecond."""
    cards = ["1001", "1002", "1003"]
    places = [(e, 0) for e in EGMS] + list(SEATS)
    where: dict[str, tuple[str, int] | None] = dict.fromkeys(cards)
    msgs: list[Msg] = []
    minute = 0.0
    for n in range(draw(st.integers(1, 24))):
        minute += draw(st.integers(1, 1000)) / 60_000  # milliseconds apart
        card = draw(st.sampled_from(cards))
        here = where[card]
        ident = f"e{n}"
        if here is None:
            free = [p for p in places if p not in where.values()]
            if not free:
                continue
            device, seat = where[card] = draw(st.sampled_from(free))
            if seat:
                msgs.append(table(device, "rating_start", card, minute, ident, seat=seat))
            else:
                msgs.append(egm(device, "card_in", card, minute, ident))
            continue
        device, seat = here
        if draw(st.booleans()):
            if seat:
                msgs.append(table(device, "rating_update", card, minute, ident, seat=seat))
            else:
                msgs.append(egm(device, "game", card, minute, ident))
            continue
        where[card] = None
        if seat:
            msgs.append(table(device, "rating_end", card, minute, ident, seat=seat))
        else:
            msgs.append(egm(device, "card_out", card, minute, ident))
    return msgs


@st.composite
def anything(draw: st.DrawFn) -> list[Msg]:
    """Any events at all: lost card-ins and card-outs, cards in two places, games at
    places nobody carded in at, repeated timestamps."""
    msgs = []
    for n in range(draw(st.integers(1, 24))):
        card = draw(st.sampled_from(["1001", "1002", "1003"]))
        minute = draw(st.integers(0, 20)) / 60
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["card_in", "card_out", "game"]))
            msgs.append(egm(draw(st.sampled_from(EGMS)), kind, card, minute, f"e{n}"))
        else:
            kind = draw(st.sampled_from(["rating_start", "rating_update", "rating_end"]))
            device, seat = draw(st.sampled_from(SEATS))
            msgs.append(table(device, kind, card, minute, f"e{n}", seat=seat))
    return msgs


@st.composite
def deliveries(draw: st.DrawFn, happened: list[Msg]) -> list[list[Msg]]:
    """The same messages shuffled, some sent again, cut into batches."""
    sent = happened + draw(st.lists(st.sampled_from(happened), max_size=len(happened)))
    sent = draw(st.permutations(sent))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(sent) - 1)), max_size=len(sent))))
    edges = [0, *[c for c in cuts if c < len(sent)], len(sent)]
    return [sent[a:b] for a, b in itertools.pairwise(edges) if b > a]


async def _any_order_lands_where_the_true_order_does(
    made: Floors, data: st.DataObject, *, lossless: bool
) -> None:
    """With a lossless floor, every delivery order, batching and replay lands in the
    placement of the true order. With any events at all (lost card-ins and card-outs,
    impossible sequences) the placement may depend on the order (docs/telemetry.md), but
    the floor's indexes always agree with each other (`Floor.placement` checks them)."""
    happened = data.draw(timelines() if lossless else anything())
    batches = data.draw(deliveries(happened))
    truth = made.new()
    await truth.feed([[m] for m in happened])
    f = made.new()
    await f.feed(batches)
    placed = await f.placement()
    if lossless:
        assert placed == await truth.placement()
    for card in ("1001", "1002", "1003"):  # totals are sums: order never matters
        assert await f.day(card) == await truth.day(card)
    assert (await f.stats()).get("applied", 0) == len(happened)
    await made.drop(truth, f)


FEW = settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
MANY = settings(max_examples=1000, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("lossless", [True, False], ids=["lossless floor", "any events"])
@FEW
@given(data=st.data())
async def test_any_delivery_order_lands_in_the_state_of_the_true_order(
    floors: Floors, data: st.DataObject, lossless: bool
) -> None:
    await _any_order_lands_where_the_true_order_does(floors, data, lossless=lossless)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("lossless", [True, False], ids=["lossless floor", "any events"])
@MANY
@given(data=st.data())
async def test_any_delivery_order_lands_in_the_state_of_the_true_order_deep(
    floors: Floors, data: st.DataObject, lossless: bool
) -> None:
    await _any_order_lands_where_the_true_order_does(floors, data, lossless=lossless)


# -- late and early events --------------------------------------------------------------


async def test_an_applied_event_replayed_after_the_window_is_too_old_not_applied_twice(
    floors: Floors,
) -> None:
    """The window is what makes exactly-once finite: an event re-sent after it is
    refused as `too_old` rather than applied a second time."""
    f = floors.new()
    g = egm("EGM-1", "game", "1001", 0, "g-1")
    assert await f.batch(g) == (1, 0, 0)
    f.clock.set(T0 + WINDOW - dt.timedelta(seconds=1))
    assert await f.batch(g) == (0, 1, 0)  # still inside the window: a duplicate
    f.clock.set(T0 + WINDOW + dt.timedelta(milliseconds=1))
    before = await floor_snapshot(f.redis, f.keys.base)
    assert await f.batch(g) == (0, 0, 1)
    assert await floor_snapshot(f.redis, f.keys.base) == before
    (letter,) = await f.store.deadletters(1)
    assert letter["reason"] == "too_old"
    assert "de-duplication window" in letter["detail"]
    assert (await f.day("1001"))["games"] == 1


# -- over MQTT, the whole daemon --------------------------------------------------------


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


async def test_over_mqtt_replays_late_and_early_events(
    daemon: Daemon, pub: Publisher, site: str, aredis: aioredis.Redis
) -> None:
    base = Keys("bonusd", site).base
    card_in = egm("EGM-1", "card_in", "1001", 0, "in-1").body
    game = egm("EGM-1", "game", "1001", 1, "game-1").body
    sent = pub.egm("EGM-1", card_in, game, game, card_in, game)  # QoS 1 re-sends, a replay
    await daemon.wait_committed(sent)
    day = await daemon.get(f"/members/1001/days/{DAY}")
    assert (day["games"], day["spend_cents"]) == (1, 100)
    assert (await daemon.get("/members/1001"))["active"]["device"] == "EGM-1"

    before = await floor_snapshot(aredis, base)
    old = {**game, "id": "old-1", "ts": (NOW - WINDOW - dt.timedelta(seconds=1)).isoformat()}
    ahead = {**game, "id": "ahead-1", "ts": (NOW + SKEW + dt.timedelta(seconds=1)).isoformat()}
    sent += pub.egm("EGM-1", old, ahead)
    await daemon.wait_committed(sent)
    letters = await daemon.get("/deadletters?count=2")
    assert [d["reason"] for d in letters] == ["future", "too_old"]
    assert await floor_snapshot(aredis, base) == before
    metrics = (await daemon.http.get("/metrics")).text
    assert "bonusd_events_duplicate_total 3.0" in metrics

    # a card-out older than the card-in (delivered late) moves nobody
    sent += pub.egm("EGM-1", egm("EGM-1", "card_out", "1001", -10, "out-0").body)
    await daemon.wait_committed(sent)
    assert (await daemon.get("/members/1001"))["active"]["device"] == "EGM-1"
