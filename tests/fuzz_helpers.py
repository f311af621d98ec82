"""Shared by the fuzz tests: valid contract-v1 messages (their refused mutations are
`tests.fuzz_mutants`), and a snapshot of a site's floor in Redis to prove that refused
input changed nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any, cast
from zoneinfo import ZoneInfo

import redis.asyncio as aioredis
from hypothesis import strategies as st

from bonusd.clocks.clock import GamingCalendar, ManualClock
from bonusd.floor.store import DeadLetter, FloorStore
from bonusd.floor.telemetry import DecodeLimits, FloorEvent, Rejection, TelemetryDecoder
from bonusd.infra.keys import Keys

SAST = dt.timezone(dt.timedelta(hours=2))
# the floor clock of the fuzzed decoders and of the `daemon` fixture (tests/conftest.py)
NOW = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)
WINDOW = dt.timedelta(days=7)  # BONUSD_DEDUP_WINDOW_S, the default
SKEW = dt.timedelta(minutes=5)  # BONUSD_MAX_FUTURE_SKEW_S, the default
MAX_PAYLOAD = 4096
# the largest payload the shipped broker passes (max_packet_size 8192 in
# deploy/mosquitto/bonusd.conf, less the topic and header): a bigger one disconnects
# the publisher instead of reaching the daemon
PASSED_BY_THE_BROKER = 7600
CAL = GamingCalendar(ZoneInfo("Africa/Johannesburg"), dt.time(8, 0))  # SAST all year

EGM_TYPES = ("card_in", "card_out", "game", "play")
TABLE_TYPES = ("rating_start", "rating_update", "rating_end")
REQUIRED = {
    "card_in": ("id", "type", "ts", "card"),
    "card_out": ("id", "type", "ts", "card"),
    "game": ("id", "type", "ts", "card", "wager_cents", "win_cents", "points"),
    "play": ("id", "type", "ts", "card", "since", "games", "wager_cents", "win_cents", "points"),
    "rating_start": ("id", "type", "ts", "card", "seat", "avg_bet_cents"),
    "rating_update": ("id", "type", "ts", "card", "seat", "avg_bet_cents", "wager_cents", "points"),
    "rating_end": ("id", "type", "ts", "card", "seat", "avg_bet_cents", "wager_cents", "points"),
}
STRINGS = ("id", "ts", "card", "since")
INTEGERS = ("wager_cents", "win_cents", "points", "games", "seat", "avg_bet_cents")
CENTS = ("wager_cents", "win_cents", "avg_bet_cents")


def kind_of(event_type: str) -> str:
    return "egm" if event_type in EGM_TYPES else "table"


def stamp(instant: dt.datetime) -> str:
    return instant.isoformat(timespec="milliseconds")


# While a test runs, Hypothesis raises the interpreter's recursion limit by about 1,000
# frames (so that its own recursive strategies have room), which hides exactly the fault
# of issue 14: msgspec raised RecursionError at ~1,000 levels of nesting in the daemon,
# never under Hypothesis. Code under test runs with the limit the daemon has.
DAEMON_RECURSION_LIMIT = 1000  # Python's default; bonusd never changes it


@contextlib.contextmanager
def daemon_recursion_limit() -> Iterator[None]:
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(DAEMON_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


# -- valid messages ---------------------------------------------------------------------

# printable text: the contract refuses control, format (bidi) and separator characters
ids = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(str.isprintable)
cards = st.from_regex(r"\A[A-Za-z0-9-]{1,12}\Z")
devices = st.sampled_from(["EGM-1", "EGM-2", "EGM-0412", "RT-07", "T1"])
# inside the accepted range: up to 7 days back, up to 5 minutes ahead of NOW
offsets_ms = st.integers(-(WINDOW // dt.timedelta(milliseconds=1)) + 1000, 4 * 60 * 1000)
zones = st.sampled_from([dt.UTC, SAST, dt.timezone(dt.timedelta(hours=-5, minutes=-30))])


@st.composite
def valid_bodies(draw: st.DrawFn, event_type: str | None = None) -> dict[str, Any]:
    """A message body the contract accepts at NOW (on a topic of its device kind)."""
    kind = event_type or draw(st.sampled_from(EGM_TYPES + TABLE_TYPES))
    ts = NOW + dt.timedelta(milliseconds=draw(offsets_ms))
    body: dict[str, Any] = {
        "id": draw(ids),
        "type": kind,
        "ts": stamp(ts.astimezone(draw(zones))),
        "card": draw(cards),
    }
    if draw(st.booleans()):
        body["area"] = draw(st.sampled_from(["main", "smoking", "prive", "vip_2"]))
    if kind in ("game", "play", "rating_update", "rating_end"):
        body["wager_cents"] = draw(st.integers(0, 10**12))
        body["points"] = draw(st.integers(0, 10**9))
    if kind in ("game", "play"):
        body["win_cents"] = draw(st.integers(0, 10**12))
    if kind == "play":
        body["games"] = draw(st.integers(1, 10_000))
        body["since"] = stamp(ts - dt.timedelta(seconds=draw(st.integers(1, 900))))
    if kind in TABLE_TYPES:
        body["seat"] = draw(st.integers(1, 99))
        body["avg_bet_cents"] = draw(st.integers(0, 10**12))
    return body


def dump(body: object) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


# -- the floor in Redis -----------------------------------------------------------------

# Not floor state: what a refused message is supposed to change (the dead letters and the
# counters), the API's tokens (issued by the tests themselves) and the leader lease (held
# by whichever daemon of the site leads, docs/leader.md).
# not the floor: dead letters, counters, tokens and their last use, the leader lease, the
# stored layout version
NOT_FLOOR = ("deadletters", "stats", "token:", "tokens", "usage", "leader", "layout", "sms:")


async def floor_snapshot(
    redis: aioredis.Redis, base: str, *, skip: tuple[str, ...] = ()
) -> dict[str, object]:
    """Every key of a site but the dead letters, counters and the leader's own bookkeeping
    (the SMS outbox's cursor, written when its task gets to it), and those starting with one
    of `skip`, with its type and value."""
    out: dict[str, object] = {}
    for key in await redis.keys(f"{_glob(base)}*"):  # one pass, where SCAN takes several
        rel = key[len(base) :]
        if rel.startswith(NOT_FLOOR + skip):
            continue
        kind = await redis.type(key)
        value: object
        if kind == "hash":
            value = await redis.hgetall(key)
        elif kind == "set":
            value = sorted(await redis.smembers(key))
        elif kind == "zset":
            value = await redis.zrange(key, 0, -1, withscores=True)
        elif kind == "list":
            value = await redis.lrange(key, 0, -1)
        elif kind == "stream":
            value = await redis.xrange(key)
        else:
            value = await redis.get(key)
        out[rel] = (kind, value)
    return out


def _glob(text: str) -> str:
    """`text` with the glob characters of SCAN MATCH escaped (the site's `{…}` is safe)."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


class Floor:
    """One site's floor store, fed batch by batch the way the ingest feeds it."""

    def __init__(self, redis: aioredis.Redis, site: str, now: dt.datetime = NOW) -> None:
        self.redis = redis
        self.site = site
        self.keys = Keys("bonusd", site)
        self.store = FloorStore(
            redis,
            self.keys,
            dedup_ttl_s=int(WINDOW.total_seconds()) + 3600,
            deadletter_maxlen=1000,
            deadletter_payload_bytes=2048,
        )
        self.clock = ManualClock(now)
        self.decoder = TelemetryDecoder(
            prefix="bonusd", site=site, calendar=CAL, limits=DecodeLimits(4096, SKEW, WINDOW)
        )

    async def batch(self, *msgs: Any) -> tuple[int, int, int]:
        """Decode and apply one batch of messages, each with a `topic_tail` (after
        `bonusd/{site}/`) and a `body` (a dict, or the payload's bytes)."""
        now = self.clock.now()
        events: list[FloorEvent] = []
        dead: list[DeadLetter] = []
        for m in msgs:
            topic = f"bonusd/{self.site}/{m.topic_tail}"
            payload = m.body if isinstance(m.body, bytes) else json.dumps(m.body).encode()
            out = self.decoder.decode(topic, payload, now)
            if isinstance(out, Rejection):
                ms = int(now.timestamp() * 1000)
                dead.append(DeadLetter(out.reason, topic, payload, out.detail, ms))
            else:
                events.append(out)
        r = await self.store.apply_batch(events, dead)
        return r.applied, r.duplicates, r.dead_letters

    async def feed(self, batches: Sequence[Sequence[Any]]) -> None:
        for b in batches:
            await self.batch(*b)

    async def placement(self) -> dict[str, tuple[str, str, int | None]]:
        """Who is active where: card -> (kind, device, seat), from the sessions, checked
        against the floor's other indexes of the same fact."""
        cards = sorted(cast(list[str], await self.redis.zrange(self.keys.lastseen, 0, -1)))
        out: dict[str, tuple[str, str, int | None]] = {}
        for card in cards:
            s = await self.store.session(card)
            assert s is not None, card
            out[card] = (s["kind"], s["device"], s["seat"])
            slot = s["device"] if s["seat"] is None else f"{s['device']}#{s['seat']}"
            assert await self.redis.get(self.keys.at(slot)) == card
        active = await self.store.active()
        assert sorted(a["card"] for a in active) == cards
        places = await self.redis.hgetall(self.keys.base + "floor-place")
        assert sorted(places) == cards
        return out

    async def day(self, card: str, day: str = "2026-10-03") -> dict[str, Any]:
        return await self.store.member_day(card, dt.date.fromisoformat(day))

    async def stats(self) -> dict[str, int]:
        return await self.store.stats()

    async def close(self) -> None:
        match = f"bonusd:{{{self.site}}}:*"
        keys = await self.redis.keys(match)
        if keys:
            await self.redis.delete(*keys)
