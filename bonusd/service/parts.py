"""The parts the composition root wires, each built from the settings: the floor's store,
decoder and ingest; the draw and RAPS runners; the live push hub with runners of its own;
the leader lease."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from redis.asyncio import Redis

from bonusd.access.auth import TokenStore
from bonusd.access.sessions import SessionPolicy, StaffSessions
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import Clock, GamingCalendar
from bonusd.draws.caches import CacheBounds, DeskCache
from bonusd.draws.fairness import Pool
from bonusd.draws.runner import DrawRunner
from bonusd.draws.seal import SeedSeal
from bonusd.draws.seedkey import load_seal
from bonusd.floor.accounting import PromotionBook
from bonusd.floor.store import FloorStore
from bonusd.floor.telemetry import DecodeLimits, TelemetryDecoder
from bonusd.infra.health import Health
from bonusd.infra.keys import Keys
from bonusd.infra.leader import Leadership
from bonusd.infra.metrics import Metrics
from bonusd.ingest.consumer import CommitHook, Ingest
from bonusd.ingest.target import MqttTarget
from bonusd.kiosk.desk import KioskConfig, KioskDesk
from bonusd.kiosk.receiptkey import load_receipt_key
from bonusd.kiosk.store import KioskStore
from bonusd.promotions import Promotion
from bonusd.promotions.store import PromotionStore
from bonusd.push.hub import PushHub
from bonusd.raps.runner import RapsRunner
from bonusd.settings import Settings


def floor_ingest(
    settings: Settings,
    *,
    redis: Redis,
    keys: Keys,
    calendar: GamingCalendar,
    clock: Clock,
    metrics: Metrics,
    health: Health,
    promotions: tuple[Promotion, ...],
    on_commit: CommitHook | None,
) -> tuple[FloorStore, TelemetryDecoder, Ingest]:
    """The floor store, the telemetry decoder and the MQTT ingest that feeds one into the
    other."""
    store = FloorStore(
        redis,
        keys,
        dedup_ttl_s=settings.dedup_window_s + 3600,
        deadletter_maxlen=settings.deadletter_maxlen,
        deadletter_payload_bytes=settings.deadletter_payload_bytes,
        book=PromotionBook(promotions),
    )
    decoder = TelemetryDecoder(
        prefix=settings.topic_prefix,
        site=settings.site,
        calendar=calendar,
        limits=DecodeLimits(
            max_payload_bytes=settings.max_payload_bytes,
            max_future_skew=dt.timedelta(seconds=settings.max_future_skew_s),
            max_age=dt.timedelta(seconds=settings.dedup_window_s),
        ),
    )
    ingest = Ingest(
        target=MqttTarget.from_settings(settings),
        client_id=settings.client_id,
        topic_filter=decoder.topic_filter(),
        shared_group=settings.mqtt_shared_group,
        session_expiry_s=settings.mqtt_session_expiry_s,
        receive_maximum=settings.mqtt_receive_maximum,
        batch_max=settings.batch_max,
        decoder=decoder,
        store=store,
        clock=clock,
        metrics=metrics,
        health=health,
        backoff_max_s=settings.backoff_max_s,
        on_commit=on_commit,
    )
    return store, decoder, ingest


def runners(
    *,
    redis: Redis,
    keys: Keys,
    audit: AuditStore,
    promotions: PromotionStore,
    clock: Clock,
    calendar: GamingCalendar,
    settings: Settings,
    on_deadline_change: Callable[[], None],
) -> tuple[DrawRunner, RapsRunner]:
    """The draw runner and the RAPS runner the service and its routes act through, both
    keeping their seeds sealed with the site's key, read from `BONUSD_SEED_KEY_FILE`
    (created when missing; `SeedKeyError` when it is unusable), and their caches bounded
    by `BONUSD_DESK_*`."""
    seal, bounds = load_seal(settings.seed_key_file), desk_caches(settings)
    draws = DrawRunner(
        redis=redis,
        keys=keys,
        audit=audit,
        promotions=promotions,
        clock=clock,
        seal=seal,
        on_deadline_change=on_deadline_change,
        bounds=bounds,
    )
    jackpots = RapsRunner(
        redis=redis,
        keys=keys,
        audit=audit,
        promotions=promotions,
        clock=clock,
        calendar=calendar,
        seal=seal,
        on_deadline_change=on_deadline_change,
        bounds=bounds,
        pools=draws.pools,  # one cache of pool files (immutable) for the daemon
    )
    return draws, jackpots


def desk_caches(settings: Settings) -> CacheBounds:
    """How much each runner keeps in memory (`BONUSD_DESK_*`, docs/settings.md)."""
    return CacheBounds(
        books=settings.desk_books,
        pools=settings.desk_pools,
        floors=settings.desk_floor_snapshots,
        timetables=settings.desk_timetables,
        idle_s=settings.desk_idle_s,
        books_mb=settings.desk_books_mb,
        pools_mb=settings.desk_pools_mb,
        floors_mb=settings.desk_floor_snapshots_mb,
    )


def push_hub(
    settings: Settings,
    *,
    redis: Redis,
    keys: Keys,
    audit: AuditStore,
    clock: Clock,
    calendar: GamingCalendar,
    promotions: PromotionStore,
    seal: SeedSeal,
    pools: DeskCache[str, Pool],
    metrics: Metrics,
) -> PushHub:
    """The push hub, reading books through runners of its own: a book the service's runners
    are changing (command run, commit pending) is never what a screen shows. Pool files
    never change: its runners read them through the service's cache, `pools`."""
    bounds = desk_caches(settings)
    draws = DrawRunner(
        redis=redis,
        keys=keys,
        audit=audit,
        promotions=promotions,
        clock=clock,
        seal=seal,
        bounds=bounds,
        pools=pools,
    )
    jackpots = RapsRunner(
        redis=redis,
        keys=keys,
        audit=audit,
        promotions=promotions,
        clock=clock,
        calendar=calendar,
        seal=seal,
        bounds=bounds,
        pools=pools,
    )
    metrics.watch_caches("push-draws", draws.caches)
    metrics.watch_caches("push-raps", jackpots.caches)
    return PushHub(
        redis=redis,
        keys=keys,
        clock=clock,
        zone=settings.zone,
        promotions=promotions,
        draw_book=draws.book,
        session_book=jackpots.book,
        queue_size=settings.push_queue_size,
        resume_deltas=settings.push_resume_deltas,
        ping_every_s=settings.push_ping_s,
        handshake_s=settings.push_handshake_s,
    )


def leadership(
    settings: Settings, *, redis: Redis, keys: Keys, health: Health, metrics: Metrics
) -> Leadership:
    """The site's leader lease, as the settings time it."""
    return Leadership(
        redis=redis,
        keys=keys,
        holder=settings.client_id,
        ttl_s=settings.leader_ttl_s,
        renew_s=settings.leader_renew_s,
        poll_s=settings.leader_poll_s,
        health=health,
        metrics=metrics,
    )


def kiosk_desk(
    settings: Settings, promotions: PromotionStore, draws: DrawRunner, tokens: TokenStore
) -> KioskDesk:
    """The eHost kiosks' side (docs/kiosk.md): visits, PINs, receipts and their checks,
    with the site's receipt key read from `BONUSD_RECEIPT_KEY_FILE` (created when missing;
    `ReceiptKeyError` when it is unusable, and the start is refused)."""
    config = KioskConfig(
        site=settings.site,
        timezone=settings.timezone,
        key=load_receipt_key(settings.receipt_key_file),
        printers=dict(settings.receipt_printers),
        pin_attempts=settings.kiosk_pin_attempts,
        pin_lock_s=settings.kiosk_pin_lock_s,
    )
    store = KioskStore(promotions.redis, promotions.keys, visit_s=settings.kiosk_visit_s)
    return KioskDesk(store, promotions, draws, tokens.limiter, config)


def signin(settings: Settings, promotions: PromotionStore, tokens: TokenStore) -> StaffSessions:
    """Staff sign-in and sessions (docs/security.md, "Staff sign-in"), with the shift, the
    idle time and the PIN lockouts of the `BONUSD_STAFF_*` settings."""
    policy = SessionPolicy(
        shift_s=settings.staff_shift_s,
        idle_s=settings.staff_idle_s,
        pin_attempts=settings.staff_pin_attempts,
        pin_lock_s=settings.staff_pin_lock_s,
        address_attempts=settings.staff_address_attempts,
        address_lock_s=settings.staff_address_lock_s,
    )
    return StaffSessions(promotions.redis, promotions.keys, tokens, policy)
