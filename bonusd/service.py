"""The composition root: one `Service` owns every connection and task of the daemon.

    async with Service(settings) as service:
        await service.run()        # until SIGTERM/SIGINT or service.stop()

Startup opens the Redis pool and loads the scripts; the main phase runs ingest, the idle
sweeper and the HTTP server in one TaskGroup; shutdown stops intake, lets the consumer
commit what it holds, stops the HTTP server and closes the pool, within deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import logging
import signal
from collections.abc import Generator
from pathlib import Path
from types import TracebackType
from typing import Any

import redis.asyncio as aioredis
import uvicorn

from bonusd.accounting import PromotionBook
from bonusd.api import ApiContext, create_app
from bonusd.audit import Kind
from bonusd.audit_store import AuditStore
from bonusd.auth import TokenStore
from bonusd.backoff import Backoff
from bonusd.claimtimers import ClaimTimers
from bonusd.clock import Clock, GamingCalendar, SharedClock, clock_from, sleep_until_or_stop
from bonusd.drawdesk import DrawDesk
from bonusd.health import Health
from bonusd.ingest import CommitHook, Ingest, MqttTarget
from bonusd.jackpotdesk import JackpotDesk
from bonusd.keys import Keys
from bonusd.metrics import Metrics
from bonusd.notifier import SmsNotifier
from bonusd.outbox import Outbox
from bonusd.promotions import (
    Action,
    Promotion,
    Side,
    TimedAction,
    diff_promotions,
    load_promotions,
)
from bonusd.push import PushHub
from bonusd.scheduler import Scheduler
from bonusd.settings import Settings
from bonusd.standings import PromotionStore
from bonusd.store import REDIS_ERRORS, FloorStore
from bonusd.summaries import DrawSummaries
from bonusd.telemetry import DecodeLimits, TelemetryDecoder

logger = logging.getLogger(__name__)
REDIS_WATCH_INTERVAL_S = 2.0


def site_promotions(folder: Path, site: str) -> tuple[Promotion, ...]:
    """The promotions of `site` in `folder`. A broken file stops the start with a message
    naming it: running without it would silently miss its points."""
    if not folder.is_dir():
        logger.warning("no promotions folder %s; running the floor without promotions", folder)
        return ()
    mine = tuple(p for p in load_promotions(folder) if p.site == site)
    logger.info(
        "promotions of site %s: %s", site, ", ".join(p.id for p in mine) or "none in " + str(folder)
    )
    return mine


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: SIGTERM belongs to the `Service`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


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
        # a burst of requests (2,000 screens reconnecting) waits for a connection instead
        # of failing: redis-py's default pool refuses beyond its cap
        pool = aioredis.BlockingConnectionPool.from_url(
            settings.redis_url,
            decode_responses=True,
            socket_timeout=10,
            socket_connect_timeout=5,
            health_check_interval=15,
            max_connections=settings.redis_max_connections,
            timeout=10,
        )
        self.redis = aioredis.Redis(connection_pool=pool)
        self.clock = clock or clock_from(
            settings.clock_start,
            settings.clock_speed,
            settings.clock,
            redis=self.redis,
            prefix=SharedClock.site_prefix(settings.key_prefix, settings.site),
            changed_by=f"bonusd-{settings.site}",
        )
        self.promotions = site_promotions(settings.promotions, settings.site)
        self.store = FloorStore(
            self.redis,
            self.keys,
            dedup_ttl_s=settings.dedup_window_s + 3600,
            deadletter_maxlen=settings.deadletter_maxlen,
            deadletter_payload_bytes=settings.deadletter_payload_bytes,
            book=PromotionBook(self.promotions),
        )
        self.decoder = TelemetryDecoder(
            prefix=settings.topic_prefix,
            site=settings.site,
            calendar=self.calendar,
            limits=DecodeLimits(
                max_payload_bytes=settings.max_payload_bytes,
                max_future_skew=dt.timedelta(seconds=settings.max_future_skew_s),
                max_age=dt.timedelta(seconds=settings.dedup_window_s),
            ),
        )
        self.ingest = Ingest(
            target=MqttTarget.from_url(settings.mqtt_url),
            client_id=settings.client_id,
            topic_filter=self.decoder.topic_filter(),
            shared_group=settings.mqtt_shared_group,
            session_expiry_s=settings.mqtt_session_expiry_s,
            receive_maximum=settings.mqtt_receive_maximum,
            batch_max=settings.batch_max,
            decoder=self.decoder,
            store=self.store,
            clock=self.clock,
            metrics=self.metrics,
            health=self.health,
            backoff_max_s=settings.backoff_max_s,
            on_commit=on_commit,
        )
        self.tokens = TokenStore(self.redis, self.keys)
        self.audit = AuditStore(self.redis, self.keys)
        self.promotion_store = PromotionStore(self.redis, self.keys, self.promotions)
        self.draws = DrawDesk(
            redis=self.redis,
            keys=self.keys,
            audit=self.audit,
            promotions=self.promotion_store,
            clock=self.clock,
            on_deadline_change=self._poke_timers,
        )
        self.jackpots = JackpotDesk(
            redis=self.redis,
            keys=self.keys,
            audit=self.audit,
            promotions=self.promotion_store,
            clock=self.clock,
            calendar=self.calendar,
            on_deadline_change=self._poke_timers,
        )
        self.timers = ClaimTimers(
            redis=self.redis,
            key=self.draws.deadlines,
            clock=self.clock,
            owners={"draw": self._draw_timers, "raps": self._raps_timers},
        )
        self.notices = SmsNotifier(  # SMS to winners who opted in (docs/notices.md)
            settings=settings,
            outbox=Outbox(self.redis, self.keys),
            store=self.store,
            promotions=self.promotion_store,
            clock=self.clock,
            metrics=self.metrics,
        )
        self.push = self._push_hub(settings)  # live views for screens and handhelds
        self.app = create_app(
            ApiContext(
                store=self.store,
                health=self.health,
                metrics=self.metrics,
                clock=self.clock,
                calendar=self.calendar,
                site=settings.site,
                tokens=self.tokens,
                promotions=self.promotion_store,
                summaries=DrawSummaries(self.promotion_store),
                audit=self.audit,
                draws=self.draws,
                jackpots=self.jackpots,
                reload_promotions=self.reload_promotions,
                push=self.push,
            )
        )
        self.scheduler = Scheduler(
            promotions=self.promotions,
            clock=self.clock,
            redis=self.redis,
            keys=self.keys,
            handlers={
                Action.LEADERBOARD_PUBLISH: self._publish_boards,
                Action.ACTIVATION_OPENS: self._commit_seeds,
                Action.BIN_CLOSES: self._close_bin,
                Action.DRAW_ROUND: self._draw_round,
                Action.PRIZE_LETTERS_LAPSE: self._lapse_letters,
                Action.JACKPOT_SESSION_STARTS: self._jackpot_seeds,
                Action.JACKPOT: self._jackpot,
                Action.MULTIPLIER_STARTS: self._multiplier_starts,
                Action.MULTIPLIER_ENDS: self._multiplier_ends,
            },
        )
        self._http: uvicorn.Server | None = None

    async def __aenter__(self) -> Service:
        self.health.redis_ok = True  # assume so until a probe says otherwise, so it logs once
        if isinstance(self.clock, SharedClock):  # no shared time without Redis: wait for it
            await self.clock.open_when_available(self.stop_event)
        if not await self._probe_redis():
            logger.warning("starting anyway; ingest waits for Redis")
        else:
            # the first gaming day telemetry covers ("3 months actives" falls back to the
            # member record's last_visit before it)
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
        """Run until stopped. Broker or Redis outages are waited out, never fatal."""
        loop = asyncio.get_running_loop()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        # What start-up built (settings, promotions, the app, imported modules) lives as
        # long as the process: keep it out of the collector's full passes, which would
        # otherwise pause ingest for tens of milliseconds at a time.
        gc.freeze()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.ingest.run(self.stop_event), name="ingest")
                tg.create_task(self._sweep_idle(), name="idle-sweeper")
                tg.create_task(self._watch_redis(), name="redis-watch")
                tg.create_task(self.scheduler.run(self.stop_event), name="scheduler")
                tg.create_task(self.timers.run(self.stop_event), name="claim-timers")
                tg.create_task(self.notices.run(self.stop_event), name="sms-notices")
                tg.create_task(self.push.run(self.stop_event), name="push")
                if isinstance(self.clock, SharedClock):
                    tg.create_task(self.clock.watch(self.stop_event), name="clock-watch")
                if self._serve_http:
                    tg.create_task(self._serve(), name="http")
                logger.info(
                    "bonusd running for site %s (clock %s, speed x%s)",
                    self.settings.site,
                    self.clock.now().isoformat(),
                    self.settings.clock_speed,
                )
        finally:
            if install_signal_handlers:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    # -- rule changes -----------------------------------------------------------------------

    async def reload_promotions(self, actor: str) -> list[dict[str, Any]]:
        """Re-read the promotion files; apply the new rules from now on and record every
        change with who and when. A broken file raises `PromotionFileError` and the
        running rules stay as they are."""
        new = site_promotions(self.settings.promotions, self.settings.site)
        old = {p.id: p for p in self.promotions}
        now = self.clock.now().isoformat()
        records = []
        for p in new:
            if p.id not in old:
                changes = ["promotion added"]
            else:
                changes = [str(c) for c in diff_promotions(old[p.id], p)]
            if changes:
                records.append({"at": now, "actor": actor, "promotion": p.id, "changes": changes})
        for pid in old.keys() - {p.id for p in new}:
            records.append(
                {"at": now, "actor": actor, "promotion": pid, "changes": ["promotion removed"]}
            )
        for r in records:  # into the hash-chained audit trail, with who and when
            await self.audit.append(
                at=self.clock.now(),
                actor=actor,
                kind=Kind.RULE_CHANGE,
                payload={"promotion": r["promotion"], "changes": r["changes"]},
            )
        self.promotions = new
        self.store.book = PromotionBook(new)
        self.promotion_store.promotions = {p.id: p for p in new}
        self.scheduler.reload(new)
        logger.warning("promotion rules reloaded by %s: %d change record(s)", actor, len(records))
        return records

    # -- scheduled actions (each idempotent: see scheduler.py) ------------------------------

    async def _publish_boards(self, action: TimedAction) -> None:
        promotion_id, draw_id = action.ids
        for side in Side:
            try:
                await self.promotion_store.publish_board(promotion_id, draw_id, side, action.at)
            except ValueError:
                continue  # this draw has no board on that side
        await self.push.announce("boards")

    async def _commit_seeds(self, action: TimedAction) -> None:
        promotion_id, draw_id = action.ids
        await self.draws.commit_seeds(promotion_id, draw_id)

    async def _close_bin(self, action: TimedAction) -> None:
        promotion_id, draw_id = action.ids
        await self.draws.close_bin(promotion_id, draw_id)
        pool = await self.promotion_store.pool(promotion_id, draw_id)
        logger.info(
            "entry bin of %s/%s closed: pool %s", promotion_id, draw_id, pool and pool.sha256
        )

    async def _draw_round(self, action: TimedAction) -> None:
        """Draw a round at its time. A round missed by more than the grace (the daemon was
        down) is not drawn behind the floor's back: it is reported and the desk runs it."""
        promotion_id, draw_id, number = action.ids
        plan = self.draws.plan(promotion_id, draw_id)
        if plan.manual:
            logger.info("%s round %s is manual: the desk enters the tickets", plan.subject, number)
            return
        late = self.clock.now() - action.at
        if late > dt.timedelta(seconds=self.settings.draw_grace_s):
            await self.draws.missed(promotion_id, draw_id, int(number), late)
            return
        records = await self.draws.run_round(promotion_id, draw_id, int(number))
        picks = [r.payload["card"] for r in records if r.kind == Kind.PICK]
        logger.info("%s round %s drawn: %d winner(s)", plan.subject, number, len(picks))

    async def _lapse_letters(self, action: TimedAction) -> None:
        promotion_id, draw_id = action.ids
        await self.draws.run_due(promotion_id, draw_id)

    async def _jackpot_seeds(self, action: TimedAction) -> None:
        promotion_id, session_id = action.ids
        await self.jackpots.commit_seeds(promotion_id, session_id)

    async def _jackpot(self, action: TimedAction) -> None:
        """A RAPS jackpot at its time; one missed by more than the grace is recorded (an
        exception record) and left to the desk."""
        promotion_id, session_id, number = action.ids
        late = self.clock.now() - action.at
        if late > dt.timedelta(seconds=self.settings.draw_grace_s):
            logger.warning(
                "jackpot %s/%s #%s missed by %s: the desk runs it",
                promotion_id,
                session_id,
                number,
                late,
            )
            await self.jackpots.missed(promotion_id, session_id, int(number), late)
            return
        records = await self.jackpots.run_jackpot(promotion_id, session_id, int(number))
        picks = [r.payload["card"] for r in records if r.kind == Kind.PICK]
        logger.info("jackpot %s/%s #%s: %d winner(s)", promotion_id, session_id, number, len(picks))

    async def _raps_timers(self, subject: str) -> int:
        promotion_id, _, session_id = subject.partition(".")
        return await self.jackpots.run_due(promotion_id, session_id)

    def _poke_timers(self) -> None:
        self.timers.poke()

    async def _draw_timers(self, subject: str) -> int:
        promotion_id, draw_id = self.draws.resolve(subject)
        return await self.draws.run_due(promotion_id, draw_id)

    async def _multiplier_starts(self, action: TimedAction) -> None:
        await self.redis.sadd(self.keys.active_multipliers, ":".join(action.ids))
        await self.push.announce("multiplier")

    async def _multiplier_ends(self, action: TimedAction) -> None:
        await self.redis.srem(self.keys.active_multipliers, ":".join(action.ids))
        await self.push.announce("multiplier")

    def _push_hub(self, settings: Settings) -> PushHub:
        """The push hub, reading books through desks of its own: a book the service's desks
        are changing (command run, commit pending) is never what a screen shows."""
        r, k, a, c, p = self.redis, self.keys, self.audit, self.clock, self.promotion_store
        draws = DrawDesk(redis=r, keys=k, audit=a, promotions=p, clock=c)
        jackpots = JackpotDesk(
            redis=r, keys=k, audit=a, promotions=p, clock=c, calendar=self.calendar
        )
        return PushHub(
            redis=self.redis,
            keys=self.keys,
            clock=self.clock,
            zone=settings.zone,
            promotions=self.promotion_store,
            draw_book=draws.book,
            session_book=jackpots.book,
            queue_size=settings.push_queue_size,
            resume_deltas=settings.push_resume_deltas,
            ping_every_s=settings.push_ping_s,
            handshake_s=settings.push_handshake_s,
        )

    async def _probe_redis(self) -> bool:
        """Ping Redis and record the answer in health; never raises for an outage."""
        try:
            await self.redis.ping()
        except REDIS_ERRORS as exc:
            if self.health.redis_ok:
                logger.warning("Redis at %s is not answering (%s)", self.settings.redis_url, exc)
                self.metrics.reconnects.labels("redis").inc()
            self.health.redis_ok = False
            self.health.redis_error = str(exc)
            self.metrics.connected.labels("redis").set(0)
            return False
        if not self.health.redis_ok:
            logger.warning("Redis at %s answers again", self.settings.redis_url)
        self.health.redis_ok = True
        self.health.redis_error = ""
        self.metrics.connected.labels("redis").set(1)
        return True

    async def _watch_redis(self) -> None:
        """Keep /health true to Redis even when no telemetry flows (wall-clock cadence)."""
        while not self.stop_event.is_set():
            await self._probe_redis()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_event.wait(), REDIS_WATCH_INTERVAL_S)

    async def _serve(self) -> None:
        config = uvicorn.Config(
            self.app,
            host=self.settings.http_host,
            port=self.settings.http_port,
            log_level="warning",
            lifespan="off",
            ws_per_message_deflate=self.settings.push_deflate,  # docs/push.md, "Delivery"
            ws_max_size=64 * 1024,  # clients send a token and pings, nothing more
            timeout_graceful_shutdown=5,  # then open connections are cancelled
        )
        server = _QuietServer(config)
        self._http = server
        async with asyncio.TaskGroup() as tg:
            tg.create_task(server.serve(), name="uvicorn")
            await self.stop_event.wait()
            server.should_exit = True

    async def _sweep_idle(self) -> None:
        """End sessions whose card-out was lost, checking every quarter of the timeout."""
        timeout = self.settings.session_idle_timeout_s
        interval = dt.timedelta(seconds=min(60, timeout / 4))
        backoff = Backoff(cap=self.settings.backoff_max_s)
        while not self.stop_event.is_set():
            wake = self.clock.now() + interval
            if await sleep_until_or_stop(self.clock, wake, self.stop_event):
                return
            try:
                ended = await self.store.sweep_idle(self.clock.now(), timeout)
            except REDIS_ERRORS as exc:
                logger.warning("idle sweep skipped, Redis unavailable (%s)", exc)
                await asyncio.sleep(backoff.next_delay())
                continue
            backoff.reset()
            if ended:
                self.metrics.sessions_idled.inc(len(ended))
                logger.info("ended %d idle session(s) with no card-out", len(ended))
