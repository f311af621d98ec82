"""Campaign rehearsal: a whole promotion on a simulated floor, through MQTT into the daemon.

    prepared = prepare(RehearsalPlan(Path("promotions/golden-horse-mega-points-chase.toml")))
    summary = await rehearse(prepared, redis_url=..., mqtt_url=...)

How it runs (docs/rehearsal.md has the operator's view):

- The promotion file is read as TOML, changed by `--set` (`promotions.overrides`), left
  without the draws and sessions dated before the first day, written back as a promotion
  file, checked like any other and loaded by a real `bonusd.service.root.Service` under a
  private key prefix and topic prefix, so nothing else at that Redis or broker is touched.
- The floor's members and devices go in through the daemon's import; the simulator runs
  as a child process (`simulators.stepped`) publishing aggregated `play` events over MQTT.
- Simulated time is the site's shared clock, paused and moved by the rehearsal in
  lock-step with the daemon (`rehearsal_driver`): at each instant T at which something
  happens (a scheduled action, a claim deadline, members activating) every event stamped
  before T is published and committed, the clock jumps to T, the rehearsal waits until
  the scheduler has run every action up to T and the claim timers every deadline, and
  people act (`rehearsal_crew`). Time runs as fast as the daemon acknowledges, and no bin,
  draw, RAPS jackpot or claim ever sees a floor ahead of or behind its own instant.
- Draw and jackpot seeds and random jackpot times come from the rehearsal seed (stored
  before the daemon commits them): a rerun with the same options gives the same winners.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from rich.progress import Progress

from bonusd.draws.book import DrawPlan
from bonusd.draws.seal import SeedSeal
from bonusd.draws.seedkey import load_seal
from bonusd.errors import BonusdError
from bonusd.infra.keys import Keys
from bonusd.infra.sharedclock import SharedClock
from bonusd.promotions import Promotion
from bonusd.promotions.schedule import jackpot_times
from bonusd.registry.files import parse_text
from bonusd.registry.records import Device, Member
from bonusd.service.root import Service
from bonusd.settings import Settings, load_settings
from simulators import (
    Floor,
    build_floor,
    write_devices_csv,
    write_members_csv,
)
from simulators.rehearsal.crew import Crew
from simulators.rehearsal.driver import Commits, Driver, progress_bar
from simulators.rehearsal.feed import Feed
from simulators.rehearsal.plan import Prepared
from simulators.rehearsal.summary import Observer, RunFigures, summarise
from simulators.stepped import peak_rss_kb

logger = logging.getLogger(__name__)


def fixed_secrets(keys: Keys, promotion: Promotion, seed: int, seal: SeedSeal) -> dict[str, str]:
    """The draw and jackpot seeds (sealed with the rehearsal daemon's key, as the runners
    keep them) and the random-times seed of a rehearsal, from its seed, under the keys the
    runners and the scheduler keep them in; stored with SET NX before the daemon commits
    any."""
    names: list[str] = []
    for draw in promotion.draw_list:
        plan = DrawPlan.of(promotion, draw)
        names += [keys.seed(plan.subject, t, str(r)) for t, r in plan.keys]
    for session in promotion.jackpot_sessions:
        count = session.times.random or len(jackpot_times(promotion, session))
        subject = f"{promotion.id}.{session.id}"
        names += [keys.seed(subject, "raps", str(n)) for n in range(1, count + 1)]
    # derived from the name without the site's base, as before (same seed, same winners)
    sealed = {
        key: seal.seal(key, bytes.fromhex(_derived(seed, key.removeprefix(keys.base))))
        for key in names
    }
    times = keys.schedule_seed(promotion.id)
    return {times: _derived(seed, times.removeprefix(keys.base))} | sealed


def _derived(seed: int, name: str) -> str:
    return hashlib.blake2b(f"bonusd-rehearsal/{seed}/{name}".encode(), digest_size=32).hexdigest()


async def rehearse(
    prepared: Prepared,
    *,
    redis_url: str,
    mqtt_url: str,
    keep: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Run the rehearsal and return its summary (JSON-ready); the daemon's keys are
    deleted afterwards unless `keep` (their prefix is `summary["run"]["key_prefix"]`)."""
    p, plan = prepared.promotion, prepared.plan
    prefix = f"rehearsal-{secrets.token_hex(4)}"
    keys = Keys(prefix, p.site)
    redis = aioredis.Redis.from_url(redis_url, decode_responses=True)
    started = time.monotonic()
    try:
        memory_before: dict[str, Any] = await redis.info("memory")
        with tempfile.TemporaryDirectory(prefix="bonusd-rehearsal-") as tmp:
            folder = Path(tmp)
            key_file = folder / "seed-key"  # the private daemon's seed key
            key_file.touch(mode=0o600)
            key_file.write_text(secrets.token_hex(32), encoding="ascii")
            seal = load_seal(key_file)
            for name, value in fixed_secrets(keys, p, plan.seed, seal).items():
                await redis.set(name, value, nx=True)
            (folder / f"{p.id}.toml").write_text(prepared.text, encoding="utf-8")
            settings = _daemon_settings(
                prepared, folder, redis_url=redis_url, mqtt_url=mqtt_url, prefix=prefix
            )
            clock = await SharedClock.connect(
                redis, SharedClock.site_prefix(prefix, p.site), start=prepared.start,
                changed_by="rehearsal",
            )  # fmt: skip
            await clock.pause()
            commits = Commits()
            service = Service(settings, clock=clock, serve_http=False, on_commit=commits.hook)
            async with service:
                devices, members = await _import_floor(service, prepared)
                observer = Observer(service, p, prepared.start)
                crew = Crew(service, p, plan.crew, plan.seed)
                bar, show = progress_bar(prepared, enabled=progress)
                feed = await Feed.start(
                    prepared, promotion_file=folder / f"{p.id}.toml", mqtt_url=mqtt_url,
                    prefix=prefix,
                )  # fmt: skip
                driver = Driver(
                    service=service, clock=clock, feed=feed, crew=crew, observer=observer,
                    commits=commits, prepared=prepared, show=show,
                )  # fmt: skip
                simulator, ready = await _drive(service, driver, feed, bar, started)
                figures = RunFigures(
                    wall_s=time.monotonic() - started,
                    setup_s=ready - started,
                    stops=driver.stops,
                    published=driver.published,
                    simulator=simulator,
                    daemon_rss_kb=peak_rss_kb(),
                    memory_before=memory_before,
                    memory_after=await redis.info("memory"),
                    key_prefix=prefix,
                    members=len(members),
                    devices=len(devices),
                )
                summary = await summarise(service, prepared, observer, crew.log, figures)
                summary["run"]["summary_s"] = round(time.monotonic() - started - figures.wall_s, 1)
                return summary
    finally:
        if not keep:
            await delete_keys(redis, prefix)
        await redis.aclose()


def _daemon_settings(
    prepared: Prepared, folder: Path, *, redis_url: str, mqtt_url: str, prefix: str
) -> Settings:
    """The rehearsal daemon's settings: private prefixes, the shared clock, the promotion
    in `folder`, and no texts sent."""
    p, plan = prepared.promotion, prepared.plan
    return load_settings(
        redis_url=redis_url,
        mqtt_url=mqtt_url,
        site=p.site,
        key_prefix=prefix,
        topic_prefix=prefix,
        mqtt_client_id=f"bonusd-{prefix}",
        mqtt_session_expiry_s=60,  # the broker forgets this throwaway session
        clock="shared",
        timezone=p.timezone,
        gaming_day_start=p.gaming_day_start,
        max_future_skew_s=plan.horizon.total_seconds() + 3600,  # see Driver._feed
        batch_max=2000,
        mqtt_receive_maximum=5000,
        promotions=folder,
        seed_key_file=folder / "seed-key",
        receipt_key_file=folder / "receipt-key",
        digest_dir=folder / "audit-digests",  # the daily audit digests: thrown away with it
        sms_webhook_url="",  # a rehearsal never texts anyone
    )


async def _import_floor(service: Service, prepared: Prepared) -> tuple[list[Device], list[Member]]:
    """Build the rehearsal's floor and import its devices and members into the daemon."""
    as_of = prepared.start.astimezone(prepared.floor.zone).date()
    floor = build_floor(prepared.floor.config, seed=prepared.plan.seed, as_of=as_of)
    devices, members = registry_records(floor)
    await service.store.import_devices(devices)
    await service.store.import_members(members)
    return devices, members


async def _drive(
    service: Service, driver: Driver, feed: Feed, bar: Progress | None, started: float
) -> tuple[dict[str, Any], float]:
    """Run the daemon and drive the floor through it to the end; returns the simulator's
    figures and the instant (monotonic) the drive began, or raises the failure."""
    simulator: dict[str, Any] = {}
    failure: BonusdError | None = None
    ready = started
    async with asyncio.TaskGroup() as tg:
        tg.create_task(service.run(install_signal_handlers=False), name="daemon")
        try:
            await _subscribed(service)
            if bar is not None:
                bar.start()
            ready = time.monotonic()
            await driver.run()
            simulator = await feed.close()
        except BonusdError as exc:  # raised after the group, not inside a group
            failure = exc
        finally:
            if bar is not None:
                bar.stop()
            await feed.kill()
            service.stop()
    if failure is not None:
        raise failure
    return simulator, ready


async def _subscribed(service: Service) -> None:
    """Wait until the daemon holds its subscription: the broker drops what is published
    to a topic nobody has subscribed to yet."""
    give_up = time.monotonic() + 30.0
    while not service.health.mqtt_connected:
        if time.monotonic() > give_up:
            raise BonusdError(
                f"the daemon could not subscribe at {service.settings.mqtt_url} within 30 s: "
                f"{service.health.mqtt_error or 'no answer'}"
            )
        await asyncio.sleep(0.02)


def registry_records(floor: Floor) -> tuple[list[Device], list[Member]]:
    """The floor's devices and members through the CSV files a casino exports, so the
    rehearsal exercises the daemon's real import."""
    devices_csv, members_csv = io.StringIO(), io.StringIO()
    write_devices_csv(floor, devices_csv)
    write_members_csv(floor, members_csv)
    return (
        parse_text(Device, devices_csv.getvalue(), source="simulated devices.csv"),
        parse_text(Member, members_csv.getvalue(), source="simulated members.csv"),
    )


async def delete_keys(redis: aioredis.Redis, prefix: str) -> int:
    """Delete every key of a rehearsal (`{prefix}:*`); returns how many."""
    gone = 0
    batch: list[str] = []
    async for name in redis.scan_iter(match=f"{prefix}:*", count=5000):
        batch.append(name)
        if len(batch) >= 5000:
            gone += await redis.unlink(*batch)
            batch.clear()
    if batch:
        gone += await redis.unlink(*batch)
    return gone
