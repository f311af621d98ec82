"""What the floor tests share: a gaming day in Johannesburg, telemetry events, a floor
store, and the per-key reference reading of the floor the `floor-row` index must match."""

from __future__ import annotations

import datetime as dt
from typing import cast

import redis.asyncio as aioredis

from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import FloorEvent
from bonusd.infra.keys import Keys
from bonusd.raps.snapshot import FloorSnapshot

DAY, NEXT = "2025-10-04", "2025-10-05"


AT = dt.datetime(2025, 10, 5, 10, 0, tzinfo=dt.UTC)  # 12:00 in Johannesburg: gaming day NEXT


AT_MS = int(AT.timestamp() * 1000)


# The floor as the indexes before `floor-row` gave it: each card's session, its place,
# the day's spend and its member row, read key by key (the reference for the index).
REFERENCE = """
local base, day = ARGV[1], ARGV[2]
local out = {}
for _, card in ipairs(redis.call('ZRANGE', base .. 'lastseen', 0, -1)) do
  local v = redis.call('HMGET', base .. 'session:' .. card, 'kind', 'area', 'device', 'seat',
    'last_play')
  local bank = redis.call('HGET', base .. 'device:' .. v[3], 'bank') or ''
  local spend = redis.call('HGET', base .. 'day:' .. day .. ':' .. card, 'spend_cents') or '0'
  local tier, excluded = '', '0'
  local m = redis.call('HGET', base .. 'member-index', card)
  if m then tier, excluded = string.match(m, '^([^|]*)|[^|]*|([^|]*)') end
  out[#out + 1] = table.concat({card, v[1], v[2], v[3], v[4], bank, v[5], spend, tier,
    excluded}, '\\t')
end
return out
"""


def event(
    n: int, kind: str, card: str, device: str, ms: int, *, day: str, wager: int = 0, seat: int = 3
) -> FloorEvent:
    is_table = device.startswith("RL")
    return FloorEvent(
        id=f"e{n}",
        type=kind,
        kind="table" if is_table else "egm",
        device=device,
        card=card,
        ts_ms=ms,
        gaming_day=day,
        area="main",
        seat=seat if is_table else 0,
        wager_cents=wager,
        win_cents=0,
        points=wager // 100,
    )


def floor_store(r: aioredis.Redis, keys: Keys) -> FloorStore:
    return FloorStore(
        r, keys, dedup_ttl_s=86_400, deadletter_maxlen=100, deadletter_payload_bytes=100
    )


async def reference(r: aioredis.Redis, keys: Keys, day: str) -> set[str]:
    script = r.register_script(REFERENCE)
    return set(cast(list[str], await script(keys=[keys.lastseen], args=[keys.base, day])))


def lines(snap: FloorSnapshot) -> set[str]:
    return set(snap.body.splitlines())


def v2_game(
    device: str, epoch: str, seq: int, ms: int, *, card: str = "", wager: int = 100
) -> FloorEvent:
    """A contract v2 game: identified by its device's `epoch` and `seq`, no id; its card
    is its own identity unless given, so each applied event shows in its card's day."""
    return FloorEvent(
        id="",
        type="game",
        kind="egm",
        device=device,
        card=card or f"{device}-{epoch}-{seq}",
        ts_ms=ms,
        gaming_day=NEXT,
        area="main",
        seat=0,
        wager_cents=wager,
        win_cents=0,
        points=1,
        epoch=epoch,
        seq=seq,
    )
