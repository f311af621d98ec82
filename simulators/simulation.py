"""The floor's state and its heap of next actions: the engine behind `generate_events`.

Every member on the floor is an actor with a next-action time in one heap (ties in push
order, so the stream is a pure function of the seed). Arrivals follow `demand.py`; a
member takes a free EGM or, for a share of visits, a table seat (`tables.py`); a slot
visit is one stint per machine (`stints.py`); EGMs go offline (`outages.py`); with a
promotion, the chase (`chase.py`) boosts who comes and how long and high they play.
See generator.py for the invariants.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import numpy as np

from simulators import profiles as pf
from simulators import stints as st
from simulators.aggregate import Cuts, play_fields
from simulators.campaign import Campaign
from simulators.chase import Chase
from simulators.config import TIERS
from simulators.demand import Demand, MemberPicker, habits
from simulators.events import Payload, SimEvent
from simulators.floor import Floor
from simulators.games import STAKES
from simulators.identity import Contract, Identities
from simulators.outages import NEVER, Outages
from simulators.places import FreePlaces
from simulators.tables import Rating, Tables
from simulators.timefmt import LocalStamper

# Heap actions.
(
    _ARRIVE, _WARM_EGM, _WARM_TABLE, _GAME, _PLAY, _STINT_END, _MOVE, _RATING, _RELEASE,
    _OUTAGE, _OUTAGE_END, _REFRESH,
) = range(12)  # fmt: skip
_MINUTE = 60_000
_HOUR = 3_600_000
_WARM_TABLE_FILL = 0.4  # share of table seats taken at the busiest hour


class _Session:
    """A member on the floor: where they sit and what they are doing."""

    __slots__ = ("card", "device", "intensity", "member", "rating", "stint", "stints", "visit_end")

    def __init__(self, member: int, card: str, intensity: float) -> None:
        self.member = member
        self.card = card
        self.intensity = intensity
        self.device = -1
        self.stints: list[int] = []
        self.stint: st.Stint | None = None
        self.rating: Rating | None = None
        self.visit_end = 0


class Simulation:
    """The floor's state and the heap of next actions; `run` yields the events.

    `play`: fold slot games into play events with `cuts`; `campaign`: the promotion;
    `contract`: how events are identified (identity.py).
    """

    def __init__(
        self,
        floor: Floor,
        *,
        seed: int,
        zone: ZoneInfo,
        play: bool,
        cuts: Cuts,
        campaign: Campaign | None,
        start_ms: int,
        contract: Contract = "v2",
    ) -> None:
        cfg = floor.config
        self.cfg = cfg
        self.rng = rng = random.Random(f"bonusd-sim/events/{seed}")
        self.gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0x51E7])))
        self.play = play
        self.cuts = cuts
        self.stamper = LocalStamper(zone)
        self.since_stamper = LocalStamper(zone)
        self.demand = Demand(cfg, zone)
        self.outages = Outages(floor, seed, start_ms)
        self.names = [d.device for d in floor.devices]
        self.areas = [d.area for d in floor.devices]
        self.kinds = [d.kind for d in floor.devices]
        self.ids = Identities(len(floor.devices), contract)
        self.busy = [False] * len(floor.devices)
        self.offline = [False] * len(floor.devices)
        self.free_egms = FreePlaces()  # device index
        for i, d in enumerate(floor.devices):
            if d.kind == "egm":
                self.free_egms.put(d.area, i)
        self.tables = Tables(floor, cuts)
        self.n_egms = len(self.free_egms)
        self.n_seats = len(self.tables)
        # Members: card, tier, where they like to sit, how keen they are.
        self.cards = [m.card for m in floor.members]
        self.tiers = [TIERS.index(m.tier) for m in floor.members]
        self.egm_pref, self.table_pref, self.table_affinity = habits(self.tiers, cfg, rng)
        weights = [pf.TIER_VISIT_WEIGHT[t] for t in self.tiers]
        self.picker = MemberPicker(weights)
        self.mean_gap = [_HOUR / (cfg.games_per_hour * pace) for pace in cfg.tier_pace]
        self.present = [False] * len(floor.members)
        self.sessions: dict[int, _Session] = {}
        low, high, mode = cfg.session_minutes
        self.mean_visit_ms = (low + high + mode) / 3 * _MINUTE
        self.capacity = self.n_egms + _WARM_TABLE_FILL * self.n_seats
        self.chase: Chase | None = None
        if campaign is not None:
            self.chase = Chase(
                campaign,
                cfg,
                tiers=self.tiers,
                weights=weights,
                table_affinity=self.table_affinity,
                visits_per_day=self.demand.visits_per_day(self.capacity, self.mean_visit_ms),
                start_ms=start_ms,
                gen=np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0xC4A5]))),
            )
        self.heap: list[tuple[int, int, int, int]] = []
        self.order = itertools.count()

    # -- the loop ---------------------------------------------------------------------

    def run(self, start_ms: int, end_ms: int, run_id: str) -> Iterator[SimEvent]:
        self.ids.start(run_id)
        self._warm_start(start_ms)
        heap, pop, sessions = self.heap, heapq.heappop, self.sessions
        while heap:
            t, _, who, action = pop(heap)
            if t >= end_ms:
                return
            if action == _GAME:
                yield self._game(t, sessions[who])
                continue
            event: SimEvent | None = None
            if action == _PLAY:
                event = self._play(t, sessions[who])
            elif action == _RATING:
                event = self._rating(t, sessions[who])
            elif action == _STINT_END:
                event = self._stint_end(t, sessions[who])
            elif action == _MOVE:
                event = self._move(t, sessions[who])
            elif action == _RELEASE:
                self._release(sessions[who])
            elif action == _ARRIVE:
                self._push(self._next_arrival(t), -1, _ARRIVE)
                event = self._arrival(t, warm=False)
            elif action == _OUTAGE:
                self._outage(who)
            elif action == _OUTAGE_END:
                self._outage_end(who)
            elif action == _REFRESH:
                self._refresh(t)
            else:
                m = self.picker.pick(self.rng, self.present)
                event = self._seat(t, m, table=action == _WARM_TABLE, warm=True)
            if event is not None:
                yield event

    def _push(self, t: int, who: int, action: int) -> None:
        heapq.heappush(self.heap, (t, next(self.order), who, action))

    def _warm_start(self, start_ms: int) -> None:
        """Seat the players the hour calls for, then start arrivals, outages, boosts."""
        occupancy = self.demand.occupancy(start_ms)
        rng = self.rng
        if self.chase is not None:
            self._refresh(start_ms)
        for _ in range(round(occupancy * self.n_egms)):
            self._push(start_ms + rng.randrange(120_000), -1, _WARM_EGM)
        for _ in range(round(occupancy * _WARM_TABLE_FILL * self.n_seats)):
            self._push(start_ms + rng.randrange(120_000), -1, _WARM_TABLE)
        if self.cards and (self.n_egms or self.n_seats):
            self._push(self._next_arrival(start_ms), -1, _ARRIVE)
        for device in range(len(self.names)):
            if self.outages.next_start(device) < NEVER:
                self._push(self.outages.next_start(device), device, _OUTAGE)

    def _next_arrival(self, t: int) -> int:
        return self.demand.next_arrival(t, self.rng, self.capacity, self.mean_visit_ms)

    def _refresh(self, t: int) -> None:
        """Recompute the chasers and draw-night boosts; again at the next hour."""
        assert self.chase is not None
        members, extra = self.chase.refresh(t)
        self.picker.set_boosts(members, extra)
        self._push(t - t % _HOUR + _HOUR, -1, _REFRESH)

    # -- arrivals and seating -----------------------------------------------------------

    def _arrival(self, t: int, *, warm: bool) -> SimEvent | None:
        m = self.picker.pick(self.rng, self.present)
        if m < 0:
            return None
        want_table = self.rng.random() < self.table_affinity[m]
        event = self._seat(t, m, table=want_table, warm=warm)
        if event is None:
            event = self._seat(t, m, table=not want_table, warm=warm)
        return event

    def _seat(self, t: int, m: int, *, table: bool, warm: bool) -> SimEvent | None:
        """Start a visit of member `m` at a table seat or an EGM, if one is free."""
        if m < 0:
            return None
        low, high, mode = self.cfg.session_minutes
        intensity = float(self.chase.intensity[m]) if self.chase is not None else 0.0
        length = self.rng.triangular(low, high, mode) * _MINUTE
        length *= 1.0 + self.cfg.chase_length_boost * intensity
        if warm:  # already playing for a while when the simulation starts
            length *= self.rng.uniform(0.3, 1.0)
        if table:
            where = self.tables.take(self.table_pref[m], self.rng)
            if where is None:
                return None
            session = self._enter(m, t + int(length), intensity)
            return self._rating_start(t, session, where)
        device = self.free_egms.take(self.egm_pref[m], self.rng)
        if device < 0:
            return None
        session = self._enter(m, t + int(length), intensity)
        session.stints = self._stints(int(length))
        return self._card_in(t, session, device)

    def _enter(self, m: int, visit_end: int, intensity: float) -> _Session:
        session = _Session(m, self.cards[m], intensity)
        session.visit_end = visit_end
        self.present[m] = True
        self.sessions[m] = session
        return session

    def _leave(self, session: _Session) -> None:
        self.present[session.member] = False
        del self.sessions[session.member]

    def _stints(self, length: int) -> list[int]:
        """Split a slot visit into one stint per machine."""
        rng = self.rng
        if rng.random() >= self.cfg.move_rate:
            return [length]
        cuts = sorted(rng.random() for _ in range(2 if rng.random() < 0.7 else 1))
        bounds = [0.0, *cuts, 1.0]
        return [max(2 * _MINUTE, int((b - a) * length)) for a, b in itertools.pairwise(bounds)]

    # -- slots ------------------------------------------------------------------------

    def _card_in(self, t: int, session: _Session, device: int) -> SimEvent:
        m = session.member
        tier = self.tiers[m]
        stint = st.plan_stint(
            rng=self.rng,
            gen=self.gen,
            t_ms=t,
            planned_ms=session.stints.pop(0),
            outage_ms=self.outages.next_start(device),
            mean_gap_ms=self.mean_gap[tier],
            stakes=STAKES[tier],
            step_up=self.cfg.chase_stake_step * session.intensity,
            lost_rate=self.cfg.lost_card_out_rate,
            cuts=self.cuts if self.play else None,
        )
        if stint.left_ms > 5 * _MINUTE:  # the machine failed: play on elsewhere
            session.stints.insert(0, stint.left_ms)
        session.device = device
        session.stint = stint
        self.busy[device] = True
        if self.chase is not None:
            self.chase.add(m, 0, stint.games.t, stint.games.points)
        if stint.times:
            self._push(stint.times[0], m, _PLAY if self.play else _GAME)
        self._push(stint.end_ms, m, _STINT_END)
        return self._event(t, device, "card_in", session.card, {})

    def _game(self, t: int, session: _Session) -> SimEvent:
        stint = session.stint
        assert stint is not None
        i = stint.index
        wager, win, points = stint.rows[i]
        stint.index = i + 1
        if i + 1 < len(stint.times):
            self._push(stint.times[i + 1], session.member, _GAME)
        extra: Payload = {"wager_cents": wager, "win_cents": win, "points": points}
        return self._event(t, session.device, "game", session.card, extra)

    def _play(self, t: int, session: _Session) -> SimEvent:
        stint = session.stint
        assert stint is not None
        i = stint.index
        interval = stint.plays[i]
        stint.index = i + 1
        if i + 1 < len(stint.times):
            self._push(stint.times[i + 1], session.member, _PLAY)
        extra = play_fields(self.since_stamper.stamp(interval.since_ms), interval)
        return self._event(t, session.device, "play", session.card, extra)

    def _stint_end(self, t: int, session: _Session) -> SimEvent | None:
        stint, device = session.stint, session.device
        assert stint is not None
        rng = self.rng
        if stint.ending == st.LOST:
            session.stints.clear()
            hold = int(self.cfg.lost_card_out_hold_minutes * _MINUTE)
            self._push(t + hold, session.member, _RELEASE)
            return None
        if stint.ending == st.OFFLINE:
            self.busy[device] = False  # the outage end puts it back
            if session.stints:
                self._push(t + rng.randrange(60_000, 300_000), session.member, _MOVE)
            else:
                self._leave(session)
            return None
        self._vacate(device)
        if session.stints:
            self._push(t + rng.randrange(30_000, 240_000), session.member, _MOVE)
        else:
            self._leave(session)
        return self._event(t, device, "card_out", session.card, {})

    def _move(self, t: int, session: _Session) -> SimEvent | None:
        device = self.free_egms.take(self.egm_pref[session.member], self.rng)
        if device < 0:  # the floor is full: the player goes home
            self._leave(session)
            return None
        return self._card_in(t, session, device)

    def _release(self, session: _Session) -> None:
        """End of a lost card-out's hold: the device and the player are free again."""
        self._vacate(session.device)
        self._leave(session)

    def _vacate(self, device: int) -> None:
        self.busy[device] = False
        if not self.offline[device]:
            self.free_egms.put(self.areas[device], device)

    def _outage(self, device: int) -> None:
        _, end = self.outages.take(device)
        self.offline[device] = True
        if not self.busy[device]:
            self.free_egms.discard(self.areas[device], device)
        self._push(end, device, _OUTAGE_END)

    def _outage_end(self, device: int) -> None:
        self.ids.reboot(device)  # an EGM back from an outage has booted again
        self.offline[device] = False
        if not self.busy[device]:
            self.free_egms.put(self.areas[device], device)
        self._push(self.outages.next_start(device), device, _OUTAGE)

    # -- tables -----------------------------------------------------------------------

    def _rating_start(self, t: int, session: _Session, where: tuple[int, int]) -> SimEvent:
        step_up = self.cfg.chase_stake_step * session.intensity
        rating = self.tables.start(self.rng, t, where, self.tiers[session.member], step_up)
        session.rating = rating
        session.device = rating.table
        self._push(self.tables.next_at(self.rng, t, session.visit_end), session.member, _RATING)
        extra: Payload = {"seat": rating.seat, "avg_bet_cents": rating.avg_bet}
        return self._event(t, rating.table, "rating_start", session.card, extra)

    def _rating(self, t: int, session: _Session) -> SimEvent:
        """A rating update (or the end): play since the previous event of this rating."""
        rating = session.rating
        assert rating is not None
        extra = self.tables.settle(self.rng, t, rating)
        points = int(extra["points"])
        if self.chase is not None and points:
            self.chase.add(session.member, 1, np.asarray([t]), np.asarray([points]))
        if t >= session.visit_end:
            self.tables.release(rating)
            self._leave(session)
            kind = "rating_end"
        else:
            self._push(self.tables.next_at(self.rng, t, session.visit_end), session.member, _RATING)
            kind = "rating_update"
        return self._event(t, rating.table, kind, session.card, extra)

    # -- output -----------------------------------------------------------------------

    def _event(self, t: int, device: int, kind: str, card: str, extra: Payload) -> SimEvent:
        name = self.names[device]
        payload: Payload = {
            **self.ids.next(device, name),
            "type": kind,
            "ts": self.stamper.stamp(t),
            "card": card,
            "area": self.areas[device],
        }
        payload.update(extra)
        return SimEvent(t, self.kinds[device], name, payload)
