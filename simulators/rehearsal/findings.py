"""Two findings of a rehearsal drawn from its summary: prize cost against budget, and
every rule of the promotion file that never triggered.

Pure: they read the promotion (the file as rehearsed) and the numbers `rehearsal_summary`
took from the daemon, and add no counting of their own.

**Budget** is what the file puts up: a round's prize set (`values_cents`) is sealed into
reveals for each of its tombolas, so a round's budget is the set's total per tombola; a
RAPS jackpot awards one prize of its set, so a session's budget is its jackpots times the
set's mean value. **Cost** is what winners took: the reveals picked (the prize letters),
split into redeemed, lapsed and still outstanding; for RAPS, the prizes won times the
set's mean (the reveal a RAPS winner picks is not recorded). A prize set without values
(the seeds leave them to the desk) has no budget or cost: the report says so and how to
give them (`--set prize_sets.<id>.values_cents=[...]`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bonusd.promotions import Promotion
from bonusd.promotions.kinds import QualificationKind, TombolaMode
from bonusd.promotions.multipliers import multiplier_windows
from bonusd.promotions.schema import Draw

Json = dict[str, Any]
DONE = ("drawn", "bin closed")


def _set_values(p: Promotion, name: str | None) -> list[int]:
    return list(p.prize_sets[name].values_cents) if name else []


def prizes(p: Promotion, summary: Json) -> Json:
    """Budget and cost per draw and per RAPS session, and the totals."""
    draws = []
    for d, row in zip(p.draw_list, summary["draws"], strict=True):
        budget: int | None = 0
        for spec in d.rounds:
            values = _set_values(p, spec.prize_set or d.prize_set)
            if not values:
                budget = None
            elif budget is not None:
                budget += sum(values) * len(spec.winners)
        states: defaultdict[str, int] = defaultdict(int)
        for w in row["winners"]:
            if w["prize_cents"] is not None:
                states[w["state"]] += w["prize_cents"]
        cost = sum(states.values())
        has_values = budget is not None
        draws.append(
            {
                "draw": d.id,
                "status": row["status"],
                "winners": row.get("won", 0),
                "seated": len(row["seats"]),
                "budget_cents": budget,
                "cost_cents": cost if has_values else None,
                "redeemed_cents": states["redeemed"] if has_values else None,
                "lapsed_cents": states["lapsed"] if has_values else None,
                "outstanding_cents": states["letter_issued"] if has_values else None,
            }
        )
    sessions = []
    for s, row in zip(p.jackpot_sessions, summary["jackpots"], strict=True):
        values = _set_values(p, s.prize_set)
        mean = sum(values) / len(values) if values else None
        offered = len(row["jackpots"])
        won = sum(j["prizes"] for j in row["jackpots"] if j["outcome"] == "won")
        sessions.append(
            {
                "session": s.id,
                "status": row["status"],
                "jackpots": offered,
                "prizes_won": won,
                "budget_cents": round(offered * mean) if mean is not None else None,
                "cost_cents": round(won * mean) if mean is not None else None,
            }
        )
    rows = [*draws, *sessions]
    known = [r for r in rows if r["budget_cents"] is not None]
    return {
        "draws": draws,
        "jackpots": sessions,
        "budget_cents": sum(r["budget_cents"] for r in known),
        "cost_cents": sum(r["cost_cents"] or 0 for r in known),
        "without_values": sorted(
            {name for name, ps in p.prize_sets.items() if not ps.values_cents}
        ),
    }


def _base(d: Draw) -> str:
    """Where a draw's rules are written in the file."""
    return f"draw_series.{d.series}" if d.series else f"draws.{d.id}"


def _ticket_rules(d: Draw) -> dict[str, str]:
    """Rule line name -> the setting that produces it, for the rules this draw sets."""
    t, separate = d.tickets, d.tombolas is TombolaMode.SEPARATE
    out = {}
    if t.per_points:
        out["points"] = "tickets.per_points"
    if t.per_visit:
        out["side_visits" if separate else "visits"] = "tickets.per_visit"
    if t.base:
        out["base"] = "tickets.base"
    if t.app_bonus:
        out["app_bonus"] = "tickets.app_bonus"
    if t.min_one_if_played:
        out["min_one"] = "tickets.min_one_if_played"
    return out


def never_triggered(p: Promotion, summary: Json) -> list[Json]:
    """Each rule that changed nothing in the rehearsal, with why (`rule`, `why`)."""
    out: list[Json] = []
    fired: dict[str, bool] = {}  # "path" -> triggered at least once (a series: any date)
    why: dict[str, str] = {}

    def note(path: str, hit: bool, reason: str) -> None:
        fired[path] = fired.get(path, False) or hit
        why.setdefault(path, reason)

    for d, row in zip(p.draw_list, summary["draws"], strict=True):
        s, base = row["summary"], _base(d)
        if row["status"] not in DONE and not s["members_with_play"]:
            continue  # nothing of this draw happened in the rehearsed days
        q = d.qualification
        if q.kind is QualificationKind.THRESHOLD:
            for side in q.sides:
                hit = row["sides_qualified"].get(side.value, 0) > 0
                note(
                    f"{base}.qualification ({side.value})",
                    hit,
                    f"no member reached {q.threshold:,} window points on {side.value}",
                )
        else:
            note(f"{base}.qualification", s["qualified"] > 0, "nobody qualified")
        for rule, setting in _ticket_rules(d).items():
            note(f"{base}.{setting}", rule in row["rules"], "no qualifier earned tickets by it")
        for tier, cap in sorted(d.caps.items()):
            hit = tier.value in row["caps"]
            note(f"{base}.caps ({tier.value}: {cap:,})", hit, "no member reached the cap")
        if row["status"] == "drawn":
            note(f"{base}.activation", bool(s["activated"]), "nobody activated entries")
            if d.seats is not None:
                note(f"{base}.seats", bool(row["seats"]), "no leader to seat")
    for i, w in enumerate(multiplier_windows(p), start=1):
        seen = next(x for x in summary["multipliers"]["windows"] if x["id"] == w.id)
        if not seen["observed"]:
            continue
        gained = sum(r["points"] for by in seen["draws"].values() for r in by.values())
        reason = "falls in no draw's earning window" if not seen["draws"] else "no play in it"
        note(f"multipliers[{i}] ({w.id})", gained > 0, f"changed no points: {reason}")
    for s, row in zip(p.jackpot_sessions, summary["jackpots"], strict=True):
        if row["status"] != "run":
            continue
        base = f"jackpot_series.{s.series}"
        empties = [j for j in row["jackpots"] if j["attempts"] > 1 or j["outcome"] != "won"]
        note(f"{base}.empty_pool", bool(empties), "every jackpot had eligible players at once")
        if s.decline_register:
            note(f"{base}.decline_register", False, "the rehearsal's desk signs nobody in")
    for path, hit in fired.items():
        if not hit:
            out.append({"rule": path, "why": why[path]})
    return out
