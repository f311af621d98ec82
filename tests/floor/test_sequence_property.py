"""The property of contract v2 de-duplication, against a real Redis (lua/apply.lua with
lua/seqstate.lua): for any interleaving of duplicates, reorderings within the window and
reboots, the applied multiset equals the set of distinct (device, epoch, seq) events.

A scenario: a few devices, each living through one to three epochs (reboots), numbering
its events 1, 2, 3, … in each. Every event is delivered at least once; each is late by
at most `delay` places in its device's stream (less than the window), and each epoch is
longer than `delay`, so an epoch's events all arrive before the one after next starts,
as a broker's reordering allows. Any event may be delivered again (QoS 1) at any later
point, as late as the end. The deliveries are cut into batches at random places.
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from dataclasses import dataclass

import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonusd.floor.sequence import WINDOW
from bonusd.floor.telemetry import FloorEvent
from bonusd.infra.keys import Keys
from tests.floor.helpers import AT_MS, NEXT, floor_store, v2_game

T = AT_MS - 3_600_000


@dataclass(frozen=True)
class Scenario:
    events: list[FloorEvent]  # what the devices sent, each once
    batches: list[list[FloorEvent]]  # what arrived, in order


def _identity(event: FloorEvent) -> tuple[str, str, int]:
    return event.device, event.epoch, event.seq


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    delay = draw(st.integers(0, min(24, WINDOW - 1)))
    arrivals: list[tuple[float, FloorEvent]] = []
    sent: list[FloorEvent] = []
    for device in [f"EGM-{n}" for n in range(draw(st.integers(1, 3)))]:
        stream = []
        for boot in range(draw(st.integers(1, 3))):
            length = draw(st.integers(delay + 1, delay + 25))
            stream += [(f"{device}.b{boot}", seq) for seq in range(1, length + 1)]
        for place, (epoch, seq) in enumerate(stream):
            event = v2_game(device, epoch, seq, T + place)  # time moves on across boots
            sent.append(event)
            late = draw(st.integers(0, delay))
            tie = draw(st.floats(0, 0.99))
            arrivals.append((place + late + tie, event))
    order = [event for _, event in sorted(arrivals, key=lambda pair: pair[0])]
    # QoS 1 redelivery: some events again, each somewhere after its first delivery
    for event in draw(st.lists(st.sampled_from(sent), max_size=len(sent))):
        first = order.index(event)
        order.insert(draw(st.integers(first + 1, len(order))), event)
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(order) - 1)), max_size=len(order))))
    edges = [0, *[c for c in cuts if c < len(order)], len(order)]
    batches = [order[a:b] for a, b in itertools.pairwise(edges) if b > a]
    return Scenario(sent, batches)


PROPERTY = settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(scenario=scenarios())
async def test_the_applied_multiset_is_the_set_of_distinct_events(
    aredis: aioredis.Redis, site: str, scenario: Scenario
) -> None:
    keys = Keys(f"p{uuid.uuid4().hex[:10]}", site)  # a fresh floor per example
    store = floor_store(aredis, keys)
    try:
        applied = duplicates = refused = gaps = 0
        for batch in scenario.batches:
            result = await store.apply_batch(batch, [])
            applied += result.applied
            duplicates += result.duplicates
            refused += len(result.refused)
            gaps += result.gaps
        # each event is one card's only game: applied once means exactly one game
        async with aredis.pipeline(transaction=False) as pipe:
            for event in scenario.events:
                pipe.hget(keys.day(NEXT, event.card), "games")
            games = Counter(int(n or 0) for n in await pipe.execute())
        assert games == Counter({1: len(scenario.events)})
        assert applied == len({_identity(e) for e in scenario.events}) == len(scenario.events)
        delivered = sum(len(b) for b in scenario.batches)
        assert duplicates + refused == delivered - applied  # a late copy may be refused
        assert gaps == 0  # nothing was lost
        for device in {e.device for e in scenario.events}:
            state = await store.device_sequence(device)
            assert state is not None and state.gaps == 0
            assert state.epochs == len({e.epoch for e in scenario.events if e.device == device})
    finally:
        doomed = [key async for key in aredis.scan_iter(f"{keys.base}*", count=1000)]
        if doomed:
            await aredis.delete(*doomed)
