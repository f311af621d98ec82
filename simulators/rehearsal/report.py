"""The rehearsal report: one self-contained HTML file (inline CSS and SVG, no links out)
and the JSON summary it is drawn from, optionally side by side with another run's.

    html_path, json_path = write_report(summary, Path("report.html"), compare=other)

Everything shown is in the summary (`rehearsal_summary`); this module only lays it out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simulators.rehearsal.html import CSS, esc, num, rand, table
from simulators.rehearsal.svg import bars, lines

Json = dict[str, Any]
TIERS = ("10", "J", "Q", "K", "A")
SECTIONS = (
    ("qualifiers", "Qualifiers and tickets"),
    ("caps-multipliers", "Caps and multipliers"),
    ("leaderboards", "Leaderboards week by week"),
    ("winners", "Winners and claims"),
    ("prizes", "Prize cost against budget"),
    ("never-triggered", "Rules that never triggered"),
    ("run", "The run"),
)


def reached(s: Json) -> list[Json]:
    """The draws the rehearsal reached: run, or with play in their window by its end."""
    return [
        d
        for d in s["draws"]
        if d["status"] != "after the rehearsal" or d["summary"]["members_with_play"]
    ]


def _qualifiers(s: Json) -> str:
    draws = reached(s)
    rows = []
    for d in draws:
        m = d["summary"]
        pool = d["pool"] or {}
        pooled = ", ".join(f"{t}: {v['members']:,} / {v['tickets']:,}" for t, v in pool.items())
        rows.append(
            [
                f"<b>{esc(d['name'])}</b> ({esc(d['id'])})<br>{esc(d['date'])}",
                esc(d["status"]),
                num(m["members_with_play"]),
                num(m["eligible"]),
                num(m["qualified"]),
                num(m["activated"]),
                num(m["tickets"]),
                num(m["entries"]),
                esc(pooled or "–"),
            ]
        )
    head = ["draw", "status", "with play", "eligible", "qualified", "activated", "tickets"]
    out = [table([*head, "entries", "pool (members / tickets)"], rows, left=2)]
    later = len(s["draws"]) - len(draws)
    if later:
        out.append(f"<p>{later} later draw(s) of the promotion were not reached.</p>")
    tier_rows = [
        [esc(d["id"])]
        + [
            f"{num(d['summary']['by_tier'][t]['qualified'])} / "
            f"{num(d['summary']['by_tier'][t]['tickets'])}"
            for t in TIERS
        ]
        for d in draws
    ]
    out.append("<h3>By tier (qualified / tickets)</h3>")
    out.append(table(["draw", *TIERS], tier_rows))
    if draws:
        series = {t: [d["summary"]["by_tier"][t]["qualified"] for d in draws] for t in TIERS}
        out.append(bars("Qualifiers per draw and tier", [d["id"] for d in draws], series))
    return "".join(out)


def _caps_multipliers(s: Json) -> str:
    m = s["multipliers"]
    out = ["<h3>Multiplier windows</h3>"]
    rows = []
    for w in m["windows"]:
        if not w["observed"]:
            rows.append(
                [esc(w["id"]), esc(w["opens"]), f"x{w['factor']:g}", "not in the rehearsal"]
            )
            continue
        if not w["draws"]:
            rows.append([esc(w["id"]), esc(w["opens"]), f"x{w['factor']:g}", "in no draw's window"])
        for draw_id, by_side in w["draws"].items():
            for side, r in by_side.items():
                rows.append(
                    [
                        esc(w["id"]),
                        esc(w["opens"]),
                        f"x{w['factor']:g}",
                        f"{esc(draw_id)} / {esc(side)}",
                        num(r["members"]),
                        num(r["base_points"]),
                        num(r["extra_points"]),
                        num(r["points"]),
                        num(m["outside_windows"][draw_id][side]),
                    ]
                )
    head = ["window", "opens", "factor", "draw / side", "members", "base points", "extra"]
    out.append(table([*head, "points inside", "points outside all windows"], rows, left=4))
    draws = [d for d in m["totals"] if sum(m["totals"][d].values())]
    inside = [sum(m["totals"][d].values()) - sum(m["outside_windows"][d].values()) for d in draws]
    outside = [sum(m["outside_windows"][d].values()) for d in draws]
    if draws:
        series = {"inside windows": inside, "outside": outside}
        out.append(bars("Window points inside and outside multiplier windows", draws, series))
    out.append("<h3>Caps</h3>")
    cap_rows = [
        [esc(d["id"]), esc(t), num(c["members"]), num(c["tickets_removed"])]
        for d in s["draws"]
        for t, c in sorted(d["caps"].items())
    ]
    if cap_rows:
        out.append(table(["draw", "tier", "members capped", "tickets removed"], cap_rows, 2))
    else:
        out.append("<p>No member reached a cap (or no draw has caps).</p>")
    out.append("<h3>Tickets by rule</h3>")
    rule_rows = [
        [esc(d["id"]), esc(rule), num(r["members"]), num(r["tickets"])]
        for d in s["draws"]
        for rule, r in d["rules"].items()
    ]
    out.append(table(["draw", "rule", "members", "tickets"], rule_rows, left=2))
    return "".join(out)


def _leaderboards(s: Json) -> str:
    out = []
    for draw_id, board in s["leaderboards"].items():
        out.append(f"<h3>{esc(draw_id)}</h3>")
        weeks = board["weeks"]
        if weeks:
            labels = [w["at"][:10] for w in weeks]
            out.append(
                lines(
                    f"{draw_id}: qualifiers at each weekly publication",
                    labels,
                    {"qualified": [w["qualified"] for w in weeks]},
                )
            )
        leaders: dict[str, list[float | None]] = {}
        labels = []
        for side, published in board["published"].items():
            labels = labels or [p["published_at"][:10] for p in published]
            leaders[f"{side} #1"] = [
                p["entries"][0]["points"] if p["entries"] else None for p in published
            ]
            leaders[f"{side} #10"] = [
                p["entries"][9]["points"] if len(p["entries"]) > 9 else None for p in published
            ]
        if labels:
            out.append(lines(f"{draw_id}: published board, points of #1 and #10", labels, leaders))
        rows = []
        for side, published in board["published"].items():
            for p in published:
                top = ", ".join(f"{e['card']} ({e['points']:,})" for e in p["entries"][:3])
                rows.append([esc(p["published_at"][:16]), esc(side), esc(top or "empty")])
        out.append(table(["published", "board", "top 3 (card, points)"], rows, left=3))
    return "".join(out) or "<p>No draw of this promotion has a public leaderboard.</p>"


def _winners(s: Json) -> str:
    out = []
    for d in s["draws"]:
        if not d["winners"] and not d["seats"]:
            continue
        counts = ", ".join(f"{k}: {v}" for k, v in sorted(d["claims"].items()))
        by_proxy = sum(w.get("presented_by") == "proxy" for w in d["winners"])
        proxies = f"; proxies registered: {d.get('proxies', 0)}, presented by a proxy: {by_proxy}"
        out.append(
            f"<h3>{esc(d['name'])} ({esc(d['date'])})</h3><p>claims: {esc(counts + proxies)}</p>"
        )
        rows = [
            [
                num(w["round"]),
                esc(w["tombola"]),
                esc(w["card"]),
                esc(w["tier"]),
                esc(w["state"] + (" (by proxy)" if w.get("presented_by") == "proxy" else "")),
                rand(w["prize_cents"]),
            ]
            for w in d["winners"]
        ]
        rows += [
            ["seat", esc(x["board"]), esc(x["card"]), esc(x["tier"]), "seated", "–"]
            for x in d["seats"]
        ]
        out.append(table(["round", "tombola", "card", "tier", "outcome", "prize"], rows, 5))
        for note in d["exceptions"]:
            out.append(f'<p class="note">{esc(note)}</p>')
    for session in s["jackpots"]:
        if session["status"] != "run":
            continue
        signed = session.get("decline_register", 0)
        out.append(
            f"<h3>RAPS {esc(session['id'])}</h3><p>signed the decline register: {num(signed)}</p>"
        )
        rows = [
            [
                num(j["number"]),
                esc(j["at"][11:16]),
                num(j["eligible"]),
                num(j["attempts"]),
                esc(j["outcome"]),
                esc(j["winner"] or "–"),
                esc(j["how"] or "–"),
                num(j["reselections"]),
            ]
            for j in session["jackpots"]
        ]
        head = ["#", "time", "eligible", "attempts", "outcome", "winner", "how", "reselected"]
        out.append(table(head, rows, left=2, text=(4, 5, 6)))
    return "".join(out) or "<p>No draw or jackpot ran in the rehearsed days.</p>"


def _prizes(s: Json) -> str:
    p = s["prizes"]
    rows = [
        [
            esc(r["draw"]),
            esc(r["status"]),
            num(r["winners"]),
            rand(r["budget_cents"]),
            rand(r["cost_cents"]),
            rand(r["redeemed_cents"]),
            rand(r["lapsed_cents"]),
            rand(r["outstanding_cents"]),
        ]
        for r in p["draws"]
        if r["status"] != "after the rehearsal"
    ]
    rows += [
        [
            f"RAPS {esc(r['session'])}",
            esc(r["status"]),
            num(r["prizes_won"]),
            rand(r["budget_cents"]),
            rand(r["cost_cents"]),
            "–",
            "–",
            "–",
        ]
        for r in p["jackpots"]
        if r["status"] != "after the rehearsal"
    ]
    head = ["draw / session", "status", "winners", "budget", "cost", "redeemed", "lapsed"]
    out = [table([*head, "outstanding"], rows, left=2)]
    if any(r["budget_cents"] is not None for r in [*p["draws"], *p["jackpots"]]):
        out.append(
            f"<p>Total: cost <b>{rand(p['cost_cents'])}</b> of a budget of "
            f"<b>{rand(p['budget_cents'])}</b> (where the file gives prize values).</p>"
        )
    if p["without_values"]:
        sets = ", ".join(p["without_values"])
        out.append(
            f'<p class="note">Prize sets without values in the file (the desk loads them): '
            f"{esc(sets)}. Their cost is not known; rehearse with e.g. "
            f"<code>--set prize_sets.{esc(p['without_values'][0])}.values_cents=[500000, "
            "250000, 100000]</code>.</p>"
        )
    known = [r for r in p["draws"] if r["budget_cents"] is not None]
    if known:
        series = {
            "budget": [r["budget_cents"] / 100 for r in known],
            "cost": [(r["cost_cents"] or 0) / 100 for r in known],
        }
        out.append(bars("Prize budget and cost per draw (R)", [r["draw"] for r in known], series))
    return "".join(out)


def _never(s: Json) -> str:
    items = s["never_triggered"]
    if not items:
        return '<p class="ok">Every rule of the file triggered at least once.</p>'
    rows = [[f"<code>{esc(i['rule'])}</code>", esc(i["why"])] for i in items]
    return table(["rule", "why"], rows, left=2)


def _run(s: Json) -> str:
    r = s["run"]
    rows = [
        ["promotion file", esc(r["promotion_file"])],
        ["rule changes (--set)", esc(", ".join(r["sets"]) or "none")],
        ["left out (dated before the first day)", esc(", ".join(r["left_out"]) or "none")],
        ["floor", f"{esc(r['floor'])}: {r['floor_size']['devices']:,} devices, "
                  f"{r['floor_size']['members']:,} members, seed {r['seed']}"],
        ["floor simulated", f"{esc(r['from'])} to {esc(r['floor_until'])}"],
        ["clock run until", esc(r["clock_until"])],
        ["crew model", esc(json.dumps(r["crew"]))],
        [
            "wall time",
            f"{r['wall_s']:,.1f} s (of which {r.get('setup_s', 0):,.1f} s setting up), then "
            f"{r.get('summary_s', 0):,.1f} s reading the results",
        ],
        ["events published / applied", f"{r['events_published']:,} / {r['applied']:,}"],
        ["events by type", esc(json.dumps(r["events_by_type"]))],
        ["dead letters", esc(json.dumps(r["dead_letters"]) if r["dead_letters"] else "none")],
        ["peak RSS: daemon (and rehearsal) / simulator",
         f"{r['daemon_peak_rss_mb']:,} MB / {r['simulator_peak_rss_mb']:,} MB"],
        ["Redis used_memory_peak / used_memory at the end",
         f"{r['redis_used_memory_peak_mb']:,} MB / {r['redis_used_memory_mb']:,} MB"],
    ]  # fmt: skip
    return table(["", ""], rows, left=2)


def _figure(draw: Json | None, label: str) -> int | None:
    if draw is None:
        return None
    if label == "winners":
        return int(draw.get("won", 0))
    return int(draw["summary"][label])


def _cost(s: Json) -> str:
    p = s["prizes"]
    known = any(r["budget_cents"] is not None for r in [*p["draws"], *p["jackpots"]])
    return rand(p["cost_cents"]) if known else "no prize values"


def _describe(s: Json) -> str:
    r = s["run"]
    rules = ", ".join(r["sets"]) or "the rules as filed"
    days = f"{r['from'][:10]} to {r['floor_until'][:10]}"
    return f"{rules}, floor {r['floor']}, seed {r['seed']}, {days}"


def _compare(s: Json, other: Json) -> str:
    """Key figures of two rehearsals side by side."""
    mine = {d["id"]: d for d in s["draws"]}
    theirs = {d["id"]: d for d in other["draws"]}
    rows = []
    for draw_id in [*mine, *(k for k in theirs if k not in mine)]:
        a, b = mine.get(draw_id), theirs.get(draw_id)
        for label in ("qualified", "tickets", "entries", "winners"):
            x, y = _figure(a, label), _figure(b, label)
            delta = y - x if isinstance(x, int) and isinstance(y, int) else None
            rows.append([esc(draw_id), label, num(x), num(y), num(delta)])
    rows.append(["prize cost", "", _cost(s), _cost(other), ""])
    sets = f"this run: {_describe(s)}; the other run: {_describe(other)}"
    never_a = {i["rule"] for i in s["never_triggered"]}
    never_b = {i["rule"] for i in other["never_triggered"]}
    diff = sorted(never_a ^ never_b)
    side_by_side = table(["draw", "figure", "this run", "other run", "other − this"], rows, left=2)
    extra = f"<p>Rules that never triggered in only one of the runs: {esc(', '.join(diff))}</p>"
    return f"<p>{esc(sets)}</p>{side_by_side}{extra if diff else ''}"


def render(summary: Json, compare: Json | None = None) -> str:
    """The report as one HTML document (no external references)."""
    promo = summary["promotion"]
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>Rehearsal: {esc(promo['name'])}</title><style>{CSS}</style></head><body>",
        f"<h1>Rehearsal: {esc(promo['name'])}</h1>",
        f'<p class="sub">{esc(promo["casino"])} · {esc(promo["id"])} · promotion '
        f"{esc(promo['start'])} to {esc(promo['end'])} · rehearsed {esc(summary['run']['from'])} "
        f"to {esc(summary['run']['floor_until'])}",
        f"{' · with ' + esc(', '.join(summary['run']['sets'])) if summary['run']['sets'] else ''}"
        "</p><nav>",
    ]
    sections = [*SECTIONS, ("compare", "Compared with another run")] if compare else SECTIONS
    parts += [f'<a href="#{ident}">{esc(title)}</a>' for ident, title in sections]
    parts.append("</nav>")
    build = {
        "qualifiers": _qualifiers,
        "caps-multipliers": _caps_multipliers,
        "leaderboards": _leaderboards,
        "winners": _winners,
        "prizes": _prizes,
        "never-triggered": _never,
        "run": _run,
    }
    for ident, title in SECTIONS:
        parts.append(
            f'<section id="{ident}"><h2>{esc(title)}</h2>{build[ident](summary)}</section>'
        )
    if compare is not None:
        body = _compare(summary, compare)
        parts.append(f'<section id="compare"><h2>Compared with another run</h2>{body}</section>')
    parts.append("</body></html>\n")
    return "".join(parts)


def write_report(summary: Json, out: Path, *, compare: Json | None = None) -> tuple[Path, Path]:
    """Write `out` (HTML) and the JSON summary beside it (same name, `.json`)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data = out.with_suffix(".json")
    data.write_text(json.dumps(summary, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    out.write_text(render(summary, compare), encoding="utf-8")
    return out, data
