"""Small inline SVG charts for the rehearsal report: grouped bars and lines.

No plotting library is installed in the project (matplotlib is not a dependency and is
not worth one for a handful of charts), and the report must be one self-contained file,
so the charts are written as SVG text: scalable, printable, and searchable in the page.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

PALETTE = ("#1f6feb", "#d97706", "#15803d", "#b91c1c", "#7c3aed", "#0e7490", "#a16207")
WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 44, 48, 64


def _nice_max(value: float) -> float:
    """A round number at or above `value` for the top of an axis."""
    if value <= 0:
        return 1.0
    step = 10.0 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * step:
            return m * step
    return 10 * step


def _short(value: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _frame(title: str, top: float, legend: Sequence[str]) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM
    out = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{html.escape(title)}" class="chart">',
        f'<text x="{LEFT}" y="16" class="t">{html.escape(title)}</text>',
    ]
    for i in range(5):
        y = TOP + plot_h - plot_h * i / 4
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="g"/>')
        label = _short(top * i / 4)
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="y">{label}</text>')
    x = LEFT
    for i, name in enumerate(legend):  # one row under the title
        colour = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="24" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="33" class="l">{html.escape(name)}</text>')
        x += 14 + 6 * len(name) + 16
    return out


def _x_label(x: float, text: str, many: bool) -> str:
    y = HEIGHT - BOTTOM + 14
    if many:
        return (
            f'<text x="{x:.1f}" y="{y}" class="x" transform="rotate(-35 {x:.1f} {y})" '
            f'text-anchor="end">{html.escape(text)}</text>'
        )
    return f'<text x="{x:.1f}" y="{y}" class="x" text-anchor="middle">{html.escape(text)}</text>'


def bars(title: str, categories: Sequence[str], series: Mapping[str, Sequence[float]]) -> str:
    """Grouped bars: one group per category, one bar per series."""
    names = list(series)
    top = _nice_max(max((v for vs in series.values() for v in vs), default=0.0))
    out = _frame(title, top, names if len(names) > 1 else [])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    group = plot_w / max(1, len(categories))
    bar = group * 0.8 / max(1, len(names))
    many = len(categories) > 8
    for c, category in enumerate(categories):
        x0 = LEFT + c * group + group * 0.1
        for s, name in enumerate(names):
            value = series[name][c]
            h = plot_h * value / top
            x, y = x0 + s * bar, TOP + plot_h - h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(bar - 1, 1):.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}"><title>{html.escape(name)} '
                f"{html.escape(category)}: {value:,.0f}</title></rect>"
            )
        out.append(_x_label(x0 + group * 0.4, category, many))
    out.append("</svg>")
    return "".join(out)


def lines(title: str, x_labels: Sequence[str], series: Mapping[str, Sequence[float | None]]) -> str:
    """One line per series over the same x positions; a None leaves a gap."""
    names = list(series)
    values = [v for vs in series.values() for v in vs if v is not None]
    top = _nice_max(max(values, default=0.0))
    out = _frame(title, top, names)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(1, len(x_labels) - 1) if len(x_labels) > 1 else 0.0
    many = len(x_labels) > 8
    for i, label in enumerate(x_labels):
        out.append(_x_label(LEFT + i * step, label, many))
    for s, name in enumerate(names):
        colour = PALETTE[s % len(PALETTE)]
        points = [
            (LEFT + i * step, TOP + plot_h - plot_h * v / top)
            for i, v in enumerate(series[name])
            if v is not None
        ]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for (x, y), v in zip(points, [v for v in series[name] if v is not None], strict=True):
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                f"<title>{html.escape(name)}: {v:,.0f}</title></circle>"
            )
    out.append("</svg>")
    return "".join(out)
