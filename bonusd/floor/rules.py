"""Floor rules: what one telemetry event does to the live floor.

This module is pure: it describes an event's effects on an `Effects` object, which the
store writes atomically for a whole batch. The stateful part of sessions (who is where,
moves, stale events) is applied in order by the store's script, because it must read and
write in one step; what each event type *means* is decided here.

Session moves (in event order):
    IN kind slot area ts day    card in at `slot` (device, or device#seat at a table) on
                                gaming day `day`
    P kind slot area ts day     rated play at `slot` (implies card in if not there yet); an
                                aggregated `play` event is one move at its end, `ts`
    OUT slot ts                 card out / rating end at `slot`

The gaming day of IN and P keeps each active card's `floor-row` (what a RAPS jackpot
reads) on the card's newest day, with that day's spend.
"""

from __future__ import annotations

from bonusd.floor.effects import Effects
from bonusd.floor.telemetry import FloorEvent
from bonusd.infra.keys import Relative

HOUR_MS = 3_600_000


def slot_of(event: FloorEvent) -> str:
    """Where a player sits: the EGM itself, or a table seat."""
    return f"{event.device}#{event.seat}" if event.kind == "table" else event.device


def dedup_bucket(event: FloorEvent) -> int:
    """The hour (of the event's own time) whose id set de-duplicates this event."""
    return event.ts_ms // HOUR_MS


def describe(event: FloorEvent, fx: Effects) -> None:
    """Add the floor effects of `event` to `fx`."""
    slot = slot_of(event)
    ts = str(event.ts_ms)
    fx.cards.add(event.card)
    if event.type in ("card_in", "rating_start"):
        fx.session(event.card, "IN", event.kind, slot, event.area, ts, event.gaming_day)
    if event.type in ("game", "play", "rating_start", "rating_update", "rating_end"):
        fx.session(event.card, "P", event.kind, slot, event.area, ts, event.gaming_day)
        _day_totals(event, fx)
    if event.type in ("card_out", "rating_end"):
        fx.session(event.card, "OUT", slot, ts)


def _day_totals(event: FloorEvent, fx: Effects) -> None:
    """Gaming-day totals: slots and tables points and spend are kept apart, never summed."""
    day = Relative.day(event.gaming_day, event.card)
    side = "slots" if event.kind == "egm" else "tables"
    fx.add(Relative.visits(event.gaming_day), event.card)
    fx.incr(day, f"{side}_points", event.points)
    fx.incr(day, "spend_cents", event.wager_cents)
    fx.incr(Relative.dayspend(event.gaming_day), event.card, event.wager_cents)  # RAPS: whole
    fx.incr(day, f"{side}_spend_cents", event.wager_cents)
    fx.incr(day, "win_cents", event.win_cents)
    if event.type in ("game", "play"):  # a `play` interval is `games` games at its `ts`
        fx.incr(day, "games", event.games)
    elif event.type == "rating_start":
        fx.incr(day, "ratings", 1)
    fx.put(day, "visit", "1")
