"""What a rehearsal found, read from the daemon's Redis with the daemon's own code.

Every number comes from the engine that runs the live floor: whole-draw counts from
`DrawSummaries` (the bulk rules), per-member rule lines and caps from
`PromotionStore.all_standings` (the reference rules), the frozen pools, the published
boards, the draw and RAPS books replayed from their ledgers by the runners. Two things a
final reading cannot tell are read *during* the run by the `Observer`, at their instants
(the rehearsal stops there, with every earlier event committed and no later one sent):
each draw's window points at the edges of each multiplier window, and the whole-draw
counts at each weekly board publication.

The result is plain JSON (`rehearsal_report` renders it; `rehearsal_findings` adds
prizes against budget and the rules that never triggered).
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from bonusd.audit.chain import Kind
from bonusd.draws.claims import DrawClaimState
from bonusd.promotions import Promotion, Side, earning_window
from bonusd.promotions.multipliers import multiplier_windows
from bonusd.promotions.schedule import leaderboard_publications
from bonusd.promotions.schema import Draw, JackpotSession
from bonusd.promotions.summaries import DrawSummaries
from bonusd.promotions.timing import activation_opens_at, bin_closes_at, local, round_instants
from bonusd.registry.records import Member
from bonusd.service.root import Service
from simulators.rehearsal.crew import CrewLog
from simulators.rehearsal.findings import never_triggered, prizes

if TYPE_CHECKING:
    from simulators.rehearsal.plan import Prepared

Json = dict[str, Any]


def _iso(at: dt.datetime, zone: Any) -> str:
    return at.astimezone(zone).isoformat(timespec="minutes")


def _tier(card: str, index_row: str | None) -> str:
    return Member.from_index(card, index_row).tier.value if index_row else "unregistered"


class Observer:
    """Readings taken at instants of the run (multiplier edges, board publications)."""

    def __init__(self, service: Service, promotion: Promotion, start: dt.datetime) -> None:
        self._service, self._p = service, promotion
        self._summaries = DrawSummaries(service.promotion_store)
        pending: list[tuple[dt.datetime, str, str]] = []
        for w in multiplier_windows(promotion):
            if w.opens >= start:  # a window already open at the start cannot be split
                pending += [(w.opens, "opens", w.id), (w.closes, "closes", w.id)]
        for draw in promotion.draw_list:
            boards = leaderboard_publications(promotion, draw)
            pending += [(at, "board", draw.id) for at in boards if at >= start]
        self._pending = sorted(pending)
        self._opened: dict[str, dict[tuple[str, str], dict[str, str]]] = {}
        self.multipliers: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
        self.weeks: dict[str, list[Json]] = {}

    async def observe(self, now: dt.datetime) -> None:
        """Take every reading due at or before `now` (the driver stops at each one)."""
        while self._pending and self._pending[0][0] <= now:
            at, what, ident = self._pending.pop(0)
            if what == "board":
                summary = await self._summaries.summary(self._p.id, ident)
                row = {k: summary[k] for k in ("members_with_play", "qualified", "tickets")}
                self.weeks.setdefault(ident, []).append({"at": _iso(at, self._p.zone), **row})
            elif what == "opens":
                self._opened[ident] = await self._points(ident)
            elif ident in self._opened:
                before, after = self._opened.pop(ident), await self._points(ident)
                out: dict[str, dict[str, dict[str, int]]] = {}
                for (draw_id, side), points in after.items():
                    old = before.get((draw_id, side), {})
                    gains = [int(v) - int(old.get(c, 0)) for c, v in points.items()]
                    gained = [g for g in gains if g > 0]
                    row = {"points": sum(gained), "members": len(gained)}
                    out.setdefault(draw_id, {})[side] = row
                self.multipliers[ident] = out

    async def _points(self, window_id: str) -> dict[tuple[str, str], dict[str, str]]:
        """Window points by card of every draw the multiplier window overlaps."""
        p, store = self._p, self._service.promotion_store
        window = next(w for w in multiplier_windows(p) if w.id == window_id)
        out = {}
        for draw in p.draw_list:
            ew = earning_window(p, draw)
            if not (ew.opens < window.closes and window.opens < ew.closes):
                continue
            for side in sorted(window.sides):
                key = store.keys.window_field(p.id, draw.id, f"{side.value}_points")
                out[(draw.id, side.value)] = cast(dict[str, str], await store.redis.hgetall(key))
        return out


@dataclass(frozen=True)
class RunFigures:
    """How the run went, measured by the rehearsal."""

    wall_s: float
    setup_s: float
    stops: int
    published: int
    simulator: Json
    daemon_rss_kb: int
    memory_before: Json
    memory_after: Json
    key_prefix: str
    members: int
    devices: int


async def summarise(
    service: Service, prepared: Prepared, observer: Observer, crew: CrewLog, figures: RunFigures
) -> Json:
    """The whole summary of a finished rehearsal (the daemon still holds its keys)."""
    p = prepared.promotion
    end = prepared.settle_end
    summaries = DrawSummaries(service.promotion_store)
    draws = [await _draw(service, summaries, p, d, end=end, crew=crew) for d in p.draw_list]
    sessions = [await _session(service, p, s, end) for s in p.jackpot_sessions]
    totals = await _draw_points(service, p)
    out: Json = {
        "format": 1,
        "run": await _run(service, prepared, figures),
        "promotion": {
            "id": p.id,
            "name": p.name,
            "casino": p.casino,
            "start": p.start.isoformat(),
            "end": p.end.isoformat(),
        },
        "draws": draws,
        "jackpots": sessions,
        "multipliers": _multipliers(p, observer, totals),
        "leaderboards": await _boards(service, p, observer),
    }
    out["prizes"] = prizes(p, out)
    out["never_triggered"] = never_triggered(p, out)
    return out


async def _run(service: Service, prepared: Prepared, f: RunFigures) -> Json:
    stats = await service.store.stats()
    plan = prepared.plan
    return {
        "promotion_file": str(plan.promotion_file),
        "sets": list(plan.sets),
        "left_out": list(prepared.left_out),
        "floor": prepared.floor_ref,
        "floor_size": {"devices": f.devices, "members": f.members},
        "seed": plan.seed,
        "from": _iso(prepared.start, prepared.promotion.zone),
        "floor_until": _iso(prepared.floor_end, prepared.promotion.zone),
        "clock_until": _iso(prepared.settle_end, prepared.promotion.zone),
        "crew": vars(plan.crew),
        "play_minutes": plan.play_minutes,
        "wall_s": round(f.wall_s, 1),
        "setup_s": round(f.setup_s, 1),
        "stops": f.stops,
        "events_published": f.published,
        "events_by_type": f.simulator.get("events", {}),
        "events_committed": service.ingest.committed,
        "applied": stats.get("applied", 0),
        "duplicates": stats.get("duplicates", 0),
        "dead_letters": {k.split(":", 1)[1]: v for k, v in stats.items() if ":" in k},
        "daemon_peak_rss_mb": round(f.daemon_rss_kb / 1024, 1),
        "simulator_peak_rss_mb": round(f.simulator.get("rss_kb", 0) / 1024, 1),
        "redis_used_memory_peak_mb": round(int(f.memory_after["used_memory_peak"]) / 2**20, 1),
        "redis_used_memory_mb": round(int(f.memory_after["used_memory"]) / 2**20, 1),
        "redis_used_memory_before_mb": round(int(f.memory_before["used_memory"]) / 2**20, 1),
        "key_prefix": f.key_prefix,
    }


async def _draw(
    service: Service,
    summaries: DrawSummaries,
    p: Promotion,
    d: Draw,
    *,
    end: dt.datetime,
    crew: CrewLog,
) -> Json:
    store = service.promotion_store
    summary = await summaries.summary(p.id, d.id)
    rules: Counter[str] = Counter()
    rule_tickets: Counter[str] = Counter()
    cap_lines: dict[str, int] = {}  # card -> tickets the cap took
    sides: Counter[str] = Counter()
    for s in await store.all_standings(p.id, d.id):
        for side in s.sides:
            sides[side.side.value] += side.qualified
        for line in s.breakdown:
            if line.tickets:
                rules[line.rule] += 1
                rule_tickets[line.rule] += line.tickets
            if line.rule == "cap":
                cap_lines[s.card] = -line.tickets
    capped: dict[str, list[int]] = {}
    if cap_lines:
        rows = cast(
            list[str | None], await service.redis.hmget(store.keys.member_index, list(cap_lines))
        )
        for (card, removed), row in zip(cap_lines.items(), rows, strict=True):
            tier = _tier(card, row)
            capped.setdefault(tier, [0, 0])
            capped[tier][0] += 1
            capped[tier][1] += removed
    rounds = round_instants(p, d)
    status = "after the rehearsal"
    if bin_closes_at(p, d) <= end:
        status = "bin closed"
    if rounds[-1] <= end:
        status = "drawn"
    out: Json = {
        "id": d.id,
        "name": d.name,
        "date": d.date.isoformat(),
        "mode": d.mode.value,
        "rounds": [_iso(at, p.zone) for at in rounds],
        "status": status,
        "qualification": d.qualification.kind.value,
        "threshold": d.qualification.threshold,
        "summary": summary,
        "sides_qualified": dict(sides),
        "rules": {r: {"members": rules[r], "tickets": rule_tickets[r]} for r in sorted(rules)},
        "caps": {t: {"members": m, "tickets_removed": n} for t, (m, n) in capped.items()},
        "activations": crew.activations.get(d.id),
        "activations_refused": crew.refused.get(d.id),
        "pool": None,
        "seats": [],
        "winners": [],
        "claims": {},
        "exceptions": [],
    }
    pool = await store.pool(p.id, d.id)
    if pool is not None:
        out["pool"] = {
            str(t): {"members": len(pool.entries(t)), "tickets": pool.total(t)}
            for t, _ in pool.tombolas
        }
    if activation_opens_at(p, d) <= end:
        await _book(service, p, d, out)
    return out


async def _book(service: Service, p: Promotion, d: Draw, out: Json) -> None:
    """Winners, seats, claim outcomes and exceptions, from the draw's book and ledger."""
    book = await service.draws.book(p.id, d.id)
    index = service.promotion_store.keys.member_index
    cards = [c.card for c in book.claims.values()] + list(book.draw.seats)
    tiers = cast(list[str | None], await service.redis.hmget(index, cards) if cards else [])
    tier_of = {c: _tier(c, t) for c, t in zip(cards, tiers, strict=True)}
    out["seats"] = [
        {"card": s.card, "board": s.board, "tier": tier_of[s.card]}
        for s in book.draw.seats.values()
    ]
    for claim_id, claim in book.claims.items():
        (tombola, number), _ = book.claim_round[claim_id]
        out["winners"].append(
            {
                "claim": claim_id,
                "round": number,
                "tombola": tombola,
                "card": claim.card,
                "tier": tier_of[claim.card],
                "state": str(claim.state),
                "presented_by": _presenter(claim.presenter, claim.card),
                "prize_cents": claim.prize.value_cents if claim.prize else None,
            }
        )
    out["proxies"] = len(book.proxies.proxies)
    out["claims"] = dict(Counter(str(c.state) for c in book.claims.values()))
    out["won"] = sum(c.state is not DrawClaimState.NO_SHOW for c in book.claims.values())
    records = await service.audit.ledger(book.subject)
    out["exceptions"] = [r.payload.get("note", "") for r in records if r.kind == Kind.EXCEPTION]


def _presenter(presenter: str | None, card: str) -> str | None:
    """Who presented a draw winner's claim: the winner, their proxy, or nobody (yet)."""
    if presenter is None:
        return None
    return "winner" if presenter == card else "proxy"


async def _session(service: Service, p: Promotion, s: JackpotSession, end: dt.datetime) -> Json:
    starts = local(p, s.date, s.start)
    out: Json = {"id": s.id, "date": s.date.isoformat(), "jackpots": [], "status": "run"}
    if starts > end:
        out["status"] = "after the rehearsal"
        return out
    book = await service.jackpots.book(p.id, s.id)
    out["decline_register"] = len(book.register.signed)
    for n, st in book.jackpots.items():
        claims = [book.claims[c] for c in st.claims]
        winner = next((c for c in claims if c.won), None)
        outcome = st.outcome or ("won" if winner else "open" if claims else "not run")
        out["jackpots"].append(
            {
                "number": n,
                "at": _iso(st.at, p.zone),
                "attempts": st.attempt,
                "eligible": st.summary.get("eligible"),
                "prizes": st.prizes,
                "outcome": outcome,
                "winner": winner.card if winner else None,
                "how": str(winner.state) if winner else None,
                "reselections": sum(str(c.state) in ("reselected", "not_owner") for c in claims),
            }
        )
    return out


async def _draw_points(service: Service, p: Promotion) -> dict[str, dict[str, int]]:
    """Each draw's total window points per side at the end."""
    store = service.promotion_store
    out: dict[str, dict[str, int]] = {}
    for d in p.draw_list:
        out[d.id] = {}
        for side in Side:
            key = store.keys.window_field(p.id, d.id, f"{side.value}_points")
            values = cast(list[str], await store.redis.hvals(key))
            out[d.id][side.value] = sum(int(v) for v in values)
    return out


def _multipliers(p: Promotion, observer: Observer, totals: dict[str, dict[str, int]]) -> Json:
    windows = []
    inside: Counter[tuple[str, str]] = Counter()
    for w in multiplier_windows(p):
        seen = observer.multipliers.get(w.id)
        factor = float(w.factor)
        draws = {}
        for draw_id, by_side in (seen or {}).items():
            for side, row in by_side.items():
                inside[(draw_id, side)] += row["points"]
                base = round(row["points"] / factor)
                row |= {"base_points": base, "extra_points": row["points"] - base}
            draws[draw_id] = by_side
        windows.append(
            {
                "id": w.id,
                "opens": _iso(w.opens, p.zone),
                "closes": _iso(w.closes, p.zone),
                "factor": factor,
                "sides": sorted(s.value for s in w.sides),
                "observed": seen is not None,
                "draws": draws,
            }
        )
    outside = {
        d: {s: total - inside[(d, s)] for s, total in by_side.items()}
        for d, by_side in totals.items()
    }
    return {"windows": windows, "totals": totals, "outside_windows": outside}


async def _boards(service: Service, p: Promotion, observer: Observer) -> Json:
    store, out = service.promotion_store, {}
    for d in p.draw_list:
        if not d.leaderboard:
            continue
        sides = {}
        for side in d.qualification.sides:
            key = store.keys.board_history(p.id, d.id, side.value)
            rows = cast(list[str], await store.redis.lrange(key, 0, -1))
            published = [json.loads(r) for r in reversed(rows)]
            for snap in published:  # the daemon keeps UTC; the team reads local time
                at = dt.datetime.fromisoformat(snap["published_at"])
                snap["published_at"] = _iso(at, p.zone)
            sides[side.value] = published
        out[d.id] = {"published": sides, "weeks": observer.weeks.get(d.id, [])}
    return out
