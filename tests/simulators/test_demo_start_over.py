"""`bonusd demo` starts over: the site's keys and the previous run's audit archive and
digests go, so a second run does not find an archive its new trail cannot extend, nor
digests it contradicts (it logged ERRORs)."""

from __future__ import annotations

import uuid

import redis.asyncio as aioredis

from bonusd.audit.anchor import digest_folder
from bonusd.audit.archive import site_archive
from bonusd.settings import Settings
from simulators.demo.main import Demo, DemoOptions


async def test_a_demo_starts_over_without_the_previous_runs_archive(
    settings: Settings, redis_url: str
) -> None:
    mine = settings.model_copy(update={"key_prefix": f"t{uuid.uuid4().hex[:10]}"})
    demo = Demo(mine, DemoOptions())
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await r.set(f"{demo.keys.base}audit", "the previous run's trail")
        root = demo.settings.retention_audit_archive
        archive = site_archive(root, demo.settings.key_prefix, demo.settings.site)
        archive.mkdir(parents=True)
        (archive / "audit-2025-10.jsonl").write_text("{}\n", encoding="utf-8")
        other = site_archive(root, "another-prefix", demo.settings.site)
        other.mkdir(parents=True)
        digests = digest_folder(demo.settings.digest_dir, demo.keys.prefix, demo.settings.site)
        digests.mkdir(parents=True)
        (digests / "digest-2026-10-03.txt").write_text("the previous run's\n", encoding="utf-8")
        assert await demo._start_over(r) == 1
        assert not archive.exists()
        assert not digests.exists()  # they anchor the trail just deleted
        assert other.is_dir()  # another prefix's archive is not the demo's
        assert await r.get(demo.lock) == demo.owner
    finally:
        await r.delete(demo.lock)
        await r.aclose()
