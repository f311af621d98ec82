"""Data retention: how long each kind of data a site keeps lives (`RetentionPolicy`, plain
rules on dates), and the sweeper that enforces it on Redis and on the audit archive
(`RetentionSweeper`, a daemon task). The table of every key family, how long it is kept
and why, is docs/retention.md.

What the sweeper removes, on the daemon's clock, a bounded batch per Redis call:

- `day:{day}:{card}`, `dayspend:{day}`, `visits:{day}`: a gaming day older than
  `BONUSD_RETENTION_GAMING_DAYS`, unless a promotion's campaign (its earning windows
  through its prize letters' lapse, plus `BONUSD_RETENTION_CAMPAIGN_GRACE_DAYS`) covers
  it. The day's `visits` set names every card with a `day` key, so a day is removed
  card by card, `visits` last: an interrupted sweep resumes where it stopped.
- `seen:{hour}`: an hour older than the de-duplication window (they carry a TTL set by
  apply.lua; this also clears those left from a longer window).
- `deadletters`: entries older than `BONUSD_RETENTION_DEADLETTER_DAYS` (MINID).
- `token:{id}`: tokens expired or revoked more than `BONUSD_RETENTION_TOKEN_DAYS` ago,
  with their last use in `usage`.
- The audit trail is never removed from Redis: it is copied, record by record, to the
  archive (bonusd/audit/archive.py), whose month files are kept
  `BONUSD_RETENTION_AUDIT_DAYS` (three years at least) and then deleted, oldest first.

Before that, each sweep anchors every finished gaming day not anchored yet: its digest of
the chain's head written once to `BONUSD_DIGEST_DIR` and recorded in the trail
(bonusd/audit/anchor.py, docs/anchor.md); the sweeper also wakes `SETTLE` after each
gaming day's close for it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from redis.asyncio import Redis

from bonusd.audit.anchor import DayAnchor, DigestFolder, digest_folder
from bonusd.audit.archive import AuditArchive, site_archive
from bonusd.audit.chain import from_jsonl
from bonusd.audit.digest import next_anchor_time
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import Clock, GamingCalendar, sleep_until_or_stop
from bonusd.errors import AuditFormatError
from bonusd.floor.rules import HOUR_MS
from bonusd.infra.backoff import Backoff, pause
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.promotions import Promotion, earning_window
from bonusd.promotions.timing import prize_letters_lapse_at
from bonusd.settings import Settings

logger = logging.getLogger(__name__)
DAY_MS = 24 * HOUR_MS
MAX_BATCHES_PER_SWEEP = 200  # the rest waits for the next sweep
AUDIT_MIN_DAYS = 1096  # three years, leap day included (promotion-competition rules)


@dataclass(frozen=True)
class RetentionPolicy:
    """How long each kind of time-bound data is kept. Dates are gaming days."""

    gaming_days: int  # a gaming day's totals are kept this many days after it
    campaign_grace_days: int  # ... and a campaign's days this long after it ends
    dedup_window_s: int  # event ids are remembered this long (ingest's window)
    deadletter_days: int
    token_days: int  # expired or revoked tokens are kept this long after
    audit_days: int  # archive files are kept this long after their month
    campaigns: tuple[tuple[dt.date, dt.date], ...] = ()  # (first day, last day) kept whole

    def __post_init__(self) -> None:
        if self.audit_days < AUDIT_MIN_DAYS:
            raise ValueError(
                f"audit records must be kept at least three years ({AUDIT_MIN_DAYS} days), "
                f"got {self.audit_days}"
            )

    @classmethod
    def from_settings(
        cls, settings: Settings, promotions: Sequence[Promotion] = ()
    ) -> RetentionPolicy:
        return cls(
            gaming_days=settings.retention_gaming_days,
            campaign_grace_days=settings.retention_campaign_grace_days,
            dedup_window_s=settings.dedup_window_s,
            deadletter_days=settings.retention_deadletter_days,
            token_days=settings.retention_token_days,
            audit_days=settings.retention_audit_days,
            campaigns=tuple(campaign_span(p) for p in promotions),
        )

    def with_promotions(self, promotions: Sequence[Promotion]) -> RetentionPolicy:
        spans = tuple(campaign_span(p) for p in promotions)
        return RetentionPolicy(**{**self.__dict__, "campaigns": spans})

    def keep_day(self, day: dt.date, today: dt.date) -> bool:
        """Whether a gaming day's per-member totals, spend and visits are still kept."""
        if (today - day).days <= self.gaming_days:
            return True
        grace = dt.timedelta(days=self.campaign_grace_days)
        return any(first <= day <= last + grace for first, last in self.campaigns)

    def keep_seen(self, hour: int, now_ms: int) -> bool:
        """Whether the event ids of event hour `hour` (ms // 1 h) are still needed: events
        older than the window are dead-lettered, so their ids are not (the TTL's margin)."""
        return (hour + 1) * HOUR_MS + HOUR_MS > now_ms - self.dedup_window_s * 1000

    def deadletter_min_id(self, server_ms: int) -> str:
        """The oldest dead-letter stream id kept (stream ids are Redis's own time)."""
        return f"{server_ms - self.deadletter_days * DAY_MS}-0"

    def keep_token(
        self, expires: dt.datetime, revoked: dt.datetime | None, now: dt.datetime
    ) -> bool:
        end = min(expires, revoked) if revoked else expires
        return now - end <= dt.timedelta(days=self.token_days)

    def keep_archive_until(self, month_end: dt.date) -> dt.date:
        return month_end + dt.timedelta(days=self.audit_days)


def campaign_span(promotion: Promotion) -> tuple[dt.date, dt.date]:
    """The gaming days a promotion's standings, draws and claims can read: from its start
    (or its earliest earning window, e.g. "3 months before the draw") to its end (or its
    last prize letter's lapse)."""
    first, last = promotion.start, promotion.end
    for draw in promotion.draw_list:
        window = earning_window(promotion, draw)
        first = min(first, window.first_day)
        last = max(last, window.last_day, prize_letters_lapse_at(promotion, draw).date())
    for session in promotion.jackpot_sessions:
        last = max(last, session.date)
    return first, last


@dataclass
class SweepReport:
    """What one sweep did."""

    removed: Counter[str] = field(default_factory=Counter)  # family -> keys or entries
    archived: int = 0  # audit records copied to the archive
    digests: list[str] = field(default_factory=list)  # gaming days anchored (docs/anchor.md)
    pruned: list[str] = field(default_factory=list)  # archive files deleted
    pending: bool = False  # the batch limit was reached: more next sweep

    def count(self, family: str, amount: int) -> None:
        if amount:
            self.removed[family] += amount

    def __str__(self) -> str:
        parts = [f"{n} {fam}" for fam, n in sorted(self.removed.items()) if n]
        if self.digests:
            parts.append(f"audit digest of gaming day(s) {', '.join(self.digests)} written")
        if self.archived:
            parts.append(f"{self.archived} audit record(s) archived")
        if self.pruned:
            parts.append(f"archive file(s) past retention deleted: {', '.join(self.pruned)}")
        text = "; ".join(parts) or "nothing due"
        return text + (" (more next sweep)" if self.pending else "")


class RetentionSweeper:
    """The retention task of one site: `await sweeper.run(stop)` sweeps at start and then
    every `interval` of the daemon's clock; `sweep()` once. Idempotent: a sweep
    interrupted anywhere is completed by the next."""

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        clock: Clock,
        calendar: GamingCalendar,
        policy: RetentionPolicy,
        archive: AuditArchive,
        interval: dt.timedelta = dt.timedelta(hours=1),
        batch: int = 1000,
        promotions: Callable[[], Sequence[Promotion]] | None = None,
        anchor: DayAnchor | None = None,
    ) -> None:
        self.redis, self.keys, self.clock, self.calendar = redis, keys, clock, calendar
        self.policy, self.archive, self.anchor = policy, archive, anchor
        self.interval, self.batch = interval, batch
        self._promotions = promotions  # read at each sweep: a reload changes the campaigns
        self._calls = 0
        self.sweeps = 0

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        redis: Redis,
        keys: Keys,
        clock: Clock,
        calendar: GamingCalendar,
        promotions: Callable[[], Sequence[Promotion]],
    ) -> RetentionSweeper:
        root, prefix = settings.retention_audit_archive, settings.key_prefix
        folder = site_archive(root, prefix, settings.site)
        digests = DigestFolder(digest_folder(settings.digest_dir, prefix, settings.site))
        audit = AuditStore(redis, keys)
        return cls(
            redis=redis,
            keys=keys,
            clock=clock,
            calendar=calendar,
            policy=RetentionPolicy.from_settings(settings, promotions()),
            archive=AuditArchive(folder),
            interval=dt.timedelta(seconds=settings.retention_interval_s),
            batch=settings.retention_batch,
            promotions=promotions,
            anchor=DayAnchor(
                audit=audit, clock=clock, calendar=calendar, site=settings.site, folder=digests
            ),
        )

    async def run(self, stop: asyncio.Event) -> None:
        backoff = Backoff()
        while not stop.is_set():
            started = self.clock.now()
            try:
                report = await self.sweep()
            except REDIS_ERRORS as exc:
                logger.warning("retention sweep skipped, Redis unavailable (%s)", exc)
                if await pause(stop, backoff.next_delay()):
                    return
                continue
            backoff.reset()
            if report.removed or report.archived or report.pruned or report.digests:
                logger.info("retention sweep: %s", report)
            wait = dt.timedelta(seconds=1) if report.pending else self.interval
            until = self.clock.now() + wait
            if self.anchor is not None:  # a day's digest soon after it closes (or at once,
                # if it became due while this sweep ran)
                until = min(until, next_anchor_time(self.calendar, started))
            if await sleep_until_or_stop(self.clock, until, stop):
                return

    async def sweep(self) -> SweepReport:
        """One pass over every family the policy bounds."""
        if self._promotions is not None:
            self.policy = self.policy.with_promotions(self._promotions())
        now = self.clock.now()
        report = SweepReport()
        self._calls = 0
        if self.anchor is not None:  # first: the day's digest record is archived at once
            try:
                report.digests = [
                    done.digest.day.isoformat() for done in await self.anchor.catch_up()
                ]
            except (AuditFormatError, OSError) as exc:  # never fatal; loud until fixed
                logger.error("audit digest not written: %s", exc)
        try:
            report.archived = await self._archive_audit()
        except AuditFormatError as exc:  # never fatal to the daemon; loud until fixed
            logger.error("audit archive not written: %s", exc)
        report.pruned = [
            p.name
            for p in self.archive.prune(now.astimezone(dt.UTC).date(), self.policy.audit_days)
        ]
        today = self.calendar.gaming_day(now)
        await self._days(today, report)
        await self._seen(int(now.timestamp() * 1000), report)
        await self._deadletters(report)
        await self._tokens(now, report)
        report.pending = self._calls >= MAX_BATCHES_PER_SWEEP
        self.sweeps += 1
        return report

    def _budget(self) -> bool:
        self._calls += 1
        return self._calls <= MAX_BATCHES_PER_SWEEP

    async def _archive_audit(self) -> int:
        """Copy the records Redis holds beyond the archive's last one, in batches; the
        archive's last record must be Redis's record of the same seq, byte for byte."""
        key = self.keys.audit
        tail = self.archive.tail()
        start = tail.seq if tail else 0  # the list's index i holds seq i + 1
        if tail is not None:
            same = cast(str | None, await self.redis.lindex(key, start - 1))
            if same is None or from_jsonl(same)[0].hash != tail.hash:
                raise AuditFormatError(
                    f"the archive in {self.archive.folder} ends with record {tail.seq}, which "
                    "is not this site's record of that seq: a different site or trail? "
                    "Nothing was archived"
                )
        written = 0
        while self._budget():
            rows = cast(list[str], await self.redis.lrange(key, start, start + self.batch - 1))
            if not rows:
                break
            appended = self.archive.append(from_jsonl("\n".join(rows)))
            written, start = written + appended, start + appended
        return written

    async def _days(self, today: dt.date, report: SweepReport) -> None:
        days = set()
        async for key in self.redis.scan_iter(match=self.keys.pattern("visits"), count=1000):
            days.add(key.rsplit(":", 1)[1])
        async for key in self.redis.scan_iter(match=self.keys.pattern("dayspend"), count=1000):
            days.add(key.rsplit(":", 1)[1])
        for text in sorted(days):
            try:
                day = dt.date.fromisoformat(text)
            except ValueError:
                continue
            if self.policy.keep_day(day, today):
                continue
            if not await self._drop_day(text, report):
                return

    async def _drop_day(self, day: str, report: SweepReport) -> bool:
        """Remove one gaming day; False when the batch budget ran out first."""
        visits = self.keys.visits(day)
        while True:
            if not self._budget():
                return False
            cards = cast(list[str], await self.redis.srandmember(visits, self.batch))
            if not cards:
                break
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.unlink(*(self.keys.day(day, c) for c in cards))
                pipe.srem(visits, *cards)
                gone, _ = await pipe.execute()
            report.count("day", int(gone))
            await asyncio.sleep(0)  # let ingest in between batches
        spend = await self.redis.unlink(self.keys.dayspend(day))
        report.count("dayspend", int(spend))
        report.count("visits", 1)
        logger.info("retention: gaming day %s removed (past its retention)", day)
        return True

    async def _seen(self, now_ms: int, report: SweepReport) -> None:
        old: list[str] = []
        async for key in self.redis.scan_iter(match=self.keys.pattern("seen"), count=1000):
            tail = key.rsplit(":", 1)[1]
            if tail.isdigit() and not self.policy.keep_seen(int(tail), now_ms):
                old.append(key)
        for offset in range(0, len(old), self.batch):
            if not self._budget():
                return
            report.count("seen", int(await self.redis.unlink(*old[offset : offset + self.batch])))

    async def _deadletters(self, report: SweepReport) -> None:
        if not self._budget():
            return
        seconds, micros = await self.redis.time()
        server_ms = int(seconds) * 1000 + int(micros) // 1000
        min_id = self.policy.deadletter_min_id(server_ms)
        gone = await self.redis.xtrim(self.keys.deadletters, minid=min_id, approximate=False)
        report.count("deadletters", int(gone))

    async def _tokens(self, now: dt.datetime, report: SweepReport) -> None:
        index = self.keys.tokens
        ids = sorted(cast(set[str], await self.redis.smembers(index)))
        for offset in range(0, len(ids), self.batch):
            if not self._budget():
                return
            part = ids[offset : offset + self.batch]
            async with self.redis.pipeline(transaction=False) as pipe:
                for token_id in part:
                    pipe.hmget(self.keys.token(token_id), ["expires", "revoked"])
                rows = cast(list[list[str | None]], await pipe.execute())
            old = [t for t, row in zip(part, rows, strict=True) if not self._keep_token(row, now)]
            if old:
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.unlink(*(self.keys.token(t) for t in old))
                    pipe.srem(index, *old)
                    pipe.hdel(self.keys.token_usage, *old)  # its last use goes with it
                    await pipe.execute()
                report.count("token", len(old))

    def _keep_token(self, row: list[str | None], now: dt.datetime) -> bool:
        expires, revoked = row
        if not expires:
            return False  # listed but gone: drop it from the index
        end = dt.datetime.fromisoformat(expires)
        gone = dt.datetime.fromisoformat(revoked) if revoked else None
        return self.policy.keep_token(end, gone, now)
