"""The live floor in Redis: atomic application of event batches, and the floor's queries.

One Lua script call applies a whole batch (events and dead letters) atomically and
exactly once: a contract v1 event by its id, a v2 event by its device's epoch and
sequence number (lua/seqstate.lua); everything else here is a read or an import.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

import msgspec
from redis.asyncio import Redis

from bonusd.floor.accounting import PromotionBook
from bonusd.floor.effects import Effects
from bonusd.floor.rules import dedup_bucket, describe
from bonusd.floor.sequence import WINDOW, DeviceSequence, parse_state
from bonusd.floor.telemetry import FloorEvent, Reason
from bonusd.infra.keys import Keys
from bonusd.registry.records import Device, Member

DAY_FIELDS = (
    "slots_points",
    "tables_points",
    "spend_cents",
    "slots_spend_cents",
    "tables_spend_cents",
    "win_cents",
    "games",
    "ratings",
)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    reason: Reason
    topic: str
    payload: bytes
    detail: str
    arrived_ms: int


@dataclass(frozen=True, slots=True)
class BatchResult:
    applied: int
    duplicates: int
    dead_letters: int  # with those of `refused`
    gaps: int = 0  # v2 sequence numbers found lost for good (docs/telemetry.md)
    refused: tuple[Reason, ...] = ()  # v2 events the sequence check dead-lettered

    def __add__(self, other: BatchResult) -> BatchResult:
        return BatchResult(
            self.applied + other.applied,
            self.duplicates + other.duplicates,
            self.dead_letters + other.dead_letters,
            self.gaps + other.gaps,
            self.refused + other.refused,
        )


Origin = tuple[str, bytes, int]  # an event's topic, payload and arrival (ms): its dead letter

# the script's verdicts on a v2 event it did not apply (lua/apply.lua); "dup" is dropped
_REFUSALS = {
    "behind": (
        Reason.BEHIND_WINDOW,
        "seq {seq} of epoch {epoch!r} is more than {window} below the highest seq applied "
        "for device {device}: it cannot be told from a duplicate, so it is not applied",
    ),
    "old_epoch": (
        Reason.OLD_EPOCH,
        "epoch {epoch!r} of device {device} is neither its current nor its previous one, "
        "and older than the current one: a replay of an old boot, not applied",
    ),
}


IMPORT_BATCH = 5_000  # members per atomic write of an import (one MULTI/EXEC each)

_json = msgspec.json.Encoder()


def _script(name: str) -> str:
    return resources.files("bonusd").joinpath("lua", name).read_text(encoding="utf-8")


def _logged(name: str) -> str:
    """A script that writes floor-row, with the change log's function before it."""
    return _script("rowlog.lua") + _script(name)


def apply_script() -> str:
    """The text of the batch script: lua/apply.lua with the v2 sequence check and the
    change log's functions before it (also what loadtests/bench_dedup.py drives)."""
    return _script("seqstate.lua") + _logged("apply.lua")


class FloorStore:
    """Reads and writes one site's floor. `redis` must decode responses to `str`."""

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        *,
        dedup_ttl_s: int,
        deadletter_maxlen: int,
        deadletter_payload_bytes: int,
        book: PromotionBook | None = None,
    ) -> None:
        self.redis = redis
        self.book = book or PromotionBook(())
        self.keys = keys
        self._dedup_ttl = str(dedup_ttl_s)
        self._dl_maxlen = str(deadletter_maxlen)
        self._dl_bytes = deadletter_payload_bytes
        # the scripts that write floor-row keep its change log (lua/rowlog.lua)
        self._apply = redis.register_script(apply_script())
        self._sweep = redis.register_script(_logged("sweep.lua"))
        self._member_rows = _logged("member_rows.lua")
        self._reindex = redis.register_script(_logged("reindex.lua"))

    # -- writes ---------------------------------------------------------------------------

    async def apply_batch(
        self,
        events: list[FloorEvent],
        dead: list[DeadLetter],
        origins: Sequence[Origin] | None = None,
    ) -> BatchResult:
        """Apply `events` and record `dead` in one atomic step; each event applies once.
        `origins` (one per event) are the messages the events came in, kept in the dead
        letter of a v2 event the sequence check refuses (without them, its fields)."""
        letters = [self._letter(letter) for letter in dead]
        fresh = _distinct(events)
        refused: list[Reason] = []
        while True:
            dropped = len(events) - len(fresh) - len(refused)
            reply = await self._call([events[n] for n in fresh], letters, dropped)
            if reply[0] == "ok":
                break
            # some were applied before (redelivery) or are refused: drop them, apply the rest
            pairs = zip(reply[1::2], reply[2::2], strict=True)
            verdicts = {int(place) - 1: str(verdict) for place, verdict in pairs}
            for at, verdict in verdicts.items():
                if verdict in _REFUSALS:
                    event = events[fresh[at]]
                    origin = origins[fresh[at]] if origins is not None else _origin(event)
                    reason, detail = _REFUSALS[verdict]
                    refused.append(reason)
                    text = detail.format(window=WINDOW, **_fields(event))
                    letters.append(self._letter(DeadLetter(reason, *origin[:2], text, origin[2])))
            fresh = [n for at, n in enumerate(fresh) if at not in verdicts]
        gaps = int(reply[2])
        return BatchResult(len(fresh), dropped, len(letters), gaps, tuple(refused))

    def _letter(self, letter: DeadLetter) -> list[str]:
        payload = letter.payload[: self._dl_bytes].decode("utf-8", "backslashreplace")
        return [
            letter.reason.value,
            letter.topic,
            payload,
            letter.detail[:500],
            str(letter.arrived_ms),
        ]

    async def _call(self, fresh: list[FloorEvent], letters: list[list[str]], dropped: int) -> Any:
        """One call of lua/apply.lua for events all taken to be new."""
        fx = Effects()
        marks: list[list[object]] = []  # each event's identity, for the script's check
        for event in fresh:
            describe(event, fx)
            self.book.describe(event, fx)
            if event.epoch:
                marks.append([event.device, event.epoch, event.seq, event.ts_ms])
            else:
                marks.append([event.id, str(dedup_bucket(event))])
        args: list[str | bytes] = [
            self.keys.base,
            self._dedup_ttl,
            self._dl_maxlen,
            _json.encode(marks),
            _json.encode(fx.payload()),
            _json.encode(letters),
            str(dropped),
        ]
        return await self._apply(keys=[self.keys.stats], args=args)

    async def sweep_idle(
        self, now: dt.datetime, idle_timeout_s: int, limit: int = 500
    ) -> list[str]:
        """End sessions with no event since `idle_timeout_s` before `now` (lost card-outs)."""
        cutoff = int(now.timestamp() * 1000) - idle_timeout_s * 1000
        ended: list[str] = await self._sweep(
            keys=[self.keys.lastseen], args=[self.keys.base, str(cutoff), str(limit)]
        )
        return ended

    async def import_members(
        self,
        members: list[Member],
        *,
        batch_size: int = IMPORT_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Create or update members in batches of `batch_size`, each one transaction (a
        member is written whole or not at all; a failed import can simply be run again),
        with the tier and exclusion of those on the floor refreshed in their `floor-row`.
        `progress` is told how many members each batch wrote. Returns how many in all."""
        if batch_size < 1:
            raise ValueError("the import batch size is at least 1")
        for start in range(0, len(members), batch_size):
            part = members[start : start + batch_size]
            async with self.redis.pipeline(transaction=True) as pipe:
                for member in part:
                    key = self.keys.member(member.card)
                    pipe.delete(key)
                    pipe.hset(key, mapping=cast(Mapping[Any, Any], member.to_redis()))
                    pipe.hset(self.keys.member_index, member.card, member.to_index())
                    pipe.sadd(self.keys.members, member.card)
                    pipe.srem(self.keys.unregistered, member.card)
                rows = [self.keys.floor_row, self.keys.member_index]
                # EVAL, not the Script's EVALSHA: Redis Cluster pipelines refuse EVALSHA
                cards = [m.card for m in part]
                pipe.eval(self._member_rows, len(rows), *rows, self.keys.base, *cards)
                await pipe.execute()
            if progress is not None:
                progress(len(part))
        return len(members)

    async def reindex_floor(
        self,
        day: dt.date,
        *,
        batch_size: int = 1_000,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Rebuild `floor-place`, `floor-row` and the day spend RAPS reads from the session
        hashes of the cards on the floor (data written before those indexes existed), and
        drop the entries of cards no longer on it; `day` is the gaming day of a session that
        does not record one (today's). Idempotent, and safe beside a running ingest: each
        batch of cards is one atomic script call that reads the sessions as they are then.
        Returns how many cards are on the floor."""
        cards = set(cast(list[str], await self.redis.zrange(self.keys.lastseen, 0, -1)))
        cards |= set(cast(list[str], await self.redis.hkeys(self.keys.floor_row)))
        cards |= set(cast(list[str], await self.redis.hkeys(self.keys.floor_place)))
        ordered, active = sorted(cards), 0
        for start in range(0, len(ordered), batch_size):
            part = ordered[start : start + batch_size]
            args = [self.keys.base, day.isoformat(), *part]
            active += int(await self._reindex(keys=[self.keys.floor_row], args=args))
            if progress is not None:
                progress(len(part))
        await self.redis.delete(self.keys.retired_floor_lastplay)
        return active

    async def import_devices(self, devices: list[Device]) -> int:
        async with self.redis.pipeline(transaction=True) as pipe:
            for device in devices:
                pipe.hset(
                    self.keys.device(device.device),
                    mapping=cast(Mapping[Any, Any], device.to_redis()),
                )
                pipe.sadd(self.keys.devices, device.device)
            await pipe.execute()
        return len(devices)

    # -- reads ----------------------------------------------------------------------------

    async def _hash(self, key: str) -> dict[str, str]:
        return cast(dict[str, str], await self.redis.hgetall(key))

    async def member(self, card: str) -> Member | None:
        raw = await self._hash(self.keys.member(card))
        return Member.from_redis(raw) if raw else None

    async def is_unregistered(self, card: str) -> bool:
        return bool(await self.redis.sismember(self.keys.unregistered, card))

    async def session(self, card: str) -> dict[str, Any] | None:
        raw = await self._hash(self.keys.session(card))
        return _session(card, raw) if raw else None

    async def active(
        self, *, area: str | None = None, kind: str | None = None
    ) -> list[dict[str, Any]]:
        """Who is active now, optionally in one area and of one device kind."""
        index = cast(set[str], await self.redis.smembers(self.keys.active_index))
        wanted = []
        for rel in sorted(index):
            _, set_kind, set_area = rel.split(":", 2)
            if (kind is None or set_kind == kind) and (area is None or set_area == area):
                wanted.append(self.keys.absolute(rel))
        cards: list[str] = []
        for key in wanted:
            cards += cast(list[str], await self.redis.zrange(key, 0, -1))
        if not cards:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for card in cards:
                pipe.hgetall(self.keys.session(card))
            raws: list[dict[str, str]] = await pipe.execute()
        return [_session(c, r) for c, r in zip(cards, raws, strict=True) if r]

    async def member_day(self, card: str, day: dt.date) -> dict[str, Any]:
        raw = await self._hash(self.keys.day(day.isoformat(), card))
        out: dict[str, Any] = {f: int(raw.get(f, 0)) for f in DAY_FIELDS}
        out["visit"] = raw.get("visit") == "1"
        return out

    async def deadletters(self, count: int = 100) -> list[dict[str, str]]:
        """The newest dead letters first."""
        rows = cast(
            list[tuple[str, dict[str, str]]],
            await self.redis.xrevrange(self.keys.deadletters, count=count),
        )
        return [{"id": rid, **fields} for rid, fields in rows]

    async def device_sequence(self, device: str) -> DeviceSequence | None:
        """A contract v2 device's sequence state; None if it never sent a v2 event."""
        raw = await self.redis.hget(self.keys.device_sequences, device)
        return parse_state(str(raw)) if raw is not None else None

    async def stats(self) -> dict[str, int]:
        raw = await self._hash(self.keys.stats)
        return {k: int(v) for k, v in raw.items() if v.lstrip("-").isdigit()}


def _distinct(events: list[FloorEvent]) -> list[int]:
    """The positions of the first of each event in `events`: the same event twice in one
    batch (v1: its id; v2: its device, epoch and seq) is a duplicate the second time."""
    seen: set[object] = set()
    out = []
    for place, event in enumerate(events):
        key = (event.device, event.epoch, event.seq) if event.epoch else event.id
        if key not in seen:
            seen.add(key)
            out.append(place)
    return out


def _fields(event: FloorEvent) -> dict[str, object]:
    return {"device": event.device, "epoch": event.epoch, "seq": event.seq}


def _origin(event: FloorEvent) -> Origin:
    """The dead letter's topic and payload of an event given without its message."""
    body = {**_fields(event), "type": event.type, "ts_ms": event.ts_ms, "card": event.card}
    return "", _json.encode(body), event.ts_ms


def _session(card: str, raw: dict[str, str]) -> dict[str, Any]:
    def when(field: str) -> str | None:
        ms = int(raw.get(field, "0") or 0)
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat() if ms else None

    return {
        "card": card,
        "kind": raw.get("kind", ""),
        "device": raw.get("device", ""),
        "seat": int(raw["seat"]) if raw.get("seat") else None,
        "area": raw.get("area", ""),
        "since": when("since"),
        "last_play": when("last_play"),
        "last_seen": when("last_seen"),
    }
