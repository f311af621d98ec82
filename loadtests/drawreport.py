"""The table `bench_draws.py` prints: each figure beside its bare baseline of the same run,
and the draw round and RAPS pick timed on both paths (sealed seeds, and plain hex seeds
as before sealing, run in turn), with the difference of their p99 judged against the
goal."""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from drawsetup import WINNERS
from rich.table import Table

GOAL_MS = 1.0  # sealing may add at most this much to a draw round's or a RAPS pick's p99
PICK_GOAL = 10.0  # a RAPS pick's p99 within this many times a bare PING's p99
Timings = dict[str, list[float]]  # one path's samples by figure, in seconds (or counts)


def pct(values: list[float], q: float) -> float:
    """Percentile in ms (linear interpolation; with 50 runs p99 lies between the two
    slowest)."""
    return float(np.percentile(np.array(values), q)) * 1000


def _rows(table: Table, name: str, values: list[float], bare: list[float], bare_name: str) -> None:
    for q in (50, 99):
        table.add_row(
            f"{name} p{q} (ms)",
            f"{pct(values, q):.1f}",
            f"{pct(bare, q):.2f} ({bare_name})",
            f"{pct(values, q) / pct(bare, q):,.0f}x",
        )


def _paired(
    table: Table, name: str, figure: str, paths: dict[str, Timings], per_seed: float
) -> None:
    """`figure` of both paths with their PINGs, then sealed − plain at p50 (beside what
    the seeds opened should cost, `per_seed` µs more each when sealed) and at p99 (judged
    against the goal)."""
    sealed, plain = paths["sealed"], paths["plain"]
    _rows(table, f"{name}, sealed seeds", sealed[figure], sealed["ping"], "PING")
    _rows(table, f"{name}, plain hex seeds", plain[figure], plain["ping"], "PING")
    opened = statistics.median(plain["opened"])
    expected = opened * per_seed / 1000
    p50 = pct(sealed[figure], 50) - pct(plain[figure], 50)
    table.add_row(
        f"{name}: p50 sealed − plain (ms)",
        f"{p50:+.2f}",
        f"expected {expected:+.3f} ({opened:.0f} seeds opened)",
    )
    p99 = pct(sealed[figure], 99) - pct(plain[figure], 99)
    verdict = "met" if p99 <= GOAL_MS else "NOT met"
    noise = pct(sealed["ping"], 99) - pct(plain["ping"], 99)  # the same for bare PINGs
    table.add_row(
        f"{name}: p99 sealed − plain (ms)",
        f"{p99:+.2f}",
        f"goal: within {GOAL_MS:g} ms (PINGs' p99 differ by {noise:+.2f})",
        verdict,
    )


def _draw_rows(table: Table, draws: dict[str, Timings], per_seed: float) -> None:
    _paired(table, "draw round, warm desk", "warm", draws, per_seed)
    sealed, plain = draws["sealed"], draws["plain"]
    for label, got in (("sealed", sealed), ("plain", plain)):
        table.add_row(
            f"draw round, warm desk, {label}, slowest (ms)", f"{max(got['warm']) * 1e3:.1f}"
        )
    cold, fetched = pct(sealed["cold"], 50), pct(sealed["poolfile"], 50)
    runs = len(sealed["cold"])
    table.add_row(
        f"draw round, cold desk (first after restart), sealed, median of {runs} (ms)",
        f"{cold:.0f}",
        f"{fetched:.1f} (GET pool file)",
        f"{cold / fetched:,.0f}x",
    )
    table.add_row("draw round, cold desk, slowest (ms)", f"{max(sealed['cold']) * 1e3:.0f}")


def _raps_rows(
    table: Table, raps: dict[str, Timings], per_seed: float, args: argparse.Namespace
) -> None:
    sealed, plain = raps["sealed"], raps["plain"]
    eligible = {f"{statistics.median(got['eligible']):,.0f}" for got in (sealed, plain)}
    table.caption = (  # one figure: both floors are made alike (otherwise both are shown)
        f"RAPS: {args.actives:,} on the floor, {' / '.join(sorted(eligible))} eligible, "
        f"{args.churn:,} rows changed since the mirror's last sync before each pick"
    )
    _paired(table, "RAPS pick", "pick", raps, per_seed)
    for label, got in (("sealed", sealed), ("plain", plain)):
        table.add_row(f"RAPS pick, {label}, slowest (ms)", f"{max(got['pick']) * 1000:.1f}")
    ratio = pct(sealed["pick"], 99) / pct(sealed["ping"], 99)
    table.add_row(
        "RAPS pick, sealed: p99 / PING p99",
        f"{ratio:.1f}x",
        f"goal: within {PICK_GOAL:g}x",
        "met" if ratio <= PICK_GOAL else "NOT met",
    )
    for q in (50, 99):
        snap = f"{pct(sealed['snapshot'], q):.1f}"
        table.add_row(f"  floor snapshot alone, after more churn (sealed) p{q} (ms)", snap)
    _part_rows(table, sealed)
    full = f"{sealed['full_read'][0] * 1000:.1f}"
    table.add_row("floor mirror's first (whole) read, once at start (ms)", full)


def _part_rows(table: Table, sealed: Timings) -> None:
    """Where a sealed pick's time goes: each part's p50 and p99 (ms), its CPU time and
    its Redis round trips."""
    for key, got in sealed.items():
        if not key.startswith("part:"):
            continue
        label = key.removeprefix("part:")
        if label == "round trips":
            table.add_row("  Redis round trips per pick", f"{statistics.median(got):.0f}")
            continue
        table.add_row(f"  {label}, p50 / p99 (ms)", f"{pct(got, 50):.2f} / {pct(got, 99):.2f}")


def report(
    args: argparse.Namespace,
    draws: dict[str, Timings],
    raps: dict[str, Timings],
    seal_cost: tuple[float, float],
) -> Table:
    """The table; `seal_cost`: opening one seed, sealed and plain, in µs."""
    opened, plain = seal_cost
    table = Table(
        title=f"draw benchmark: {WINNERS} winners from {args.tickets:,} tickets held by "
        f"{args.members:,} members; {args.runs} runs of each path, sealed and plain in turn"
    )
    for col in ("figure", "value", "bare baseline", "ratio / verdict"):
        table.add_column(col, justify="right" if col != "figure" else "left")
    if draws:
        _draw_rows(table, draws, opened - plain)
    _raps_rows(table, raps, opened - plain, args)
    table.add_row(
        "seed opened, sealed (AES-GCM), per seed (µs)",
        f"{opened:.1f}",
        f"{plain:.2f} (plain hex opened)",
        f"{opened / plain:,.0f}x",
    )
    return table
