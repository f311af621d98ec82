"""Telemetry contract v2 against a real Redis: each device's events applied exactly once by
its epoch and sequence number (lua/seqstate.lua inside lua/apply.lua), with duplicates,
reordering inside the window, gaps, a sequence going backwards past the window, reboots
and replays of old epochs, and v1 devices beside v2 ones (docs/telemetry.md, "Contract
v2"). The property test over interleavings is in test_sequence_property.py."""

from __future__ import annotations

import re
from importlib import resources
from typing import cast

import redis.asyncio as aioredis

from bonusd.floor.sequence import WINDOW, parse_state
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import MAX_SEQ, FloorEvent, Reason
from bonusd.infra.keys import Keys
from tests.floor.helpers import AT_MS, NEXT, event, floor_store, v2_game

T = AT_MS - 3_600_000  # an hour before the tests' "now": gaming day NEXT


def _games(epoch: str, seqs: list[int], device: str = "EGM-1", t0: int = T) -> list[FloorEvent]:
    return [v2_game(device, epoch, seq, t0 + seq) for seq in seqs]


async def _applied_cards(r: aioredis.Redis, keys: Keys) -> set[str]:
    """The cards with play on day NEXT: one per applied v2 event (its identity)."""
    return cast(set[str], await r.smembers(keys.visits(NEXT)))


async def _stats(store: FloorStore) -> dict[str, int]:
    return await store.stats()


def test_the_window_is_the_scripts() -> None:
    lua = resources.files("bonusd").joinpath("lua", "seqstate.lua").read_text(encoding="utf-8")
    found = re.search(r"SEQ_WINDOW, SEQ_WORDS = (\d+), (\d+)", lua)
    assert found is not None
    assert (int(found[1]), int(found[2])) == (WINDOW, WINDOW // 32)


async def test_in_order_duplicates_and_reordering_inside_the_window(
    aredis: aioredis.Redis, site: str
) -> None:
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    first = await store.apply_batch(_games("b1", [1, 2, 3, 5, 4]), [])
    assert (first.applied, first.duplicates, first.gaps) == (5, 0, 0)
    # redelivered (QoS 1) beside new ones, some twice in one batch, late ones inside the window
    again = await store.apply_batch(_games("b1", [3, 9, 9, 4, 8, 6, 7, 1]), [])
    assert (again.applied, again.duplicates, again.dead_letters) == (4, 4, 0)
    assert await _stats(store) == {"applied": 9, "duplicates": 4}
    assert len(await _applied_cards(aredis, keys)) == 9
    state = await store.device_sequence("EGM-1")
    assert state is not None
    assert (state.current.epoch, state.current.high, state.current.missing) == ("b1", 9, 0)
    assert (state.epochs, state.gaps, state.previous) == (1, 0, None)
    assert state.first_ms == T + 1


async def test_a_gap_is_counted_once_it_leaves_the_window_and_never_blocks(
    aredis: aioredis.Redis, site: str
) -> None:
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    await store.apply_batch(_games("b1", [1, 2, 5]), [])  # 3 and 4 not (yet) here
    state = await store.device_sequence("EGM-1")
    assert state is not None and (state.current.missing, state.gaps) == (2, 0)
    late = await store.apply_batch(_games("b1", [3]), [])  # it may still come: not a gap
    assert (late.applied, late.gaps) == (1, 0)
    # the window moves past 4: it can no longer be told from a duplicate, so it is lost
    moved = await store.apply_batch(_games("b1", [4 + WINDOW]), [])
    assert (moved.applied, moved.gaps) == (1, 1)
    state = await store.device_sequence("EGM-1")
    assert state is not None and state.gaps == 1
    assert state.current.missing == WINDOW - 2  # of 5..132, only 5 and 132 came
    # a jump far ahead: the window's missing ones and all those never in it are lost
    jump = await store.apply_batch(_games("b1", [10_000]), [])
    assert jump.gaps == (WINDOW - 2) + (10_000 - WINDOW - (4 + WINDOW))
    assert (await _stats(store))["sequence_gaps"] == 1 + jump.gaps
    state = await store.device_sequence("EGM-1")
    assert state is not None and state.gaps == 10_000 - WINDOW - 5  # not 1, 2, 3, 5, 132


async def test_a_sequence_going_back_past_the_window_is_dead_lettered(
    aredis: aioredis.Redis, site: str
) -> None:
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    await store.apply_batch(_games("b1", list(range(1, 301))), [])
    topic = f"bonusd/{site}/egm/EGM-1/events"
    back = _games("b1", [300 - WINDOW, 301, 300 - WINDOW + 2])  # the last: a duplicate
    origins = [(topic, f'{{"seq": {e.seq}}}'.encode(), 777) for e in back]
    result = await store.apply_batch(back, [], origins)
    assert (result.applied, result.duplicates, result.dead_letters) == (1, 1, 1)
    assert result.refused == (Reason.BEHIND_WINDOW,)
    [letter] = await store.deadletters()
    assert letter["reason"] == "behind_window" and letter["topic"] == topic
    assert letter["payload"] == f'{{"seq": {300 - WINDOW}}}' and letter["arrived_ms"] == "777"
    assert "more than 128 below" in letter["detail"]
    stats = await _stats(store)
    assert stats["deadletter:behind_window"] == 1 and stats["applied"] == 301


async def test_a_reboot_starts_a_new_sequence_and_the_previous_epoch_takes_late_events(
    aredis: aioredis.Redis, site: str
) -> None:
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    await store.apply_batch(_games("b1", [1, 2, 3, 4, 6]), [])
    boot = await store.apply_batch(_games("b2", [1, 2], t0=T + 10_000), [])
    assert boot.applied == 2
    # after the reboot: b1's late 5 applies, its 3 is a duplicate, and b2 goes on
    late = await store.apply_batch([*_games("b1", [5, 3]), *_games("b2", [3], t0=T + 10_000)], [])
    assert (late.applied, late.duplicates, late.dead_letters) == (2, 1, 0)
    state = await store.device_sequence("EGM-1")
    assert state is not None and state.previous is not None
    assert (state.current.epoch, state.current.high, state.epochs) == ("b2", 3, 2)
    assert (state.previous.epoch, state.previous.high, state.previous.missing) == ("b1", 6, 0)
    assert state.first_ms == T + 10_001
    assert len(await _applied_cards(aredis, keys)) == 9


async def test_old_epochs_are_dead_lettered_and_a_forgotten_epochs_gaps_counted(
    aredis: aioredis.Redis, site: str
) -> None:
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    await store.apply_batch(_games("b1", [1, 2, 4]), [])  # 3 missing
    await store.apply_batch(_games("b2", [1], t0=T + 10_000), [])
    third = await store.apply_batch(_games("b3", [1], t0=T + 20_000), [])
    assert third.gaps == 1  # b1 is forgotten: its missing 3 can never be applied now
    # a replay of b1 (whole, or only its lost event) is refused: b1 is neither kept nor new
    replay = await store.apply_batch(_games("b1", [1, 3]), [])
    assert (replay.applied, replay.refused) == (0, (Reason.OLD_EPOCH, Reason.OLD_EPOCH))
    # an epoch never seen, older than the current one: an old boot, not a reboot
    older = await store.apply_batch(_games("b0", [1], t0=T - 10_000), [])
    assert older.refused == (Reason.OLD_EPOCH,)
    # b2, the previous epoch, still takes its late events
    assert (await store.apply_batch(_games("b2", [2], t0=T + 10_000), [])).applied == 1
    letters = await store.deadletters()
    assert [d["reason"] for d in letters] == ["old_epoch"] * 3
    assert "neither its current nor its previous" in letters[0]["detail"]
    state = await store.device_sequence("EGM-1")
    assert state is not None and state.previous is not None
    assert (state.current.epoch, state.previous.epoch, state.epochs, state.gaps) == (
        "b3",
        "b2",
        3,
        1,
    )


async def test_v1_and_v2_devices_and_events_side_by_side(aredis: aioredis.Redis, site: str) -> None:
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    v1 = [event(n, "game", f"C{n}", "EGM-9", T + n, day=NEXT, wager=100) for n in (1, 2)]
    batch = [v1[0], *_games("b1", [1, 2]), v1[1], *_games("b1", [1], device="EGM-2")]
    assert (await store.apply_batch(batch, [])).applied == 5
    # redelivered: v1 by id, v2 by sequence; one v1 id reused by a migrated device
    again = [v1[1], *_games("b1", [2, 3]), event(1, "game", "C1", "EGM-1", T + 1, day=NEXT)]
    result = await store.apply_batch(again, [])
    assert (result.applied, result.duplicates) == (1, 3)
    assert await store.device_sequence("EGM-9") is None  # a v1 device has no sequence
    assert await store.device_sequence("EGM-2") is not None
    raw = await aredis.hgetall(keys.device_sequences)
    assert sorted(raw) == ["EGM-1", "EGM-2"]
    assert parse_state(raw["EGM-1"]).current.applied == frozenset({1, 2, 3})


async def test_the_ring_wraps_and_the_record_reads_back(aredis: aioredis.Redis, site: str) -> None:
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    seqs = [s for s in range(1, 3 * WINDOW + 40) if s % 7]  # every seventh lost
    for start in range(0, len(seqs), 50):
        await store.apply_batch(_games("bé-1", seqs[start : start + 50]), [])
    state = await store.device_sequence("EGM-1")
    assert state is not None
    high = seqs[-1]
    assert state.current.high == high
    window = range(high - WINDOW + 1, high + 1)
    assert state.current.applied == frozenset(s for s in window if s % 7)
    lost = [s for s in range(1, high - WINDOW + 1) if not s % 7]
    assert state.gaps == len(lost)
    assert state.current.epoch == "bé-1"


async def test_the_largest_seq_is_kept_exactly(aredis: aioredis.Redis, site: str) -> None:
    """Sequence numbers up to 2^53 - 1 (what a JSON parser and Redis's Lua hold exactly)."""
    keys = Keys("bonusd", site)
    store = floor_store(aredis, keys)
    await store.apply_batch(_games("b1", [1]), [])
    top = _games("b1", [MAX_SEQ - 1, MAX_SEQ, MAX_SEQ - 2])
    result = await store.apply_batch(top, [])
    assert (result.applied, result.gaps) == (3, MAX_SEQ - WINDOW - 1)
    assert (await store.apply_batch(_games("b1", [MAX_SEQ - 1]), [])).duplicates == 1
    state = await store.device_sequence("EGM-1")
    assert state is not None
    assert state.current.high == MAX_SEQ
    assert state.current.applied == {MAX_SEQ - 2, MAX_SEQ - 1, MAX_SEQ}
    assert state.gaps == MAX_SEQ - WINDOW - 1
