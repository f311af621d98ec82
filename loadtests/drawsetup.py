"""Set-up of the draw benchmark (`bench_draws.py`, not timed): the two bench sites, sealed
and plain, each with its own key prefix and the same throwaway promotion (temporary TOML,
real loader); the members imported through the real import path; the entry pool's
ticket counts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import redis.asyncio as aioredis
from floorseed import bench_store
from rich.progress import Progress
from sealcost import SEAL, PlainSeal

from bonusd.draws.seal import SeedSeal
from bonusd.infra.keys import Keys
from bonusd.promotions import Promotion, load_promotion
from bonusd.registry.records import Member, Tier

PID = "bench-draws"
WINNERS = 15
FIRST_DAY = dt.date(2027, 1, 4)

PROMOTION = """\
format = 1
id = "{pid}"
name = "Draw benchmark"
casino = "Bench"
site = "{site}"
timezone = "Africa/Johannesburg"
gaming_day_start = "08:00"
start = {start}
end = {end}

[prize_sets.reveal]
kind = "reveal"
description = "Each verified winner picks one reveal."
values_cents = []

[draw_series.nightly]
name = "Nightly draw"
dates = [{dates}]
mode = "electronic"
system = "TEEDS"
tombolas = "pooled"
prize_set = "reveal"
window = {{ kind = "play_window", start = "08:00", end = "20:00" }}
qualification = {{ kind = "play_in_window", sides = ["slots", "tables"] }}

[draw_series.nightly.tickets]
per_points = 100
min_one_if_played = true

[draw_series.nightly.activation]
channels = ["kiosk", "app"]
app_requires_active = true
opens = "08:00"
bin_close = "20:00"

[[draw_series.nightly.rounds]]
time = "20:00"
winners = {winners}

[jackpot_series.jackpot]
name = "Bench Jackpot"
dates = [{jp_day}]
start = "14:00"
end = "21:00"
areas = ["main", "smoking"]
min_spend_cents = 10000
times = {{ every_minutes = 1, first = "14:01", last = "{jp_last}" }}
active_play_minutes = 5
prize_set = "reveal"
"""


@dataclass(frozen=True)
class BenchSite:
    """One path of the benchmark: its own site (every key under its own prefix) and
    promotion, the same data sizes as the other path's, and the seal its runners keep
    their seeds with."""

    label: str
    keys: Keys
    promotion: Promotion
    seal: SeedSeal


def bench_sites(tag: str, n_draws: int, folder: Path) -> list[BenchSite]:
    """The real path (seeds sealed with AES-GCM under a key, as in production) and the
    path from before sealing (seeds kept as plain hex, `PlainSeal`), in that order."""
    sites = []
    for label, suffix, seal in (("sealed", "", SEAL), ("plain", "p", PlainSeal())):
        site = f"bdraw{tag}{suffix}"
        promotion = _promotion(site, n_draws, folder / label)
        sites.append(BenchSite(label, Keys("bonusd", site), promotion, seal))
    return sites


def _promotion(site: str, n_draws: int, folder: Path) -> Promotion:
    days = [FIRST_DAY + dt.timedelta(days=i) for i in range(n_draws)]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{PID}.toml"
    path.write_text(
        PROMOTION.format(
            pid=PID,
            site=site,
            start=days[0].isoformat(),
            end=(days[-1] + dt.timedelta(days=1)).isoformat(),
            jp_day=(days[-1] + dt.timedelta(days=1)).isoformat(),
            dates=", ".join(d.isoformat() for d in days),
            winners=WINNERS,
            jp_last=jackpot_instant(n_draws).strftime("%H:%M"),
        )
    )
    return load_promotion(path)


def jackpot_instant(runs: int) -> dt.time:
    """The session (the day after the last draw: the audit trail is in time order) has a
    jackpot each minute from 14:01; all are run at the last one's instant (a jackpot may
    run late, never early), so one floor snapshot serves all."""
    return (dt.datetime.combine(FIRST_DAY, dt.time(14, 0)) + dt.timedelta(minutes=runs)).time()


def member_cards(n: int) -> list[str]:
    return [f"8{i:09d}" for i in range(n)]


async def import_members(r: aioredis.Redis, keys: Keys, cards: list[str]) -> None:
    rng = np.random.default_rng(7)
    grades = ["10", "J", "Q", "K", "A"]
    tiers = rng.choice(grades, size=len(cards), p=[0.4, 0.3, 0.18, 0.08, 0.04]).tolist()
    app = (rng.random(len(cards)) < 0.35).tolist()
    floor = bench_store(r, keys)
    born = dt.date(1980, 1, 1)
    members = [
        Member(card=c, name=f"M {i}", tier=Tier(tiers[i]), app_user=app[i], date_of_birth=born)
        for i, c in enumerate(cards)
    ]
    with Progress(transient=True) as bar:  # written in atomic batches, as the CLI does
        task = bar.add_task(f"importing members ({keys.site})", total=len(members))
        await floor.import_members(members, progress=lambda n: bar.advance(task, n))


def ticket_counts(cards: list[str], tickets: int) -> dict[str, int]:
    """Exactly `tickets` tickets over the cards: one each, the rest spread log-normally."""
    if tickets < len(cards):
        raise SystemExit("--tickets must be at least --members (every holder has a ticket)")
    rng = np.random.default_rng(11)
    weights = rng.lognormal(0.0, 1.2, size=len(cards))
    extra = rng.multinomial(tickets - len(cards), weights / weights.sum())
    return {card: 1 + int(n) for card, n in zip(cards, extra.tolist(), strict=True)}
