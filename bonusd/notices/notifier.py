"""Telling winners by SMS: the daemon task that turns the audit trail into outbox entries
and sends them through the gateway.

Two loops run in one task (`SmsNotifier.run`), which only the site's leader runs
(docs/leader.md):

- **notify**: reads the site's audit trail (`audit`) from the persisted cursor. For each
  winner event that is texted (`smstext.SMS_MOMENTS`) of a member who opted in to SMS
  (`sms_opt_in`; Festa Fortuna cl. 5) — and only then — it writes one entry, keyed by
  the record's seq, moving the cursor in the same atomic step (`Outbox.enqueue`). The
  opt-in and the number are read from the member registry when the record is read.
- **send** (only with `BONUSD_SMS_WEBHOOK_URL`): takes each due entry under a lease,
  drops it as expired if its moment has passed, else sends it; a failure is retried with
  jittered, capped backoff on the daemon clock up to `BONUSD_SMS_MAX_ATTEMPTS`, and
  every outcome is kept in the entry, counted in `bonusd_sms_messages` and logged.

Neither loop is on the draws' path: a claim step never waits for, or fails with, an SMS.
A Redis outage is waited out; any other fault is logged and the loop goes on, because
an SMS problem must never stop the daemon that runs the draws.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from bonusd.audit.chain import from_jsonl
from bonusd.clocks.clock import Clock
from bonusd.errors import AuditFormatError, NotFoundError
from bonusd.floor.store import FloorStore
from bonusd.infra.backoff import Backoff, pause
from bonusd.infra.metrics import Metrics
from bonusd.infra.redisclient import REDIS_ERRORS
from bonusd.notices.announcements import EventReader, WinnerEvent, occasion_of
from bonusd.notices.announcements import promotion_id_of as promotion_of
from bonusd.notices.outbox import Outbox, OutboxEntry, Status
from bonusd.notices.smsgateway import GatewayError, SmsGateway, SmsMessage, WebhookGateway
from bonusd.notices.smstext import SMS_MOMENTS, sms_notice
from bonusd.promotions.store import PromotionStore
from bonusd.registry.masking import mask_card
from bonusd.settings import Settings

logger = logging.getLogger(__name__)
POLL_S = 0.5  # wall-clock cadence of looking for new records / due entries
BATCH = 200  # audit records read, or entries sent, per step
RETRY_BASE_S = 2.0


async def _unless_stopped(work: Coroutine[Any, Any, int], stop: asyncio.Event) -> int:
    """`work`'s result; cancelled once `stop` is set, so a slow gateway never holds up the
    shutdown (a send cut short is due again once its lease runs out, and the provider
    sees the same Idempotency-Key)."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return 0 if task.cancelled() else task.result()


async def _send(gateway: SmsGateway, message: SmsMessage) -> None:
    """`gateway.send`, with any fault of an adapter reported as a retryable failure."""
    try:
        await gateway.send(message)
    except GatewayError:
        raise
    except Exception as exc:
        raise GatewayError(f"{gateway.describe} failed: {exc!r}", permanent=False) from exc


class SmsNotifier:
    """The notify and send loops of one site; see the module docstring."""

    def __init__(
        self,
        *,
        settings: Settings,
        outbox: Outbox,
        store: FloorStore,
        promotions: PromotionStore,
        clock: Clock,
        metrics: Metrics,
        gateway: SmsGateway | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings, self.outbox, self.store = settings, outbox, store
        self.promotions, self.clock, self.metrics = promotions, clock, metrics
        self._gateway = gateway
        self._own_gateway = gateway is None  # made from the settings, per run (below)
        self._rng = rng or random.Random()
        self._reader = EventReader()
        self._wake = asyncio.Event()
        self._owner = secrets.token_hex(6)
        self.queued = self.sent = 0  # this run, for the shutdown log
        self.reading = asyncio.Event()  # set once this daemon reads the trail (it leads)

    def _make_gateway(self) -> SmsGateway | None:
        url = self.settings.sms_webhook_url
        if self._gateway is None and url:
            secret = self.settings.sms_webhook_secret.get_secret_value()
            self._gateway = WebhookGateway(url, secret, timeout_s=self.settings.sms_timeout_s)
        return self._gateway

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop`: notify, and send when a gateway is configured."""
        gateway = self._make_gateway()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._loop(stop, self.start, self.notify_once, "notify"))
                if gateway is not None:
                    tg.create_task(self._loop(stop, None, self.send_once, "send"))
        finally:
            if gateway is not None:
                await gateway.aclose()
                if self._own_gateway:  # a daemon that leads again gets a fresh one
                    self._gateway = None
            logger.info("SMS notices stopped: %d queued, %d sent this run", self.queued, self.sent)

    async def _loop(
        self,
        stop: asyncio.Event,
        start: Callable[[], Awaitable[None]] | None,
        step: Callable[[], Coroutine[Any, Any, int]],
        name: str,
    ) -> None:
        backoff = Backoff(cap=self.settings.backoff_max_s, rng=self._rng)
        started = start is None
        while not stop.is_set():
            try:
                if not started and start is not None:
                    await start()
                    started = True
                busy = await _unless_stopped(step(), stop)
            except REDIS_ERRORS as exc:
                logger.warning("SMS %s waits for Redis (%s)", name, exc)
                if await pause(stop, backoff.next_delay()):
                    return
                continue
            except Exception:
                # a fault here must not stop the daemon that runs the draws: log, go on
                logger.exception("SMS %s step failed; retrying", name)
                if await pause(stop, backoff.next_delay()):
                    return
                continue
            backoff.reset()
            if not busy:
                await self._idle(stop, name)

    async def _idle(self, stop: asyncio.Event, name: str) -> None:
        """Wait for work: the poll interval, a poke, or (sender) the next due entry."""
        waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(asyncio.sleep(POLL_S))]
        if name == "send":
            waits.append(asyncio.ensure_future(self._wake.wait()))
            due = await self.outbox.next_due()
            if due is not None:
                waits.append(asyncio.ensure_future(self.clock.sleep_until(due)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
            if name == "send":
                self._wake.clear()

    def poke(self) -> None:
        """New entries are queued: look for due ones now."""
        self._wake.set()

    # -- notify -----------------------------------------------------------------------------
    async def start(self) -> None:
        """Say where texts go, and take up the read position (the trail's end on a
        site's first start)."""
        gateway = self._make_gateway()
        where = gateway.describe if gateway else "none: kept in the local outbox"
        await self.outbox.set_gateway(where, self.clock.now())
        position = await self.outbox.start_cursor()
        if position:  # the record before the cursor says whether the next pick is a redraw
            for row in await self.outbox.rows(position - 1, 1):
                with contextlib.suppress(AuditFormatError):
                    self._reader.read(from_jsonl(row)[0])
        logger.info("SMS notices from audit record %d on; gateway: %s", position + 1, where)
        self.reading.set()

    async def notify_once(self) -> int:
        """Read the next records of the trail and queue their texts; the records read."""
        start = await self.outbox.position()
        rows = await self.outbox.rows(start, BATCH)
        entries: list[OutboxEntry] = []
        for seq, row in enumerate(rows, start + 1):
            try:
                event = self._reader.read(from_jsonl(row)[0])
                texted = event is not None and event.moment in SMS_MOMENTS
                entry = await self._entry(event) if event is not None and texted else None
            except REDIS_ERRORS:
                raise  # read the record again once Redis answers
            except Exception as exc:  # one odd record must not hold up every text after it
                logger.warning("SMS notices skip audit record %d: %r", seq, exc)
                continue
            if entry is not None:
                entries.append(entry)
        if not rows:
            return 0
        added = await self.outbox.enqueue(start, start + len(rows), entries)
        if added is None:  # another daemon read these first; its reader saw what ours missed
            self._reader = EventReader()
            return 1
        for entry in entries:
            if entry.id in added:
                self.metrics.sms.labels(str(entry.status)).inc()
                self.queued += entry.status is Status.QUEUED
        if added:
            self.poke()
        return len(rows)

    async def _entry(self, event: WinnerEvent) -> OutboxEntry | None:
        promotion = self.promotions.promotions.get(promotion_of(event.draw_id))
        if promotion is None:
            logger.warning("SMS: %s is not a running promotion; not texted", event.draw_id)
            return None
        notice = sms_notice(event, occasion_of(promotion, event.draw_id))
        if notice is None:
            return None
        member = await self.store.member(event.card)
        if member is None or not member.sms_opt_in:
            return None  # only to members who opted in (cl. 5)
        now = self.clock.now()
        status = Status.QUEUED if member.mobile else Status.NO_NUMBER
        if status is Status.QUEUED and now > notice.expires_at:
            status = Status.EXPIRED  # read too late (the daemon was down): not sent late
        entry = OutboxEntry(
            id=str(event.seq),
            draw_id=event.draw_id,
            claim=event.claim,
            moment=str(event.moment),
            card=mask_card(event.card),
            to=member.mobile or "",
            text=notice.text,
            created_at=now,
            expires_at=notice.expires_at,
            status=status,
            next_attempt_at=now if status is Status.QUEUED else None,
        )
        if status is Status.NO_NUMBER:
            entry.last_error = "opted in to SMS but has no mobile number on file"
            logger.warning("SMS %s: card %s %s", entry.id, entry.card, entry.last_error)
        return entry

    # -- send -------------------------------------------------------------------------------
    async def send_once(self) -> int:
        """Attempt every due entry once; the entries attempted."""
        gateway = self._gateway
        if gateway is None:
            return 0
        done = 0
        lease_s = self.settings.sms_timeout_s + 5
        for entry_id in await self.outbox.due_ids(self.clock.now(), BATCH):
            now = self.clock.now()
            if not await self.outbox.lease(entry_id, now, owner=self._owner, seconds=lease_s):
                continue
            try:
                entry = await self.outbox.get(entry_id)
            except NotFoundError:
                logger.warning("SMS %s is due but not in the outbox; dropped", entry_id)
                await self.outbox.forget(entry_id)
                continue
            await self._attempt(gateway, entry, now)
            done += 1
        return done

    async def _attempt(self, gateway: SmsGateway, entry: OutboxEntry, now: dt.datetime) -> None:
        if now > entry.expires_at:
            entry.status, entry.next_attempt_at = Status.EXPIRED, None
            logger.warning(
                "SMS %s expired unsent after %d attempt(s): %s",
                entry.id,
                entry.attempts,
                entry.last_error or "no attempt in time",
            )
            self.metrics.sms.labels("expired").inc()
            await self.outbox.save(entry, due_at=None)
            return
        message = SmsMessage(entry.id, self.settings.site, entry.to, entry.text, entry.created_at)
        entry.attempts += 1
        try:
            await _send(gateway, message)
        except GatewayError as exc:
            entry.last_error = str(exc)
            if exc.permanent or entry.attempts >= self.settings.sms_max_attempts:
                entry.status, entry.next_attempt_at = Status.FAILED, None
                self.metrics.sms.labels("failed").inc()
                logger.warning(
                    "SMS %s failed after %d attempt(s): %s", entry.id, entry.attempts, exc
                )
                await self.outbox.save(entry, due_at=None)
                return
            backoff = Backoff(base=RETRY_BASE_S, cap=self.settings.sms_retry_max_s, rng=self._rng)
            backoff.attempt = entry.attempts - 1
            entry.status = Status.RETRYING
            entry.next_attempt_at = now + dt.timedelta(seconds=backoff.next_delay())
            self.metrics.sms.labels("retry").inc()
            logger.warning(
                "SMS %s attempt %d of %d failed (%s); next at %s",
                entry.id,
                entry.attempts,
                self.settings.sms_max_attempts,
                exc,
                entry.next_attempt_at.isoformat(),
            )
            await self.outbox.save(entry, due_at=entry.next_attempt_at)
            return
        entry.status, entry.sent_at, entry.next_attempt_at = Status.SENT, now, None
        self.sent += 1
        self.metrics.sms.labels("sent").inc()
        logger.info("SMS %s sent (%s, card %s)", entry.id, entry.moment, entry.card)
        await self.outbox.save(entry, due_at=None)
