"""Benchmark: `bonusd backup` and `bonusd restore` of a site of a chosen size, for the
recovery point and recovery time written in docs/deploy.md ("Backups and restores").

    .venv/bin/python loadtests/bench_backup.py [--members 200000] [--days 1]
        [--seen-hours 4] [--ids-per-hour 300000] [--records 2000]

Set-up (not timed): two redis-servers of its own on spare ports in a temporary folder
(A: AOF, `appendfsync always`, as deploy/redis/bonusd.conf; B: empty), and on A a site
shaped like a casino's: `--members` member hashes (ten fields each), `--days` of day
totals for each member, `--seen-hours` de-duplication sets of `--ids-per-hour` event ids,
an audit trail of `--records` records. Measured, in this process (`take_backup`,
`restore_backup`, the code the commands run): the snapshot's size and the backup's time;
the restore's time into B, its keys per second; the process's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.draws.seedkey import load_seal
from bonusd.infra.keys import Keys
from bonusd.kiosk.receiptkey import load_receipt_key
from bonusd.service.backup import take_backup
from bonusd.service.restore import restore_backup
from bonusd.settings import Settings
from simulators.local.services import LocalRedis

SITE = "bench"
BATCH = 5000


async def fill(url: str, options: argparse.Namespace) -> tuple[int, int]:
    """The site's keys on the Redis at `url`; (keys, used memory in bytes)."""
    keys = Keys("bonusd", SITE)
    redis = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        pipe = redis.pipeline(transaction=False)
        for n in range(options.members):
            card = f"{6_001_000_000 + n}"
            fields: dict[Any, Any] = {f"field{k}": f"value {n} {k}" for k in range(10)}
            pipe.hset(keys.member(card), mapping=fields)
            for day in range(options.days):
                pipe.hset(
                    keys.day(f"2026-10-{1 + day:02d}", card), mapping={"points": n, "games": 3}
                )
            if n % BATCH == BATCH - 1:
                await pipe.execute()
        await pipe.execute()
        for hour in range(options.seen_hours):
            name = keys.absolute(f"seen:2026100{1 + hour // 24}{hour % 24:02d}")
            for start in range(0, options.ids_per_hour, BATCH):
                ids = [f"egm-{hour}-{i:012d}" for i in range(start, start + BATCH)]
                await redis.sadd(name, *ids)
        store, at = AuditStore(redis, keys), dt.datetime(2026, 10, 1, 12, 0, tzinfo=dt.UTC)
        for n in range(options.records):
            moment = at + dt.timedelta(seconds=n)
            await store.append(at=moment, actor="bench", kind=Kind.RULE_CHANGE, payload={"n": n})
        return int(await redis.dbsize()), int((await redis.info("memory"))["used_memory"])
    finally:
        await redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--seen-hours", type=int, default=4)
    parser.add_argument("--ids-per-hour", type=int, default=300_000)
    parser.add_argument("--records", type=int, default=2000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as tmp:
        folder = Path(tmp)
        live = LocalRedis(folder / "a", appendfsync="always")
        spare = LocalRedis(folder / "b")
        with live, spare:
            conf = Settings(
                site=SITE,
                redis_url=live.url,
                seed_key_file=folder / "seed-key",
                receipt_key_file=folder / "receipt-key",
                retention_audit_archive=folder / "archive",
                digest_dir=folder / "digests",
            )
            load_seal(conf.seed_key_file)
            load_receipt_key(conf.receipt_key_file)
            print("filling site", SITE, "...", flush=True)
            count, used = asyncio.run(fill(live.url, options))
            began = time.monotonic()
            backup, manifest = take_backup(conf, folder / "backups")
            backup_s = time.monotonic() - began
            size = manifest["snapshot"]["bytes"]
            print(f"site: {count:,} keys, Redis used_memory {used / 1e6:,.0f} MB")
            print(f"backup: snapshot {size / 1e6:,.1f} MB in {backup_s:.2f} s")
            restored = restore_backup(conf.model_copy(update={"redis_url": spare.url}), backup)
            print(
                f"restore: {restored.keys:,} keys in {restored.seconds:.2f} s "
                f"({restored.keys / restored.seconds:,.0f} keys/s), "
                f"audit trail of {restored.audit_records:,} records verified"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak:,.0f} MB")


if __name__ == "__main__":
    main()
