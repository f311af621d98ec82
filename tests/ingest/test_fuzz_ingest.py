"""Fuzzing the whole ingest path of a running daemon: mutated messages published over
MQTT go through `bonusd/ingest/consumer.py`, the decoder, `bonusd/floor/store.py` and `lua/apply.lua`.

- The daemon never stops: every message is committed and acknowledged.
- Every refused message is dead-lettered with its documented reason, its topic, its
  payload (up to the kept bound) and a detail, and counted in `/metrics`; the mutations
  include nesting past the depth bound and unprintable ids, cards and areas (issue 14).
- Refused messages change nothing on the floor: every key of the site but the dead
  letters and counters is the same before and after (snapshots of Redis), and with good
  and bad messages mixed in the same batches, the floor is exactly that of a reference
  store fed the good messages alone.

The default suite publishes a few hundred messages; `make test-slow` runs the `_deep`
twins with thousands (docs/robustness.md).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bonusd.floor.telemetry import Reason
from bonusd.infra.keys import Keys
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import Daemon
from tests.fuzz_helpers import (
    NOW,
    Floor,
    daemon_recursion_limit,
    devices,
    dump,
    floor_snapshot,
    kind_of,
    stamp,
    valid_bodies,
)
from tests.fuzz_mutants import Mutant, mutants
from tests.telemetry_helpers import Publisher

KEPT_PAYLOAD = 2048  # BONUSD_DEADLETTER_PAYLOAD_BYTES, the default
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@dataclass
class Rig:
    """A running daemon, a publisher to its site, and Redis; `sent` counts what its
    examples (which share the daemon) have published so far."""

    daemon: Daemon
    pub: Publisher
    site: str
    redis: aioredis.Redis
    sent: int = 0

    @property
    def base(self) -> str:
        return Keys("bonusd", self.site).base

    async def publish(self, messages: list[tuple[str, bytes]]) -> None:
        """Publish (topic tail, payload) messages and wait until all are committed."""
        for tail, payload in messages:
            self.pub.send(f"bonusd/{self.site}/{tail}", payload)
        self.sent += len(messages)
        # the daemon decodes in this process: under the recursion limit it runs with,
        # not the one Hypothesis raises while a test runs (tests/fuzz_helpers.py)
        with daemon_recursion_limit():
            await self.daemon.wait_committed(self.sent)


@pytest.fixture
def rig(daemon: Daemon, broker: LocalMosquitto, site: str, aredis: aioredis.Redis) -> Iterator[Rig]:
    pub = Publisher(broker, site)
    yield Rig(daemon, pub, site, aredis)
    pub.close()


@pytest.fixture
async def reference(aredis: aioredis.Redis) -> AsyncIterator[Floor]:
    f = Floor(aredis, f"ref{uuid.uuid4().hex[:10]}")
    yield f
    await f.close()


async def _letters(daemon: Daemon, n: int) -> list[dict[str, str]]:
    """The newest `n` dead letters, oldest first."""
    return list(reversed(await daemon.get(f"/deadletters?count={n}"))) if n else []


def _counted(metrics: str) -> dict[str, float]:
    return {
        m[1]: float(m[2])
        for m in re.finditer(r'bonusd_dead_letters_total\{reason="(\w+)"\} ([0-9.e+]+)', metrics)
    }


async def _check_dead_letters(rig: Rig, bad: list[Mutant]) -> None:
    letters = await _letters(rig.daemon, len(bad))
    assert len(letters) == len(bad)
    for letter, m in zip(letters, bad, strict=True):
        assert letter["reason"] == m.reason.value, (m.what, letter)
        assert letter["topic"] == f"bonusd/{rig.site}/{m.topic_tail}"
        assert letter["payload"] == m.payload[:KEPT_PAYLOAD].decode("utf-8", "backslashreplace")
        assert letter["detail"].strip()
        assert int(letter["arrived_ms"]) > 0


# -- refused messages alone: the floor does not move ------------------------------------


async def _refused_change_nothing(rig: Rig, bad: list[Mutant]) -> None:
    before = await floor_snapshot(rig.redis, rig.base)
    counted = _counted((await rig.daemon.http.get("/metrics")).text)
    await rig.publish([(m.topic_tail, m.payload) for m in bad])
    assert await floor_snapshot(rig.redis, rig.base) == before
    await _check_dead_letters(rig, bad)
    now = _counted((await rig.daemon.http.get("/metrics")).text)
    for reason in Reason:
        added = sum(1 for m in bad if m.reason is reason)
        assert now.get(reason.value, 0) - counted.get(reason.value, 0) == added
    assert (await rig.daemon.get("/health"))["status"] == "ok"


@pytest.fixture
async def seeded(rig: Rig) -> Rig:
    """A floor with players on it, so refused messages have state they could disturb."""
    seeds: list[tuple[str, dict[str, object]]] = [
        (f"egm/EGM-{n + 1}/events", {"id": f"seed-{n}", "type": "card_in", "card": card})
        for n, card in enumerate(("7001", "7002", "7003"))
    ]
    table = {"id": "seed-t", "type": "rating_start", "card": "7004", "seat": 2}
    seeds.append(("table/T1/events", table | {"avg_bet_cents": 500}))
    await rig.publish([(tail, dump(body | {"ts": stamp(NOW)})) for tail, body in seeds])
    assert len(await rig.daemon.get("/floor/active")) == 4
    return rig


@settings(max_examples=60, suppress_health_check=HEALTH)
@given(bad=st.lists(mutants(), min_size=1, max_size=8))
async def test_refused_messages_are_dead_lettered_and_change_nothing(
    seeded: Rig, bad: list[Mutant]
) -> None:
    await _refused_change_nothing(seeded, bad)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@settings(max_examples=1000, suppress_health_check=HEALTH)
@given(bad=st.lists(mutants(), min_size=1, max_size=8))
async def test_refused_messages_are_dead_lettered_and_change_nothing_deep(
    seeded: Rig, bad: list[Mutant]
) -> None:
    await _refused_change_nothing(seeded, bad)


# -- good and bad mixed: the floor is that of the good ones alone -----------------------


@dataclass(frozen=True)
class Good:
    topic_tail: str
    body: dict[str, Any]


@st.composite
def mixes(draw: st.DrawFn) -> list[Mutant | Good]:
    out: list[Mutant | Good] = []
    for _ in range(draw(st.integers(1, 10))):
        if draw(st.booleans()):
            out.append(draw(mutants()))
        else:
            body = draw(valid_bodies())
            out.append(Good(f"{kind_of(body['type'])}/{draw(devices)}/events", body))
    return out


async def _only_good_ones_count(rig: Rig, reference: Floor, mix: list[Mutant | Good]) -> None:
    await rig.publish(
        [(m.topic_tail, m.payload if isinstance(m, Mutant) else dump(m.body)) for m in mix]
    )
    await reference.batch(*[m for m in mix if isinstance(m, Good)])
    await _check_dead_letters(rig, [m for m in mix if isinstance(m, Mutant)])
    # the daemon's SMS notifier and its rules' fingerprint have keys of their own; the
    # reference is a bare store
    ours = await floor_snapshot(rig.redis, rig.base, skip=("sms:", "rules"))
    assert ours == await floor_snapshot(rig.redis, reference.keys.base)


@settings(max_examples=60, suppress_health_check=HEALTH)
@given(mix=mixes())
async def test_with_good_and_bad_mixed_only_the_good_change_the_floor(
    rig: Rig, reference: Floor, mix: list[Mutant | Good]
) -> None:
    await _only_good_ones_count(rig, reference, mix)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@settings(max_examples=1000, suppress_health_check=HEALTH)
@given(mix=mixes())
async def test_with_good_and_bad_mixed_only_the_good_change_the_floor_deep(
    rig: Rig, reference: Floor, mix: list[Mutant | Good]
) -> None:
    await _only_good_ones_count(rig, reference, mix)
