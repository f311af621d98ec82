"""HTML pieces of the rehearsal report: its style sheet, escaping, numbers, money and
tables (the report must be one self-contained file, so all of it is written inline)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

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


def esc(value: object) -> str:
    """Text made safe for HTML."""
    return html.escape(str(value))


def num(value: object) -> str:
    """A number with thousands separators; "–" for none."""
    if value is None:
        return "–"
    if isinstance(value, int | float):
        return f"{value:,.0f}" if isinstance(value, int) or value == int(value) else f"{value:,.1f}"
    return esc(value)


def rand(cents: int | float | None) -> str:
    """Cents as rand, e.g. "R 1,250.00"; "–" for none."""
    return "–" if cents is None else f"R {cents / 100:,.2f}"


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[object]],
    left: int = 1,
    text: Sequence[int] = (),
) -> str:
    """A table; the first `left` columns and those in `text` are text (left-aligned), the
    others numbers."""
    words = set(range(left)) | set(text)
    th = "".join(
        f'<th class="{"l" if i in words else ""}">{esc(h)}</th>' for i, h in enumerate(head)
    )
    body = [f"<tr>{th}</tr>"] if any(head) else []
    for row in rows:
        cells = "".join(
            f'<td class="l">{c}</td>' if i in words else f"<td>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table>{''.join(body)}</table>"
