"""Floor rules: what one telemetry event does to the live floor, as a list of operations.

This module is pure: it turns a `FloorEvent` into the operations the store applies
atomically (one Lua script call per batch). The stateful part of sessions (who is where,
moves, stale events) lives in the script because it must read and write in one step;
what each event type *means* is decided here.

Operation tokens (keys are relative to the site's key base):
    H key field n           HINCRBY
    HS key field value      HSET
    HMAX key field value    HSET if the field is absent or smaller
    Z key member n          ZINCRBY
    S key member            SADD
    IN kind slot area ts    card in at `slot` (device, or device#seat at a table)
    P kind slot area ts     rated play at `slot` (implies card in if not there yet)
    OUT slot ts             card out / rating end at `slot`
"""

from __future__ import annotations

from bonusd.telemetry import FloorEvent

HOUR_MS = 3_600_000


def slot_of(event: FloorEvent) -> str:
    """Where a player sits: the EGM itself, or a table seat."""
    return f"{event.device}#{event.seat}" if event.kind == "table" else event.device


def dedup_bucket(event: FloorEvent) -> int:
    """The hour (of the event's own time) whose id set de-duplicates this event."""
    return event.ts_ms // HOUR_MS


def operations(event: FloorEvent) -> list[str]:
    """The operations applying `event`, in order, as flat string tokens."""
    slot = slot_of(event)
    ts = str(event.ts_ms)
    ops: list[str] = []
    if event.type in ("card_in", "rating_start"):
        ops += ["IN", event.kind, slot, event.area, ts]
    if event.type in ("game", "rating_start", "rating_update", "rating_end"):
        ops += ["P", event.kind, slot, event.area, ts]
        ops += _day_totals(event)
    if event.type in ("card_out", "rating_end"):
        ops += ["OUT", slot, ts]
    return ops


def _day_totals(event: FloorEvent) -> list[str]:
    """Gaming-day totals: slots and tables points and spend are kept apart, never summed."""
    day_key = f"day:{event.gaming_day}:{event.card}"
    side = "slots" if event.kind == "egm" else "tables"
    ops = ["S", f"visits:{event.gaming_day}", event.card]
    ops += ["S", f"mdays:{event.card}", event.gaming_day]
    if event.points:
        ops += ["H", day_key, f"{side}_points", str(event.points)]
    if event.wager_cents:
        ops += ["H", day_key, "spend_cents", str(event.wager_cents)]
        ops += ["H", day_key, f"{side}_spend_cents", str(event.wager_cents)]
    if event.win_cents:
        ops += ["H", day_key, "win_cents", str(event.win_cents)]
    if event.type == "game":
        ops += ["H", day_key, "games", "1"]
    elif event.type == "rating_start":
        ops += ["H", day_key, "ratings", "1"]
    ops += ["HS", day_key, "visit", "1"]
    return ops
