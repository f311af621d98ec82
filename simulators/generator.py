"""The deterministic event generator: a whole casino floor as a time-ordered event stream.

Every member on the floor is an actor with a next-action time in one heap. Arrivals are a
Poisson process whose rate follows the hour and the night of the week (demand.py); a
member picks a free EGM, or, for a share of visits, a free table seat; plays a visit of
`session_minutes`, maybe changes machine on the way (one slot stint per machine,
stints.py), and leaves. At the start instant the floor is already as busy as the hour
says (players card in over 2 minutes). EGMs go offline now and then (outages.py).

With a promotion (`promotion=`), members chase its thresholds and come for its draws
(chase.py), and aggregated play never straddles its instants (aggregate.py).

Granularity: `"game"` sends every game (load tests); `"play"` sends one `play` event per
interval of at most `play_minutes` instead (rehearsals). Both are the same floor: the
same visits, stints, games and card events; only what an EGM reports differs.

Invariants: a member is at one place at a time; an EGM holds one player and a table seat
one player. A stint whose `card_out` is lost keeps its EGM and its player out of play for
`lost_card_out_hold_minutes`, then both are free again with no event: the daemon must
close that session by its idle timeout. An offline EGM sends nothing.

Events speak telemetry contract v2 by default: each device numbers its events (`seq`)
within an `epoch` named after the run id, a new one after each of its outages; with
`contract="v1"` they carry ids `{run_id}-{device}-{n}` instead (identity.py). `run_id`
defaults to a digest of the floor config, the seed, the start instant, the granularity
and the promotion, so a replay gives the same identities (the daemon never applies it
twice) and a different run does not; pass a `run_id` to send a replay as new events. A longer
run's stream starts with the stream of a shorter one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from typing import Literal
from zoneinfo import ZoneInfo

from bonusd.promotions import Promotion
from simulators.aggregate import Cuts
from simulators.campaign import Campaign
from simulators.events import Payload, SimEvent
from simulators.floor import Floor
from simulators.identity import Contract
from simulators.simulation import Simulation
from simulators.timefmt import to_ms

__all__ = [
    "JOHANNESBURG",
    "Granularity",
    "Payload",
    "SimEvent",
    "default_run_id",
    "generate_events",
]

JOHANNESBURG = ZoneInfo("Africa/Johannesburg")
Granularity = Literal["game", "play"]


def default_run_id(
    floor: Floor,
    seed: int,
    start: dt.datetime,
    granularity: Granularity = "game",
    promotion: Promotion | None = None,
) -> str:
    """The id prefix of a run: 8 hex digits from the floor, seed, start and what is sent."""
    promo = promotion.id if promotion is not None else ""
    text = f"{floor.config!r}|{floor.seed}|{seed}|{to_ms(start)}|{granularity}|{promo}"
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def generate_events(
    floor: Floor,
    *,
    seed: int,
    start: dt.datetime,
    duration: dt.timedelta,
    run_id: str | None = None,
    zone: ZoneInfo | None = None,
    granularity: Granularity = "game",
    play_minutes: float = 5.0,
    promotion: Promotion | None = None,
    contract: Contract = "v2",
) -> Iterator[SimEvent]:
    """Yield the floor's events from `start` (aware) for `duration`, in timestamp order.

    `zone` (default: the promotion's, else Johannesburg) is the floor's local time;
    `contract` the telemetry contract the devices speak (v2, or v1 with event ids).
    """
    if duration < dt.timedelta(0):
        raise ValueError(f"duration must be >= 0, got {duration}")
    if granularity not in ("game", "play"):
        raise ValueError(f"granularity must be 'game' or 'play', got {granularity!r}")
    campaign = None
    if promotion is not None:
        campaign = Campaign(promotion, hours_before=floor.config.draw_night_hours)
    local = zone or (promotion.zone if promotion else JOHANNESBURG)
    cuts = Cuts(
        max_minutes=play_minutes,
        edges=campaign.edges if campaign else (),
        zone=local,
        day_start=promotion.gaming_day_start if promotion else dt.time(8, 0),
    )
    start_ms = to_ms(start)
    end_ms = start_ms + duration // dt.timedelta(milliseconds=1)
    sim = Simulation(
        floor,
        seed=seed,
        zone=local,
        play=granularity == "play",
        cuts=cuts,
        campaign=campaign,
        start_ms=start_ms,
        contract=contract,
    )
    run = run_id or default_run_id(floor, seed, start, granularity, promotion)
    sim.ids.start(run)  # refuses a run id too long for an epoch now, not mid-stream
    return sim.run(start_ms, end_ms, run)
