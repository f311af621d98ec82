"""The composition root: one `Service` owns every connection and task of the daemon.

    async with Service(settings) as service:
        await service.run()        # until SIGTERM/SIGINT or service.stop()

Startup opens the Redis pool and loads the scripts; the main phase runs ingest, the push,
the HTTP server and the leader election in one TaskGroup. The site's leader (docs/leader.md)
seals seeds left in plain hex, then runs the scheduler (bonusd/service/actions.py), claim
timers, SMS notices, idle sweeper and retention. Shutdown stops intake, lets the consumer
commit, stops the leader's tasks and releases the lease, stops HTTP and closes the pool.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import logging
import signal
from collections.abc import Coroutine
from types import TracebackType
from typing import Any

from bonusd.access.auth import TokenStore
from bonusd.access.ratelimit import RateLimits
from bonusd.api.app import create_app
from bonusd.api.context import ApiContext
from bonusd.api.httpguard import SecureHeaders
from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import Clock, GamingCalendar
from bonusd.draws.seeds import seal_plain_seeds
from bonusd.floor.accounting import PromotionBook
from bonusd.floor.idlesweep import sweep_idle
from bonusd.infra.health import Health
from bonusd.infra.heap import trim_every, watch_heap_dumps
from bonusd.infra.keys import Keys
from bonusd.infra.layout import ensure_layout
from bonusd.infra.metrics import Metrics
from bonusd.infra.redisclient import redis_client
from bonusd.infra.sharedclock import SharedClock, clock_from
from bonusd.ingest.consumer import CommitHook
from bonusd.notices.notifier import SmsNotifier
from bonusd.notices.outbox import Outbox
from bonusd.promotions import Promotion, diff_promotions
from bonusd.promotions.rulesync import RuleSync, site_promotions
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.summaries import DrawSummaries
from bonusd.service.actions import ScheduledActions
from bonusd.service.claimtimers import ClaimTimers
from bonusd.service.floorwindow import FloorWindow
from bonusd.service.hosting import HttpServing, OpsWatch
from bonusd.service.parts import floor_ingest, kiosk_desk, leadership, push_hub, runners, signin
from bonusd.service.redishealth import RedisWatch
from bonusd.service.retention import RetentionSweeper
from bonusd.service.scheduler import Scheduler
from bonusd.settings import Settings

logger = logging.getLogger(__name__)


class Service:
    """The daemon: ingest, floor upkeep and HTTP API for one site."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        serve_http: bool = True,
        on_commit: CommitHook | None = None,
    ) -> None:
        self.settings = settings
        self.calendar = GamingCalendar(settings.zone, settings.gaming_day_start)
        self.keys = Keys(settings.key_prefix, settings.site)
        self.metrics = Metrics()
        self.health = Health()
        self.stop_event = asyncio.Event()
        self._serve_http = serve_http
        self.redis = redis_client(settings, daemon=True)  # one Redis or a Redis Cluster
        self.clock = clock or clock_from(
            settings.clock_start,
            settings.clock_speed,
            settings.clock,
            redis=self.redis,
            prefix=SharedClock.site_prefix(settings.key_prefix, settings.site),
            changed_by=f"bonusd-{settings.site}",
        )
        self.promotions = site_promotions(settings.promotions, settings.site)
        self.store, self.decoder, self.ingest = floor_ingest(
            settings,
            redis=self.redis,
            keys=self.keys,
            calendar=self.calendar,
            clock=self.clock,
            metrics=self.metrics,
            health=self.health,
            promotions=self.promotions,
            on_commit=on_commit,
        )
        self._build_stores()
        self._build_live_parts()
        self._build_http_and_jobs()
        self._failed: list[tuple[str, Exception]] = []  # (task, its error): `run` raises it

    def _build_stores(self) -> None:
        """Tokens, the audit trail, the promotions' store and the runners."""
        self.tokens = TokenStore(self.redis, self.keys, RateLimits.from_settings(self.settings))
        self.audit = AuditStore(
            self.redis, self.keys, clock=self.clock, recheck_s=self.settings.audit_recheck_s
        )
        self.promotion_store = PromotionStore(self.redis, self.keys, self.promotions)
        self.draws, self.jackpots = runners(
            redis=self.redis,
            keys=self.keys,
            audit=self.audit,
            promotions=self.promotion_store,
            clock=self.clock,
            calendar=self.calendar,
            settings=self.settings,  # the seed key (SeedKeyError: the start is refused), caches
            on_deadline_change=self._poke_timers,
        )
        self.metrics.watch_caches("draws", self.draws.caches)  # what the desks hold in memory
        self.metrics.watch_caches("raps", self.jackpots.caches)
        self.metrics.floor_mirror_rows.set_function(lambda: self.jackpots.live_floor.size)
        # when this daemon follows the floor for RAPS picks (BONUSD_RAPS_FLOOR_*)
        self.floor_window = FloorWindow.of(self.settings, self.jackpots, lambda: self.promotions)

    def _build_live_parts(self) -> None:
        """SMS notices, the live push, rule sync, the leader lease, timed actions, claim timers."""
        self.notices = SmsNotifier(  # SMS to winners who opted in (docs/notices.md)
            settings=self.settings,
            outbox=Outbox(self.redis, self.keys),
            store=self.store,
            promotions=self.promotion_store,
            clock=self.clock,
            metrics=self.metrics,
        )
        self.push = push_hub(  # live views for screens and handhelds
            self.settings,
            redis=self.redis,
            keys=self.keys,
            audit=self.audit,
            clock=self.clock,
            calendar=self.calendar,
            promotions=self.promotion_store,
            seal=self.draws.seeds.seal,
            pools=self.draws.pools,
            metrics=self.metrics,
        )
        self.rules = RuleSync(  # the same promotion rules on every daemon of the site
            redis=self.redis,
            keys=self.keys,
            folder=self.settings.promotions,
            site=self.settings.site,
            current=lambda: self.promotions,
            apply=self._apply_promotions,
        )
        self.leader = leadership(  # who runs the work that must run once (docs/leader.md)
            self.settings,
            redis=self.redis,
            keys=self.keys,
            health=self.health,
            metrics=self.metrics,
        )
        self.actions = ScheduledActions(
            redis=self.redis,
            keys=self.keys,
            clock=self.clock,
            draw_grace=dt.timedelta(seconds=self.settings.draw_grace_s),
            promotions=self.promotion_store,
            draws=self.draws,
            jackpots=self.jackpots,
            push=self.push,
        )
        self.timers = ClaimTimers(
            redis=self.redis,
            key=self.draws.deadlines,
            clock=self.clock,
            owners=self.actions.timer_owners(),
            fence=self.leader.fence,
            channel=self.push.channel,  # steps taken on the site's other daemons
        )

    def _build_http_and_jobs(self) -> None:
        """The HTTP app, the scheduler and the retention sweeper."""
        self.app = create_app(
            ApiContext(
                store=self.store,
                health=self.health,
                metrics=self.metrics,
                clock=self.clock,
                calendar=self.calendar,
                site=self.settings.site,
                tokens=self.tokens,
                promotions=self.promotion_store,
                summaries=DrawSummaries(self.promotion_store),
                audit=self.audit,
                draws=self.draws,
                jackpots=self.jackpots,
                reload_promotions=self.reload_promotions,
                push=self.push,
                promotions_folder=self.settings.promotions,  # the signage logos (api/logos.py)
                kiosk=kiosk_desk(self.settings, self.promotion_store, self.draws, self.tokens),
                staff=signin(self.settings, self.promotion_store, self.tokens),
            )
        )
        self.scheduler = Scheduler(
            promotions=self.promotions,
            clock=self.clock,
            redis=self.redis,
            keys=self.keys,
            handlers=self.actions.handlers(),
            fence=self.leader.fence,
        )
        self.retention = RetentionSweeper.from_settings(  # docs/retention.md
            self.settings,
            redis=self.redis,
            keys=self.keys,
            clock=self.clock,
            calendar=self.calendar,
            promotions=lambda: self.promotions,
        )
        # the headers once more outside the app's own error handler, so its 500s carry them
        self.http = HttpServing(self.settings, SecureHeaders(self.app))
        self.redis_watch = RedisWatch(
            self.redis, self.settings.redis_url, self.health, self.metrics
        )
        self.ops = OpsWatch(  # systemd's READY and watchdog; the gauges of deploy/prometheus/
            self.settings,
            redis=self.redis,
            keys=self.keys,
            clock=self.clock,
            metrics=self.metrics,
            health=self.health,
            push=self.push,
            serving=lambda: not self._serve_http or self.http.started,
        )

    async def __aenter__(self) -> Service:
        self.health.redis_ok = True  # assume so until a probe says otherwise, so it logs once
        if isinstance(self.clock, SharedClock):  # no shared time without Redis: wait for it
            await self.clock.open_when_available(self.stop_event)
        if not await self.redis_watch.probe():
            logger.warning("starting anyway; ingest waits for Redis")
        else:  # data in a layout this release must not run on is refused (LayoutError)
            await ensure_layout(self.redis, self.keys, holder=self.leader.holder)
            # the first gaming day of telemetry (before it, "3 months actives" use last_visit)
            today = self.calendar.gaming_day(self.clock.now()).isoformat()
            await self.redis.hsetnx(self.keys.stats, "telemetry_since", today)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.redis.aclose()
        logger.info("bonusd stopped: %d message(s) committed this run", self.ingest.committed)

    def stop(self) -> None:
        """Ask the daemon to shut down (what SIGTERM does)."""
        self.stop_event.set()

    async def run(self, *, install_signal_handlers: bool = True) -> None:
        """Run until stopped. Broker or Redis outages are waited out, never fatal; a task
        that fails stops the daemon as SIGTERM does (`_stops_on_failure`), then its error
        is raised."""
        loop = asyncio.get_running_loop()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
            heap = self.settings  # SIGUSR2's dumps (infra/heap.py)
            watch_heap_dumps(loop, heap.heap_dump_dir, heap.heap_trace_frames)
        # What start-up built (settings, promotions, the app, imported modules) lives as
        # long as the process: keep it out of the collector's full passes, which would
        # otherwise pause ingest for tens of milliseconds at a time.
        gc.freeze()
        try:
            async with asyncio.TaskGroup() as tg:
                for name, work in self._tasks():
                    tg.create_task(self._stops_on_failure(name, work), name=name)
                logger.info(
                    "bonusd running for site %s (clock %s, speed x%s)",
                    self.settings.site,
                    self.clock.now().isoformat(),
                    self.settings.clock_speed,
                )
        finally:
            if install_signal_handlers:
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2):
                    loop.remove_signal_handler(sig)
        if self._failed:
            raise _innermost(self._failed[0][1])

    def _tasks(self) -> list[tuple[str, Coroutine[Any, Any, None]]]:
        """Every task of the daemon, by name (docs/architecture.md, "Tasks")."""
        stop = self.stop_event
        tasks = [
            ("ingest", self.ingest.run(stop)),
            ("redis-watch", self.redis_watch.run(stop)),
            ("push", self.push.run(stop)),
            ("rules", self.rules.run(stop)),
            ("leader", self.leader.run(stop, self._lead)),
            ("ops-watch", self.ops.run(stop)),
            ("heap", trim_every(self.settings.heap_trim_s, stop)),
        ]
        if self.settings.raps_floor_sync_s > 0:  # any daemon may run a jackpot
            tasks.append(("raps-floor", self.floor_window.run(stop)))  # around RAPS sessions
        if isinstance(self.clock, SharedClock):
            tasks.append(("clock-watch", self.clock.watch(stop)))
        if self._serve_http:
            tasks.append(("http", self.http.run(stop)))
        return tasks

    async def _stops_on_failure(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        """Run one task; if it fails, stop the daemon as SIGTERM does: every other task
        ends by its own stop path (the consumer commits, the leader releases its lease),
        not by a cancellation in the middle of a write."""
        try:
            await work
        except Exception as exc:
            self._failed.append((name, exc))
            logger.critical("the daemon's %s task failed: stopping", name, exc_info=exc)
            self.stop()

    async def _lead(self, stop: asyncio.Event) -> None:
        """What only the site's leader runs, until `stop` (docs/leader.md)."""
        await seal_plain_seeds(self.redis, self.draws.seeds.seal, self.keys)
        sweeper = sweep_idle(
            store=self.store,
            clock=self.clock,
            metrics=self.metrics,
            settings=self.settings,
            stop=stop,
        )
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.scheduler.run(stop), name="scheduler")
            tg.create_task(self.timers.run(stop), name="claim-timers")
            tg.create_task(self.notices.run(stop), name="sms-notices")
            tg.create_task(sweeper, name="idle-sweeper")
            tg.create_task(self.retention.run(stop), name="retention")
            if self.settings.raps_floor_sync_s > 0:  # the picks' floor bases (the mirror's)
                tg.create_task(self.floor_window.bases(stop), name="raps-bases")

    # -- rule changes -----------------------------------------------------------------------

    async def reload_promotions(self, actor: str) -> list[dict[str, Any]]:
        """Re-read the promotion files; apply the new rules from now on and record every
        change with who and when. A broken file raises `PromotionFileError` and the
        running rules stay as they are."""
        new = site_promotions(self.settings.promotions, self.settings.site)
        old = {p.id: p for p in self.promotions}
        now = self.clock.now().isoformat()
        records = []
        for promotion in new:
            if promotion.id not in old:
                changes = ["promotion added"]
            else:
                changes = [str(c) for c in diff_promotions(old[promotion.id], promotion)]
            if changes:
                records.append(
                    {"at": now, "actor": actor, "promotion": promotion.id, "changes": changes}
                )
        for pid in old.keys() - {p.id for p in new}:
            records.append(
                {"at": now, "actor": actor, "promotion": pid, "changes": ["promotion removed"]}
            )
        for record in records:  # into the hash-chained audit trail, with who and when
            await self.audit.append(
                at=self.clock.now(),
                actor=actor,
                kind=Kind.RULE_CHANGE,
                payload={"promotion": record["promotion"], "changes": record["changes"]},
            )
        self._apply_promotions(new)
        await self.rules.publish()  # the other daemons of the site follow
        logger.warning("promotion rules reloaded by %s: %d change record(s)", actor, len(records))
        return records

    def _apply_promotions(self, new: tuple[Promotion, ...]) -> None:
        """Run `new` from now on: points, standings, the scheduler's timetable."""
        self.promotions = new
        self.store.book = PromotionBook(new)
        self.promotion_store.promotions = {p.id: p for p in new}
        self.scheduler.reload(new)

    def _poke_timers(self) -> None:
        self.timers.poke()


def _innermost(exc: Exception) -> Exception:
    """The error itself when task groups wrapped it alone (a failed HTTP port's
    `ConfigError` reaches the command line as its message)."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
