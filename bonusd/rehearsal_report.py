"""The rehearsal report: one self-contained HTML file (inline CSS and SVG, no links out)
and the JSON summary it is drawn from, optionally side by side with another run's.

    html_path, json_path = write_report(summary, Path("report.html"), compare=other)

Everything shown is in the summary (`rehearsal_summary`); this module only lays it out.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bonusd.rehearsal_svg import bars, lines

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
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1100px;color:#1f2328;padding:0 16px}
h1{font-size:24px;margin-bottom:0}h2{border-bottom:2px solid #d0d7de;padding-bottom:4px;
margin-top:36px}h3{margin-bottom:6px}.sub{color:#57606a;margin-top:4px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f6f8fa}td.l,th.l{text-align:left}nav a{margin-right:12px}
.chart{width:100%;max-width:720px;height:auto;display:block;margin:8px 0}
.chart .t{font-weight:600;font-size:13px}.chart .g{stroke:#eaeef2}
.chart .y{font-size:10px;text-anchor:end;fill:#57606a}
.chart .x,.chart .l{font-size:10px;fill:#57606a}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;border-radius:4px}
.warn{color:#b91c1c}.ok{color:#15803d}code{background:#f6f8fa;padding:0 3px}
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _n(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, int | float):
        return f"{value:,.0f}" if isinstance(value, int) or value == int(value) else f"{value:,.1f}"
    return _e(value)


def _rand(cents: int | float | None) -> str:
    return "–" if cents is None else f"R {cents / 100:,.2f}"


def _table(
    head: Sequence[str],
    rows: Iterable[Sequence[object]],
    left: int = 1,
    text: Sequence[int] = (),
) -> str:
    """A table; the first `left` columns and those in `text` are text (left-aligned), the
    others numbers."""
    words = set(range(left)) | set(text)
    th = "".join(
        f'<th class="{"l" if i in words else ""}">{_e(h)}</th>' for i, h in enumerate(head)
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="l">{c}</td>' if i in words else f"<td>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{th}</tr>{''.join(body)}</table>"


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
                f"<b>{_e(d['name'])}</b> ({_e(d['id'])})<br>{_e(d['date'])}",
                _e(d["status"]),
                _n(m["members_with_play"]),
                _n(m["eligible"]),
                _n(m["qualified"]),
                _n(m["activated"]),
                _n(m["tickets"]),
                _n(m["entries"]),
                _e(pooled or "–"),
            ]
        )
    head = ["draw", "status", "with play", "eligible", "qualified", "activated", "tickets"]
    out = [_table([*head, "entries", "pool (members / tickets)"], rows, left=2)]
    later = len(s["draws"]) - len(draws)
    if later:
        out.append(f"<p>{later} later draw(s) of the promotion were not reached.</p>")
    tier_rows = [
        [_e(d["id"])]
        + [
            f"{_n(d['summary']['by_tier'][t]['qualified'])} / "
            f"{_n(d['summary']['by_tier'][t]['tickets'])}"
            for t in TIERS
        ]
        for d in draws
    ]
    out.append("<h3>By tier (qualified / tickets)</h3>")
    out.append(_table(["draw", *TIERS], tier_rows))
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
            rows.append([_e(w["id"]), _e(w["opens"]), f"x{w['factor']:g}", "not in the rehearsal"])
            continue
        if not w["draws"]:
            rows.append([_e(w["id"]), _e(w["opens"]), f"x{w['factor']:g}", "in no draw's window"])
        for draw_id, by_side in w["draws"].items():
            for side, r in by_side.items():
                rows.append(
                    [
                        _e(w["id"]),
                        _e(w["opens"]),
                        f"x{w['factor']:g}",
                        f"{_e(draw_id)} / {_e(side)}",
                        _n(r["members"]),
                        _n(r["base_points"]),
                        _n(r["extra_points"]),
                        _n(r["points"]),
                        _n(m["outside_windows"][draw_id][side]),
                    ]
                )
    head = ["window", "opens", "factor", "draw / side", "members", "base points", "extra"]
    out.append(_table([*head, "points inside", "points outside all windows"], rows, left=4))
    draws = [d for d in m["totals"] if sum(m["totals"][d].values())]
    inside = [sum(m["totals"][d].values()) - sum(m["outside_windows"][d].values()) for d in draws]
    outside = [sum(m["outside_windows"][d].values()) for d in draws]
    if draws:
        series = {"inside windows": inside, "outside": outside}
        out.append(bars("Window points inside and outside multiplier windows", draws, series))
    out.append("<h3>Caps</h3>")
    cap_rows = [
        [_e(d["id"]), _e(t), _n(c["members"]), _n(c["tickets_removed"])]
        for d in s["draws"]
        for t, c in sorted(d["caps"].items())
    ]
    if cap_rows:
        out.append(_table(["draw", "tier", "members capped", "tickets removed"], cap_rows, 2))
    else:
        out.append("<p>No member reached a cap (or no draw has caps).</p>")
    out.append("<h3>Tickets by rule</h3>")
    rule_rows = [
        [_e(d["id"]), _e(rule), _n(r["members"]), _n(r["tickets"])]
        for d in s["draws"]
        for rule, r in d["rules"].items()
    ]
    out.append(_table(["draw", "rule", "members", "tickets"], rule_rows, left=2))
    return "".join(out)


def _leaderboards(s: Json) -> str:
    out = []
    for draw_id, board in s["leaderboards"].items():
        out.append(f"<h3>{_e(draw_id)}</h3>")
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
                rows.append([_e(p["published_at"][:16]), _e(side), _e(top or "empty")])
        out.append(_table(["published", "board", "top 3 (card, points)"], rows, left=3))
    return "".join(out) or "<p>No draw of this promotion has a public leaderboard.</p>"


def _winners(s: Json) -> str:
    out = []
    for d in s["draws"]:
        if not d["winners"] and not d["seats"]:
            continue
        counts = ", ".join(f"{k}: {v}" for k, v in sorted(d["claims"].items()))
        out.append(f"<h3>{_e(d['name'])} ({_e(d['date'])})</h3><p>claims: {_e(counts)}</p>")
        rows = [
            [
                _n(w["round"]),
                _e(w["tombola"]),
                _e(w["card"]),
                _e(w["tier"]),
                _e(w["state"]),
                _rand(w["prize_cents"]),
            ]
            for w in d["winners"]
        ]
        rows += [
            ["seat", _e(x["board"]), _e(x["card"]), _e(x["tier"]), "seated", "–"]
            for x in d["seats"]
        ]
        out.append(_table(["round", "tombola", "card", "tier", "outcome", "prize"], rows, 5))
        for note in d["exceptions"]:
            out.append(f'<p class="note">{_e(note)}</p>')
    for session in s["jackpots"]:
        if session["status"] != "run":
            continue
        out.append(f"<h3>RAPS {_e(session['id'])}</h3>")
        rows = [
            [
                _n(j["number"]),
                _e(j["at"][11:16]),
                _n(j["eligible"]),
                _n(j["attempts"]),
                _e(j["outcome"]),
                _e(j["winner"] or "–"),
                _e(j["how"] or "–"),
                _n(j["reselections"]),
            ]
            for j in session["jackpots"]
        ]
        head = ["#", "time", "eligible", "attempts", "outcome", "winner", "how", "reselected"]
        out.append(_table(head, rows, left=2, text=(4, 5, 6)))
    return "".join(out) or "<p>No draw or jackpot ran in the rehearsed days.</p>"


def _prizes(s: Json) -> str:
    p = s["prizes"]
    rows = [
        [
            _e(r["draw"]),
            _e(r["status"]),
            _n(r["winners"]),
            _rand(r["budget_cents"]),
            _rand(r["cost_cents"]),
            _rand(r["redeemed_cents"]),
            _rand(r["lapsed_cents"]),
            _rand(r["outstanding_cents"]),
        ]
        for r in p["draws"]
        if r["status"] != "after the rehearsal"
    ]
    rows += [
        [
            f"RAPS {_e(r['session'])}",
            _e(r["status"]),
            _n(r["prizes_won"]),
            _rand(r["budget_cents"]),
            _rand(r["cost_cents"]),
            "–",
            "–",
            "–",
        ]
        for r in p["jackpots"]
        if r["status"] != "after the rehearsal"
    ]
    head = ["draw / session", "status", "winners", "budget", "cost", "redeemed", "lapsed"]
    out = [_table([*head, "outstanding"], rows, left=2)]
    out.append(
        f"<p>Total: cost <b>{_rand(p['cost_cents'])}</b> of a budget of "
        f"<b>{_rand(p['budget_cents'])}</b> (where the file gives prize values).</p>"
    )
    if p["without_values"]:
        sets = ", ".join(p["without_values"])
        out.append(
            f'<p class="note">Prize sets without values in the file (the desk loads them): '
            f"{_e(sets)}. Their cost is not known; rehearse with e.g. "
            f"<code>--set prize_sets.{_e(p['without_values'][0])}.values_cents=[500000, "
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
    rows = [[f"<code>{_e(i['rule'])}</code>", _e(i["why"])] for i in items]
    return _table(["rule", "why"], rows, left=2)


def _run(s: Json) -> str:
    r = s["run"]
    rows = [
        ["promotion file", _e(r["promotion_file"])],
        ["rule changes (--set)", _e(", ".join(r["sets"]) or "none")],
        ["left out (dated before the first day)", _e(", ".join(r["left_out"]) or "none")],
        ["floor", f"{_e(r['floor'])}: {r['floor_size']['devices']:,} devices, "
                  f"{r['floor_size']['members']:,} members, seed {r['seed']}"],
        ["floor simulated", f"{_e(r['from'])} to {_e(r['floor_until'])}"],
        ["clock run until", _e(r["clock_until"])],
        ["crew model", _e(json.dumps(r["crew"]))],
        ["wall time", f"{r['wall_s']:,.1f} s, then {r.get('summary_s', 0):,.1f} s reading it"],
        ["events published / applied", f"{r['events_published']:,} / {r['applied']:,}"],
        ["events by type", _e(json.dumps(r["events_by_type"]))],
        ["dead letters", _e(json.dumps(r["dead_letters"]) if r["dead_letters"] else "none")],
        ["peak RSS: daemon (and rehearsal) / simulator",
         f"{r['daemon_peak_rss_mb']:,} MB / {r['simulator_peak_rss_mb']:,} MB"],
        ["Redis used_memory_peak / used_memory at the end",
         f"{r['redis_used_memory_peak_mb']:,} MB / {r['redis_used_memory_mb']:,} MB"],
    ]  # fmt: skip
    return _table(["", ""], rows, left=2)


def _figure(draw: Json | None, label: str) -> int | None:
    if draw is None:
        return None
    if label == "winners":
        return int(draw.get("won", 0))
    return int(draw["summary"][label])


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
            rows.append([_e(draw_id), label, _n(x), _n(y), _n(delta)])
    cost = [
        "prize cost", "", _rand(s["prizes"]["cost_cents"]), _rand(other["prizes"]["cost_cents"]), ""
    ]  # fmt: skip
    rows.append(cost)
    sets = f"this run: {', '.join(s['run']['sets']) or 'as filed'}; other: " + (
        ", ".join(other["run"]["sets"]) or "as filed"
    )
    never_a = {i["rule"] for i in s["never_triggered"]}
    never_b = {i["rule"] for i in other["never_triggered"]}
    diff = sorted(never_a ^ never_b)
    table = _table(["draw", "figure", "this run", "other run", "other − this"], rows, left=2)
    extra = f"<p>Rules that never triggered in only one of the runs: {_e(', '.join(diff))}</p>"
    return f"<p>{_e(sets)}</p>{table}{extra if diff else ''}"


def render(summary: Json, compare: Json | None = None) -> str:
    """The report as one HTML document (no external references)."""
    promo = summary["promotion"]
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>Rehearsal: {_e(promo['name'])}</title><style>{CSS}</style></head><body>",
        f"<h1>Rehearsal: {_e(promo['name'])}</h1>",
        f'<p class="sub">{_e(promo["casino"])} · {_e(promo["id"])} · promotion '
        f"{_e(promo['start'])} to {_e(promo['end'])} · rehearsed {_e(summary['run']['from'])} "
        f"to {_e(summary['run']['floor_until'])}",
        f"{' · with ' + _e(', '.join(summary['run']['sets'])) if summary['run']['sets'] else ''}"
        "</p><nav>",
    ]
    sections = [*SECTIONS, ("compare", "Compared with another run")] if compare else SECTIONS
    parts += [f'<a href="#{ident}">{_e(title)}</a>' for ident, title in sections]
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
        parts.append(f'<section id="{ident}"><h2>{_e(title)}</h2>{build[ident](summary)}</section>')
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
