"""What the soak samples and how it judges a run: the daemon's RSS, Redis's memory and its
keys by family (a SCAN of the site, `bonusd.infra.keys.family`), with each family's bytes
as Redis's allocator holds them (`key_bytes`); and the verdicts at the end.

A key's bytes are its `MEMORY USAGE ... SAMPLES 0` (every element, not an estimate from
5) plus what that figure leaves out: Redis counts a dict entry as `sizeof(dictEntry)`, 24
bytes, but jemalloc serves it from its 32-byte size class. So each key is 8 bytes more
(its keyspace entry), and a hash, set or sorted set in a hash-table encoding (`hashtable`,
`skiplist`) 8 bytes more per element and 8 for its dict header (56 bytes in a 64-byte
class). Measured on redis-server 7.0.15 by deleting each family in turn (synchronous
`DEL`) and reading `used_memory` before and after: with the slack added a family's
figure is its freed bytes but for a list's quicklist nodes (8 bytes per ~8 KB node) and
the small integers Redis shares (16 bytes counted for each that are not held).

Families are judged by what the retention policy (docs/retention.md) says of them:

- retained by policy, allowed to grow during a run: event ids within the de-duplication
  window (`seen`), the gaming day's totals (`day`, `dayspend`, `visits`), the campaign's
  data (standings, pools, ledgers, audit trail, ...) and dead letters (none expected);
- bounded: everything else (sessions and places on the floor, the registry, stats, ...):
  after the warm-up it may move with the floor's occupancy but not grow with time.
"""

from __future__ import annotations

import random
import time
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
PER_FAMILY_SAMPLE = 40  # keys whose bytes are read per family
MB = 1024 * 1024
DICT_ENTRY_SLACK = 8  # a dictEntry: 24 bytes counted, 32 allocated (jemalloc's size class)
DICT_HEADER_SLACK = 8  # a collection's dict: 56 bytes counted, 64 allocated
HASHED = frozenset({"hashtable", "skiplist"})  # encodings with a dict entry per element
REGISTRY_SETS = frozenset({"members", "member-index"})
COLLECTIONS = frozenset({"hash", "set", "zset"})  # the types that can be hash-table encoded


@dataclass
class Census:
    """The site's keys by family and their bytes (`key_bytes`); `slack`, the part of them
    that `MEMORY USAGE` does not count (dict entries' size-class slack)."""

    keys: Counter[str] = field(default_factory=Counter)
    bytes: dict[str, float] = field(default_factory=dict)
    slack: dict[str, float] = field(default_factory=dict)
    seen_ids: int = 0  # event ids held for de-duplication (sum of the seen sets)

    def retained_mb(self) -> float:
        return sum(b for f, b in self.bytes.items() if f in RETAINED) / MB

    def bounded_mb(self) -> float:
        return sum(b for f, b in self.bytes.items() if f not in RETAINED) / MB

    def add(self, fam: str, size: float, slack: float) -> None:
        self.bytes[fam] = self.bytes.get(fam, 0.0) + size
        self.slack[fam] = self.slack.get(fam, 0.0) + slack


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def key_bytes(r: redis.Redis, keys: list[str], samples: int | None = 0) -> list[tuple[int, int]]:
    """Per key, (bytes, slack): `MEMORY USAGE key SAMPLES 0` (`samples`: None for Redis's
    default estimate from 5 elements) plus the slack of its dict entries (the module's
    docstring), and that slack. A key gone meanwhile is (0, 0)."""
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key, samples=samples)
        pipe.object("encoding", key)
    answers = pipe.execute()
    usage = [int(size or 0) for size in answers[0::2]]
    slack = [DICT_ENTRY_SLACK if size else 0 for size in usage]
    hashed = [at for at, enc in enumerate(answers[1::2]) if enc and _text(enc) in HASHED]
    if hashed:
        pipe = r.pipeline(transaction=False)
        for at in hashed:
            pipe.type(keys[at])
        kinds = [_text(kind) for kind in pipe.execute()]
        pipe = r.pipeline(transaction=False)
        length_of = {"hash": pipe.hlen, "set": pipe.scard, "zset": pipe.zcard}
        for at, kind in zip(hashed, kinds, strict=True):
            length_of.get(kind, pipe.exists)(keys[at])
        for at, kind, length in zip(hashed, kinds, pipe.execute(), strict=True):
            if kind in COLLECTIONS and usage[at]:
                slack[at] += DICT_HEADER_SLACK + DICT_ENTRY_SLACK * int(length)
    return [(size + extra, extra) for size, extra in zip(usage, slack, strict=True)]


def take_census(
    r: redis.Redis, base: str, rng: random.Random | None = None, *, exact: bool = False
) -> Census:
    """SCAN the site's keys; per family a count and its bytes (`key_bytes`): of a sample
    of `PER_FAMILY_SAMPLE` keys, their mean times the count; `exact`, of every key, in
    pipelines of 1,000. The member registry (470,000 `member:` hashes, static during a
    run) is skipped by the SCAN's pattern and counted from the `members` set instead, so
    a census moves only the keys that change."""
    if exact:
        return _exact_census(r, base)
    rng = rng or random.Random(7)
    out = Census()
    samples: dict[str, list[str]] = {}
    seen_keys: list[str] = []
    for raw in r.scan_iter(match=f"{base}[^m]*", count=2000):
        key = _text(raw)
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
    _sampled(r, out, samples, whole_registry=False)
    out.seen_ids = _seen_ids(r, seen_keys)
    return out


def _sampled(
    r: redis.Redis, out: Census, samples: dict[str, list[str]], *, whole_registry: bool
) -> None:
    """Each sampled family's bytes: its sample's mean times its count. The registry's two
    sets (470,000 elements each, static during a run) every element only if
    `whole_registry`: that blocks Redis for ~130 ms, once per exact census."""
    for fam, keys in samples.items():
        rough = fam in REGISTRY_SETS and not whole_registry
        sizes = [pair for pair in key_bytes(r, keys, None if rough else 0) if pair[0]]
        if sizes:
            scale = out.keys[fam] / len(sizes)
            out.add(fam, sum(s for s, _ in sizes) * scale, sum(x for _, x in sizes) * scale)
        else:
            out.add(fam, 0.0, 0.0)


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
    samples["member"] = [f"{base}member:{_text(c)}" for c in cards]


def _seen_ids(r: redis.Redis, seen_keys: list[str]) -> int:
    if not seen_keys:
        return 0
    pipe = r.pipeline(transaction=False)
    for key in seen_keys:
        pipe.scard(key)
    return sum(int(n) for n in pipe.execute())


def _exact_census(r: redis.Redis, base: str, batch: int = 1000) -> Census:
    """Every scanned key's bytes (`key_bytes`), summed by family; the member registry's
    sets whole and its hashes sampled as in `take_census` (they are static during a run)."""
    out = Census()
    seen_keys: list[str] = []
    pending: list[tuple[str, str]] = []

    def flush() -> None:
        sizes = key_bytes(r, [key for key, _ in pending])
        for (_, fam), (size, slack) in zip(pending, sizes, strict=True):
            out.add(fam, size, slack)
        pending.clear()

    for raw in r.scan_iter(match=f"{base}[^m]*", count=2000):
        key = _text(raw)
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
    _sampled(r, out, samples, whole_registry=True)
    out.seen_ids = _seen_ids(r, seen_keys)
    return out


def census_sample(r: redis.Redis, base: str, *, exact: bool) -> dict[str, Any]:
    """A census (`take_census`) as a sample's fields, with used_memory and MEMORY STATS
    read together just before it: the soak takes an exact census with the clock paused
    and the daemon drained, so these figures and every key's bytes describe one state.
    `census_drift`: how much used_memory moved while the census ran (kiosk activations,
    clients' buffers), the figures' uncertainty."""
    started = time.monotonic()
    used, stats = int(r.info("memory")["used_memory"]), memory_stats(r)
    found = take_census(r, base, exact=exact)
    return {
        "families": dict(found.keys),
        "family_bytes": {fam: round(size) for fam, size in found.bytes.items()},
        "family_slack": {fam: round(size) for fam, size in found.slack.items()},
        "census_exact": exact,
        "census_s": round(time.monotonic() - started, 2),
        "memory_stats": stats,
        "redis_used_bytes": used,
        "redis_used_mb": round(used / MB, 1),
        "census_drift": int(r.info("memory")["used_memory"]) - used,
    }


def memory_stats(r: redis.Redis) -> dict[str, int]:
    """Redis's own accounting (`MEMORY STATS`, the keyspace's `expires` from `INFO
    keyspace`): the keyspace's tables, clients' buffers, scripts, replication and AOF
    buffers, and the dataset, in bytes."""
    stats: dict[str, Any] = r.memory_stats()
    db0 = stats.get("db.0") or {}
    keyspace: dict[str, Any] = r.info("keyspace").get("db0") or {}
    fields = {
        "startup": "startup.allocated", "clients_normal": "clients.normal",
        "clients_slaves": "clients.slaves", "lua_caches": "lua.caches",
        "functions_caches": "functions.caches", "replication_backlog": "replication.backlog",
        "aof_buffer": "aof.buffer", "cluster_links": "cluster.links",
        "overhead_total": "overhead.total", "dataset_bytes": "dataset.bytes",
        "keys": "keys.count",
    }  # fmt: skip
    out = {name: int(stats.get(stat) or 0) for name, stat in fields.items()}
    return out | {
        "hashtable_main": int(db0.get("overhead.hashtable.main", 0)),
        "hashtable_expires": int(db0.get("overhead.hashtable.expires", 0)),
        "expires": int(keyspace.get("expires", 0)),
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
