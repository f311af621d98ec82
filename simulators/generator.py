"""The deterministic event generator: a whole casino floor as a time-ordered event stream.

Every carded-in player is an actor with a next-action time in one heap; a Poisson arrival
process (its rate follows the hour of day, see `profiles.HOURLY_OCCUPANCY`) brings members
in. A member picks a free EGM, or, for a share of sessions, a free table seat; plays for a
session of `session_minutes`, maybe changes machine on the way, and leaves. At the start
instant the floor is already as busy as the hour says (players card in over 2 minutes).

Invariants: a member is at one place at a time; an EGM holds one player and a table seat
one player. A slot stint whose `card_out` is lost (`lost_card_out_rate`) keeps its device
and its player out of play for `lost_card_out_hold_minutes`, then both are free again with
no event: the daemon must close that session by its idle timeout.

Event ids are `{run_id}-{device}-{seq}` with a per-device counter; `run_id` defaults to a
digest of the floor config, the seed and the start instant, so a replay gives the same ids
(the daemon de-duplicates it) and a different run does not; pass a `run_id` to send a
replay as new events. A longer run's stream starts with the stream of a shorter one.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import heapq
import itertools
import random
from collections.abc import Iterator
from typing import NamedTuple
from zoneinfo import ZoneInfo

from simulators import profiles as pf
from simulators.floor import TIERS, Floor
from simulators.places import FreePlaces
from simulators.timefmt import LocalStamper, to_ms

JOHANNESBURG = ZoneInfo("Africa/Johannesburg")
Payload = dict[str, str | int]

# Heap actions.
_ARRIVE, _WARM_EGM, _WARM_TABLE, _GAME, _CARD_OUT, _MOVE, _RATING, _RELEASE = range(8)
_MINUTE = 60_000
_HOUR = 3_600_000
_WARM_TABLE_FILL = 0.4  # share of table seats taken at the busiest hour


class SimEvent(NamedTuple):
    """One telemetry event: when (epoch ms), from which device, and its JSON object."""

    t_ms: int
    kind: str
    """`egm` or `table`: the topic segment."""
    device: str
    payload: Payload


def default_run_id(floor: Floor, seed: int, start: dt.datetime) -> str:
    """The id prefix of a run: 8 hex digits from the floor, the seed and the start instant."""
    text = f"{floor.config!r}|{floor.seed}|{seed}|{to_ms(start)}".encode()
    return hashlib.blake2b(text, digest_size=4).hexdigest()


def generate_events(
    floor: Floor,
    *,
    seed: int,
    start: dt.datetime,
    duration: dt.timedelta,
    run_id: str | None = None,
    zone: ZoneInfo = JOHANNESBURG,
) -> Iterator[SimEvent]:
    """Yield the floor's events from `start` (aware) for `duration`, in timestamp order."""
    if duration < dt.timedelta(0):
        raise ValueError(f"duration must be >= 0, got {duration}")
    sim = _Simulation(floor, random.Random(f"bonusd-sim/events/{seed}"), zone)
    start_ms = to_ms(start)
    end_ms = start_ms + duration // dt.timedelta(milliseconds=1)
    return sim.run(start_ms, end_ms, run_id or default_run_id(floor, seed, start))


class _Session:
    """A member on the floor: where they sit and what they are doing."""

    __slots__ = (
        "avg_bet",
        "card",
        "device",
        "hands_per_ms",
        "last_ms",
        "member",
        "seat",
        "stake",
        "stint_end",
        "stints",
        "visit_end",
    )

    def __init__(self, member: int, card: str) -> None:
        self.member = member
        self.card = card
        self.device = -1
        self.seat = 0
        self.stake = 0
        self.stints: list[int] = []
        self.stint_end = 0
        self.visit_end = 0
        self.last_ms = 0
        self.avg_bet = 0
        self.hands_per_ms = 0.0


class _Simulation:
    """The floor's state and the heap of next actions; `run` yields the events."""

    def __init__(self, floor: Floor, rng: random.Random, zone: ZoneInfo) -> None:
        cfg = floor.config
        self.cfg = cfg
        self.rng = rng
        self.stamper = LocalStamper(zone)
        self.names = [d.device for d in floor.devices]
        self.areas = [d.area for d in floor.devices]
        self.kinds = [d.kind for d in floor.devices]
        self.seq = [0] * len(floor.devices)
        hands = dict(pf.HANDS_PER_HOUR)
        self.hands_per_ms = [hands.get(d.game, 0.0) / _HOUR for d in floor.devices]
        # Free EGMs (device index) and free table seats (device index * 8 + seat).
        self.free_egms = FreePlaces()
        self.free_seats = FreePlaces()
        for i, d in enumerate(floor.devices):
            if d.kind == "egm":
                self.free_egms.put(d.area, i)
            else:
                for seat in range(1, cfg.seats_per_table + 1):
                    self.free_seats.put(d.area, i * 8 + seat)
        self.n_egms = len(self.free_egms)
        self.n_seats = len(self.free_seats)
        # Members: card, tier, where they like to sit, how keen they are.
        self.cards = [m.card for m in floor.members]
        self.tiers = [TIERS.index(m.tier) for m in floor.members]
        self.egm_pref: list[str] = []
        self.table_pref: list[str] = []
        self.table_affinity: list[float] = []
        for tier in self.tiers:
            prive = rng.random() < pf.TIER_PRIVE_PREFERENCE[tier]
            smoker = rng.random() < pf.SMOKER_RATE
            self.egm_pref.append("prive" if prive else "smoking" if smoker else "main")
            self.table_pref.append("prive" if prive else "main")
            self.table_affinity.append(cfg.table_share * pf.TIER_TABLE_FACTOR[tier])
        self.visit_cum = list(itertools.accumulate(pf.TIER_VISIT_WEIGHT[t] for t in self.tiers))
        self.present = [False] * len(floor.members)
        self.sessions: dict[int, _Session] = {}
        low, high, mode = cfg.session_minutes
        self.mean_visit_ms = (low + high + mode) / 3 * _MINUTE
        self.mean_gap_ms = _HOUR / cfg.games_per_hour
        self.heap: list[tuple[int, int, int, int]] = []
        self.order = itertools.count()
        self.run_id = ""

    # -- the loop ---------------------------------------------------------------------

    def run(self, start_ms: int, end_ms: int, run_id: str) -> Iterator[SimEvent]:
        self.run_id = run_id
        self._warm_start(start_ms)
        heap, pop = self.heap, heapq.heappop
        while heap:
            t, _, who, action = pop(heap)
            if t >= end_ms:
                return
            if action == _GAME:
                yield self._game(t, self.sessions[who])
                continue
            event: SimEvent | None
            if action == _RATING:
                event = self._rating(t, self.sessions[who])
            elif action == _CARD_OUT:
                event = self._card_out(t, self.sessions[who])
            elif action == _MOVE:
                event = self._move(t, self.sessions[who])
            elif action == _RELEASE:
                self._release(self.sessions[who])
                continue
            elif action == _ARRIVE:
                self._push(t + self._next_arrival_gap(t), -1, _ARRIVE)
                event = self._arrival(t, warm=False)
            else:
                event = self._seat(t, self._pick_member(), table=action == _WARM_TABLE, warm=True)
            if event is not None:
                yield event

    def _push(self, t: int, who: int, action: int) -> None:
        heapq.heappush(self.heap, (t, next(self.order), who, action))

    def _warm_start(self, start_ms: int) -> None:
        """Seat the players the hour calls for, then start the arrival process."""
        occupancy = self.cfg.peak_occupancy * pf.HOURLY_OCCUPANCY[self.stamper.hour(start_ms)]
        rng = self.rng
        for _ in range(round(occupancy * self.n_egms)):
            self._push(start_ms + rng.randrange(120_000), -1, _WARM_EGM)
        for _ in range(round(occupancy * _WARM_TABLE_FILL * self.n_seats)):
            self._push(start_ms + rng.randrange(120_000), -1, _WARM_TABLE)
        if self.cards and (self.n_egms or self.n_seats):
            self._push(start_ms + self._next_arrival_gap(start_ms), -1, _ARRIVE)

    def _next_arrival_gap(self, t: int) -> int:
        """Poisson arrivals sized so that occupancy follows the hourly profile."""
        capacity = self.n_egms + _WARM_TABLE_FILL * self.n_seats
        occupancy = self.cfg.peak_occupancy * pf.HOURLY_OCCUPANCY[self.stamper.hour(t)]
        rate = occupancy * capacity / self.mean_visit_ms
        if rate <= 0:
            return _HOUR
        return 1 + int(self.rng.expovariate(rate))

    # -- arrivals and seating -----------------------------------------------------------

    def _pick_member(self) -> int:
        """A member not on the floor, keener tiers more often; -1 if none found quickly."""
        cum, present, rng = self.visit_cum, self.present, self.rng
        if not cum:
            return -1
        total = cum[-1]
        for _ in range(32):
            m = min(bisect.bisect_right(cum, rng.random() * total), len(cum) - 1)
            if not present[m]:
                return m
        return -1

    def _arrival(self, t: int, *, warm: bool) -> SimEvent | None:
        m = self._pick_member()
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
        length = self.rng.triangular(low, high, mode) * _MINUTE
        if warm:  # already playing for a while when the simulation starts
            length *= self.rng.uniform(0.3, 1.0)
        if table:
            code = self.free_seats.take(self.table_pref[m], self.rng)
            if code < 0:
                return None
            session = self._enter(m, t + int(length))
            return self._rating_start(t, session, code >> 3, code & 7)
        device = self.free_egms.take(self.egm_pref[m], self.rng)
        if device < 0:
            return None
        session = self._enter(m, t + int(length))
        session.stints = self._stints(int(length))
        return self._card_in(t, session, device)

    def _enter(self, m: int, visit_end: int) -> _Session:
        session = _Session(m, self.cards[m])
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
        rng = self.rng
        session.device = device
        session.stint_end = t + session.stints.pop(0)
        session.stake = self._new_stake(session)
        self._push(t + rng.randrange(2_000, 10_000), session.member, _GAME)
        return self._event(t, device, "card_in", session.card, {})

    def _new_stake(self, session: _Session) -> int:
        stakes, weights = pf.SLOT_BETS[self.tiers[session.member]]
        return self.rng.choices(stakes, weights)[0]

    def _game(self, t: int, session: _Session) -> SimEvent:
        rng = self.rng
        if rng.random() < pf.STAKE_CHANGE_RATE:
            session.stake = self._new_stake(session)
        wager = session.stake
        u = rng.random()
        win = 0
        if u < pf.WIN_RATE:
            win = int(wager * rng.expovariate(1.0 / pf.WIN_MEAN_MULTIPLE)) // 10 * 10
        elif u < pf.WIN_RATE + pf.BIG_WIN_RATE:
            win = int(wager * rng.uniform(*pf.BIG_WIN_MULTIPLES)) // 10 * 10
        if rng.random() < pf.PAUSE_RATE:
            gap = rng.uniform(*pf.PAUSE_GAP)
        else:
            gap = rng.uniform(*pf.SPIN_GAP)
        after = t + int(gap * self.mean_gap_ms)
        if after < session.stint_end:
            self._push(after, session.member, _GAME)
        else:
            self._push(t + rng.randrange(2_000, 15_000), session.member, _CARD_OUT)
        extra: Payload = {"wager_cents": wager, "win_cents": win, "points": wager // 100}
        return self._event(t, session.device, "game", session.card, extra)

    def _card_out(self, t: int, session: _Session) -> SimEvent | None:
        rng = self.rng
        if rng.random() < self.cfg.lost_card_out_rate:
            session.stints.clear()
            hold = int(self.cfg.lost_card_out_hold_minutes * _MINUTE)
            self._push(t + hold, session.member, _RELEASE)
            return None
        device = session.device
        self.free_egms.put(self.areas[device], device)
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
        self.free_egms.put(self.areas[session.device], session.device)
        self._leave(session)

    # -- tables -----------------------------------------------------------------------

    def _rating_start(self, t: int, session: _Session, table: int, seat: int) -> SimEvent:
        session.device = table
        session.seat = seat
        session.avg_bet = self.rng.choice(pf.TABLE_BETS[self.tiers[session.member]])
        session.hands_per_ms = self.hands_per_ms[table]
        session.last_ms = t
        self._next_rating(t, session)
        extra: Payload = {"seat": seat, "avg_bet_cents": session.avg_bet}
        return self._event(t, table, "rating_start", session.card, extra)

    def _next_rating(self, t: int, session: _Session) -> None:
        interval = self.cfg.rating_update_minutes * _MINUTE * self.rng.uniform(0.8, 1.2)
        self._push(min(t + int(interval), session.visit_end), session.member, _RATING)

    def _rating(self, t: int, session: _Session) -> SimEvent:
        """A rating update (or the end): play since the previous event of this rating."""
        rng = self.rng
        hands = round((t - session.last_ms) * session.hands_per_ms * rng.uniform(0.85, 1.15))
        bet = session.avg_bet
        wager = hands * bet
        extra: Payload = {
            "seat": session.seat,
            "avg_bet_cents": bet,
            "wager_cents": wager,
            "points": wager // 100,
        }
        session.last_ms = t
        if rng.random() < pf.TABLE_BET_DRIFT_RATE:
            step = pf.TABLE_BET_STEP if rng.random() < 0.5 else -pf.TABLE_BET_STEP
            session.avg_bet = max(pf.TABLE_BET_STEP, bet + step)
        if t >= session.visit_end:
            self.free_seats.put(self.areas[session.device], session.device * 8 + session.seat)
            self._leave(session)
            kind = "rating_end"
        else:
            self._next_rating(t, session)
            kind = "rating_update"
        return self._event(t, session.device, kind, session.card, extra)

    # -- output -----------------------------------------------------------------------

    def _event(self, t: int, device: int, kind: str, card: str, extra: Payload) -> SimEvent:
        seq = self.seq[device] + 1
        self.seq[device] = seq
        name = self.names[device]
        payload: Payload = {
            "id": f"{self.run_id}-{name}-{seq}",
            "type": kind,
            "ts": self.stamper.stamp(t),
            "card": card,
            "area": self.areas[device],
        }
        payload.update(extra)
        return SimEvent(t, self.kinds[device], name, payload)
