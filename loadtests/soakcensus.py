"""What the soak samples and how it judges a run: the daemon's RSS, Redis's memory and its
keys by family (a SCAN of the site, `bonusd.infra.keys.family`), with each family's bytes
estimated from `MEMORY USAGE` of a sample of its keys; and the verdicts at the end.

Families are judged by what the retention policy (docs/retention.md) says of them:

- retained by policy, allowed to grow during a run: event ids within the de-duplication
  window (`seen`), the gaming day's totals (`day`, `dayspend`, `visits`), the campaign's
  data (standings, pools, ledgers, audit trail, ...) and dead letters (none expected);
- bounded: everything else (sessions and places on the floor, the registry, stats, ...):
  after the warm-up it may move with the floor's occupancy but not grow with time.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import redis

from bonusd.infra.keys import family

RETAINED = frozenset(
    {"seen", "day", "dayspend", "visits", "deadletters", "token"}  # time-bound: the sweeper
    | {"pwf", "pwd", "pm", "act", "lb", "lbpub", "lbhist", "seats", "pool", "poolfile"}  # campaign
    | {"rapsfloor", "seed", "fired", "schedule-seed", "ledger", "audit", "sms", "deadlines"}
    | {"letters"}
)
PER_FAMILY_SAMPLE = 40  # keys whose MEMORY USAGE is read per family
MB = 1024 * 1024


@dataclass
class Census:
    """The site's keys by family and their estimated bytes."""

    keys: Counter[str] = field(default_factory=Counter)
    bytes: dict[str, float] = field(default_factory=dict)
    seen_ids: int = 0  # event ids held for de-duplication (sum of the seen sets)

    def retained_mb(self) -> float:
        return sum(b for f, b in self.bytes.items() if f in RETAINED) / MB

    def bounded_mb(self) -> float:
        return sum(b for f, b in self.bytes.items() if f not in RETAINED) / MB


def take_census(r: redis.Redis, base: str, rng: random.Random) -> Census:
    """SCAN the site's keys; per family a count and an estimate of its bytes. The member
    registry (470,000 `member:` hashes, static during a run) is skipped by the SCAN's
    pattern and counted from the `members` set instead, so a census moves only the keys
    that change."""
    out = Census()
    samples: dict[str, list[str]] = {}
    seen_keys: list[str] = []
    for raw in r.scan_iter(match=f"{base}[^m]*", count=2000):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        fam = family(key[len(base) :])
        out.keys[fam] += 1
        n = out.keys[fam]
        if fam == "seen":
            seen_keys.append(key)
        pool = samples.setdefault(fam, [])
        if len(pool) < PER_FAMILY_SAMPLE:
            pool.append(key)
        elif (j := rng.randrange(n)) < PER_FAMILY_SAMPLE:  # reservoir sample
            pool[j] = key
    for name in ("members", "member-index", "multipliers-active"):
        if r.exists(f"{base}{name}"):
            out.keys[name] += 1
            samples[name] = [f"{base}{name}"]
    cards = r.srandmember(f"{base}members", PER_FAMILY_SAMPLE) or []
    out.keys["member"] = int(r.scard(f"{base}members"))
    samples["member"] = [f"{base}member:{c.decode() if isinstance(c, bytes) else c}" for c in cards]
    for fam, keys in samples.items():
        pipe = r.pipeline(transaction=False)
        for key in keys:
            pipe.memory_usage(key)
        sizes = [int(s) for s in pipe.execute() if s is not None]
        out.bytes[fam] = statistics.fmean(sizes) * out.keys[fam] if sizes else 0.0
    if seen_keys:
        pipe = r.pipeline(transaction=False)
        for key in seen_keys:
            pipe.scard(key)
        out.seen_ids = sum(int(n) for n in pipe.execute())
    return out


def redis_memory(r: redis.Redis) -> tuple[float, int]:
    """used_memory (MB) and the number of keys of the database."""
    info: dict[str, Any] = r.info("memory")
    return int(info["used_memory"]) / MB, int(r.dbsize())


@dataclass(frozen=True)
class Tolerances:
    rss_fraction: float = 0.10  # RSS after the warm-up may grow this much ...
    rss_mb: float = 24.0  # ... or this many MB, whichever is larger
    bounded_fraction: float = 0.10  # bounded families' bytes, the same way
    bounded_mb: float = 16.0
    unexplained_fraction: float = 0.05  # Redis growth not in a retained family
    unexplained_mb: float = 32.0


def verdicts(
    warm: dict[str, Any], end: dict[str, Any], log: dict[str, Any], tol: Tolerances
) -> list[dict[str, Any]]:
    """Each check of the soak: name, figures, limit, ok. `warm` and `end` are samples
    (with a census) at the end of the warm-up and at the end of the run."""
    checks = []

    def check(name: str, value: float, limit: float, detail: str) -> None:
        checks.append(
            {
                "check": name,
                "value": round(value, 1),
                "limit": round(limit, 1),
                "ok": value <= limit,
                "detail": detail,
            }
        )

    rss_growth = end["rss_mb"] - warm["rss_mb"]
    check(
        "daemon RSS growth after warm-up (MB)",
        rss_growth,
        max(tol.rss_mb, tol.rss_fraction * warm["rss_mb"]),
        f"{warm['rss_mb']:.1f} MB after warm-up -> {end['rss_mb']:.1f} MB at the end",
    )
    bounded = end["bounded_mb"] - warm["bounded_mb"]
    check(
        "bounded families' growth (MB)",
        bounded,
        max(tol.bounded_mb, tol.bounded_fraction * warm["bounded_mb"]),
        "sessions, places, registry, stats: may move with occupancy, not grow with time",
    )
    used = end["redis_used_mb"] - warm["redis_used_mb"]
    retained = end["retained_mb"] - warm["retained_mb"]
    check(
        "Redis growth not retained by policy (MB)",
        used - retained,
        max(tol.unexplained_mb, tol.unexplained_fraction * warm["redis_used_mb"]),
        f"used_memory +{used:.1f} MB, of which retained by policy +{retained:.1f} MB "
        "(event ids in the de-duplication window, the day's totals, the campaign)",
    )
    others = int(end["families"].get("other", 0)) - int(warm["families"].get("other", 0))
    check("keys of no known family (growth)", others, 0, "every key belongs to a family")
    check("ERROR lines in the daemon log", log["errors"], 0, "; ".join(log["error_lines"][:3]))
    return checks
