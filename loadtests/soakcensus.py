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


def take_census(
    r: redis.Redis, base: str, rng: random.Random | None = None, *, exact: bool = False
) -> Census:
    """SCAN the site's keys; per family a count and an estimate of its bytes. The member
    registry (470,000 `member:` hashes, static during a run) is skipped by the SCAN's
    pattern and counted from the `members` set instead, so a census moves only the keys
    that change. `exact`: the bytes of every scanned key (`MEMORY USAGE ... SAMPLES 0`, all
    of a collection's elements, in pipelines of 1,000), not a sample's mean times the count."""
    if exact:
        return _exact_census(r, base)
    rng = rng or random.Random(7)
    out = Census()
    samples: dict[str, list[str]] = {}
    seen_keys: list[str] = []
    for raw in r.scan_iter(match=f"{base}[^m]*", count=2000):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        fam = family_of(key[len(base) :])
        out.keys[fam] += 1
        n = out.keys[fam]
        if fam == "seen":
            seen_keys.append(key)
        pool = samples.setdefault(fam, [])
        if len(pool) < PER_FAMILY_SAMPLE:
            pool.append(key)
        elif (j := rng.randrange(n)) < PER_FAMILY_SAMPLE:  # reservoir sample
            pool[j] = key
    _registry(r, base, out, samples)
    for fam, keys in samples.items():
        pipe = r.pipeline(transaction=False)
        for key in keys:
            pipe.memory_usage(key)
        sizes = [int(s) for s in pipe.execute() if s is not None]
        out.bytes[fam] = statistics.fmean(sizes) * out.keys[fam] if sizes else 0.0
    out.seen_ids = _seen_ids(r, seen_keys)
    return out


def _registry(r: redis.Redis, base: str, out: Census, samples: dict[str, list[str]]) -> None:
    """The keys the SCAN's pattern skips: the registry's sets and a sample of members."""
    for name in ("members", "member-index", "multipliers-active"):
        if r.exists(f"{base}{name}"):
            out.keys[name] += 1
            samples[name] = [f"{base}{name}"]
    # the same cards every time (the set does not change during a run): the registry's
    # estimate then cancels out of a difference between two censuses
    cards = r.sscan(f"{base}members", 0, count=4 * PER_FAMILY_SAMPLE)[1][:PER_FAMILY_SAMPLE]
    out.keys["member"] = int(r.scard(f"{base}members"))
    samples["member"] = [f"{base}member:{c.decode() if isinstance(c, bytes) else c}" for c in cards]


def _seen_ids(r: redis.Redis, seen_keys: list[str]) -> int:
    if not seen_keys:
        return 0
    pipe = r.pipeline(transaction=False)
    for key in seen_keys:
        pipe.scard(key)
    return sum(int(n) for n in pipe.execute())


def _exact_census(r: redis.Redis, base: str, batch: int = 1000) -> Census:
    """Every scanned key's `MEMORY USAGE`, summed by family; the member registry sampled
    as in `take_census` (it is static during a run)."""
    out = Census()
    totals: dict[str, float] = {}
    seen_keys: list[str] = []
    pending: list[tuple[str, str]] = []

    def flush() -> None:
        pipe = r.pipeline(transaction=False)
        for key, _ in pending:
            pipe.memory_usage(key, samples=0)  # every element, not an estimate from 5
        for (_, fam), size in zip(pending, pipe.execute(), strict=True):
            totals[fam] = totals.get(fam, 0.0) + int(size or 0)
        pending.clear()

    for raw in r.scan_iter(match=f"{base}[^m]*", count=2000):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        fam = family_of(key[len(base) :])
        out.keys[fam] += 1
        if fam == "seen":
            seen_keys.append(key)
        pending.append((key, fam))
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    samples: dict[str, list[str]] = {}
    _registry(r, base, out, samples)
    for fam, keys in samples.items():
        pipe = r.pipeline(transaction=False)
        for key in keys:
            pipe.memory_usage(key)
        sizes = [int(s) for s in pipe.execute() if s is not None]
        totals[fam] = statistics.fmean(sizes) * out.keys[fam] if sizes else 0.0
    out.bytes = totals
    out.seen_ids = _seen_ids(r, seen_keys)
    return out


def memory_stats(r: redis.Redis) -> dict[str, int]:
    """Redis's own accounting (`MEMORY STATS`): the keyspace's hash tables, clients' buffers,
    scripts, and the dataset, in bytes."""
    stats: dict[str, Any] = r.memory_stats()
    db0 = stats.get("db.0") or {}
    return {
        "hashtable_main": int(db0.get("overhead.hashtable.main", 0)),
        "hashtable_expires": int(db0.get("overhead.hashtable.expires", 0)),
        "clients_normal": int(stats.get("clients.normal", 0)),
        "lua_caches": int(stats.get("lua.caches", 0)),
        "overhead_total": int(stats.get("overhead.total", 0)),
        "dataset_bytes": int(stats.get("dataset.bytes", 0)),
        "keys": int(stats.get("keys.count", 0)),
    }


def newest_event_ms(r: redis.Redis, lastseen_key: str) -> int | None:
    """The newest event applied (ms, simulated): the top of the floor's `lastseen` zset."""
    top = r.zrevrange(lastseen_key, 0, 0, withscores=True)
    return int(top[0][1]) if top else None


def family_of(relative: str) -> str:
    """The key's family (`bonusd.infra.keys.family`); a key of no known family is
    `other:{its first segment}`, so a report can say what it is."""
    fam = family(relative)
    return fam if fam != "other" else f"other:{relative.split(':', 1)[0]}"


def redis_memory(r: redis.Redis) -> tuple[float, int]:
    """used_memory (MB) and the number of keys of the database."""
    info: dict[str, Any] = r.info("memory")
    return int(info["used_memory"]) / MB, int(r.dbsize())


def unknown_keys(families: dict[str, int]) -> int:
    """Keys of no known family in a census's counts."""
    return sum(int(n) for fam, n in families.items() if fam.startswith("other"))


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
    others = unknown_keys(end["families"]) - unknown_keys(warm["families"])
    check("keys of no known family (growth)", others, 0, "every key belongs to a family")
    check("ERROR lines in the daemon log", log["errors"], 0, "; ".join(log["error_lines"][:3]))
    return checks
