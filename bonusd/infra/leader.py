"""Leadership of a site: which of its daemons runs the work that must run once.

Every daemon ingests, serves HTTP and pushes; one of them, the leader, also runs the
scheduler, the claim timers, the SMS notices and the idle sweep (docs/leader.md). The
leader holds a lease in Redis (`{base}leader`, a string `{token}:{holder}` with a TTL):

- **acquire**: one script sets the lease when nobody holds it (SET NX PX semantics) and
  bumps the fencing token (`{base}leader:token`, INCR), so every acquisition carries a
  token greater than all before it. A daemon restarting under the same MQTT client id
  (which the broker lets connect only once) takes its dead predecessor's lease at once,
  with a new token, instead of waiting for the TTL;
- **renew**: a compare-and-extend script every `BONUSD_LEADER_RENEW_S`; the lease is
  considered valid for the TTL from the instant the renewal was *sent*;
- **step down**: a leader that cannot renew (Redis unreachable, or the lease is someone
  else's) stops its leader tasks before that validity ends; first asking them to stop,
  then cancelling them;
- **release**: a clean shutdown deletes the lease (compare-and-delete), so a standby takes
  over at its next poll instead of after the TTL.

The token fences: the scheduler's "fired" markers are checked and written by scripts that
first compare the lease with the caller's `{token}:{holder}` (`Fence`), so an old leader
that wakes up after losing the lease can neither start nor mark an action.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.errors import BonusdError
from bonusd.infra.backoff import pause
from bonusd.infra.health import Health
from bonusd.infra.keys import Keys
from bonusd.infra.metrics import Metrics
from bonusd.infra.redisclient import REDIS_ERRORS

logger = logging.getLogger(__name__)

Lead = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
"""The leader's work: runs until the event is set (or it is cancelled)."""

# KEYS: lease, token. ARGV: holder, ttl ms, predecessor prefix ("" = none).
# Returns the new token, or 0 when another holder has it.
_ACQUIRE = """
local cur = redis.call('GET', KEYS[1])
if cur then
  local holder = string.match(cur, '^%d+:(.*)$') or ''
  local prefix = ARGV[3]
  if prefix == '' or string.sub(holder, 1, string.len(prefix)) ~= prefix then
    return 0
  end
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ':' .. ARGV[1], 'PX', ARGV[2])
return token
"""
# KEYS: lease. ARGV: value, ttl ms. 1 = extended, 0 = not ours.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS: lease. ARGV: value. 1 = released, 0 = not ours.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
# KEYS: lease, marker. ARGV: value. -1 = fenced out, 0 = already fired, 1 = to run.
_CLAIM = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
return 1
"""
# KEYS: lease, marker, fired-by hash. ARGV: value, marker value, token.
# -1 = fenced out, 0 = already marked, 1 = marked.
_MARK = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if not redis.call('SET', KEYS[2], ARGV[2], 'NX') then return 0 end
redis.call('HSET', KEYS[3], KEYS[2], ARGV[3])
return 1
"""


class FencedOut(BonusdError):
    """This daemon's lease is gone (another daemon leads now): it must not act."""


class Claim(enum.Enum):
    RUN = 1
    FIRED = 0


class Fence:
    """Checks and marks on behalf of the current lease holder; see the module docstring."""

    def __init__(self, redis: Redis, keys: Keys, leadership: Leadership) -> None:
        self._redis = redis
        self._leadership = leadership
        self.lease_key = leadership.lease_key
        self.fired_by = keys.leader_fired_by  # marker -> token that wrote it
        self._claim = redis.register_script(_CLAIM)
        self._mark = redis.register_script(_MARK)

    def _value(self) -> str:
        value = self._leadership.value
        if value is None:
            raise FencedOut("this daemon is not the leader")
        return value

    def _refused(self, what: str) -> FencedOut:
        self._leadership.fenced_out()
        return FencedOut(
            f"{what} refused: the lease of token {self._leadership.token} is no longer held; "
            "another daemon leads now"
        )

    async def check(self) -> None:
        """Raise `FencedOut` unless this daemon still holds the lease."""
        value = self._value()
        if await self._redis.get(self.lease_key) != value:
            raise self._refused("work")

    async def claim(self, marker: str) -> Claim:
        """Whether the action of `marker` is still to run; `FencedOut` if not ours to run."""
        got = int(cast(int, await self._claim(keys=[self.lease_key, marker], args=[self._value()])))
        if got < 0:
            raise self._refused(f"action {marker}")
        return Claim(got)

    async def mark(self, marker: str, value: str) -> bool:
        """Mark the action fired, recording the token; False if it was marked already."""
        args = [self._value(), value, str(self._leadership.token)]
        got = int(
            cast(int, await self._mark(keys=[self.lease_key, marker, self.fired_by], args=args))
        )
        if got < 0:
            raise self._refused(f"marking {marker}")
        return got == 1


class Leadership:
    """Campaigns for the site's lease and runs the leader's work while holding it."""

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        holder: str,
        ttl_s: float,
        renew_s: float,
        poll_s: float,
        health: Health,
        metrics: Metrics,
    ) -> None:
        self._redis = redis
        self.lease_key = keys.leader
        self.token_key = keys.leader_token
        self._prefix = f"{holder}#"  # what a restart of this daemon is recognised by
        self.holder = f"{self._prefix}{secrets.token_hex(6)}"
        self.ttl_s, self.renew_s, self.poll_s = ttl_s, renew_s, poll_s
        self.health, self.metrics = health, metrics
        self.token: int | None = None
        self.valid_until: float | None = None  # monotonic: when our lease may have lapsed
        self._lost = asyncio.Event()
        self._acquire = redis.register_script(_ACQUIRE)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)
        self.fence = Fence(redis, keys, self)

    @property
    def value(self) -> str | None:
        """The lease as this daemon holds it (None: standby)."""
        return None if self.token is None else f"{self.token}:{self.holder}"

    @property
    def step_down_margin_s(self) -> float:
        """Stop leading this long before the lease may lapse."""
        return self.ttl_s / 4

    def fenced_out(self) -> None:
        """A fenced write was refused: step down now."""
        self._lost.set()

    async def acquire(self) -> int | None:
        """Take the lease if it is free (or our dead predecessor's): the new token."""
        sent = time.monotonic()
        args: list[str | int] = [self.holder, int(self.ttl_s * 1000), self._prefix]
        got = int(cast(int, await self._acquire(keys=[self.lease_key, self.token_key], args=args)))
        if not got:
            return None
        self.token, self.valid_until = got, sent + self.ttl_s
        self._lost.clear()
        self.health.leader_token = got
        self.metrics.leader.set(1)
        self.metrics.leader_token.set(got)
        self.metrics.leader_changes.labels("acquired").inc()
        logger.warning("leader of the site now (fencing token %d, holder %s)", got, self.holder)
        return got

    async def renew(self) -> bool:
        """Extend the lease (compare-and-extend); False when it is no longer ours."""
        value = self.value
        if value is None:
            return False
        sent = time.monotonic()
        args: list[str | int] = [value, int(self.ttl_s * 1000)]
        if not int(cast(int, await self._renew(keys=[self.lease_key], args=args))):
            return False
        self.valid_until = sent + self.ttl_s
        return True

    async def run(self, stop: asyncio.Event, lead: Lead) -> None:
        """Until `stop`: acquire when free, lead while held, stand by otherwise."""
        self.metrics.leader.set(0)
        failures = 0  # leader work that failed in a row: campaign again, but back off
        while not stop.is_set():
            try:
                token = await self.acquire()
            except REDIS_ERRORS as exc:
                logger.warning("leader election waits for Redis (%s)", exc)
                token = None
            if token is not None:
                failures = failures + 1 if await self._lead(stop, lead) else 0
            if await pause(stop, self.poll_s * min(2**failures, 60)):
                return

    async def _lead(self, stop: asyncio.Event, lead: Lead) -> bool:
        """Lead until the lease is lost or `stop`; True when the leader's work failed.

        A failure of the work is logged with its traceback and ends this term only: the
        daemon keeps ingesting and serving, and campaigns again (a daemon that stayed
        down instead left its site with no scheduler, no draws and no claim timers)."""
        leading = asyncio.Event()
        task = asyncio.create_task(lead(leading), name="leader-tasks")
        why = "stopping"
        try:
            why = await self._hold(stop, task)
        finally:
            leading.set()
            await self._stop_tasks(task, why)
            await self._give_up(release=why in {"stopping", "its work failed"})
        error = None if task.cancelled() else task.exception()
        if error is not None:
            logger.error(
                "the leader's work failed (token given up; campaigning again)", exc_info=error
            )
        return error is not None

    async def _hold(self, stop: asyncio.Event, task: asyncio.Task[None]) -> str:
        """Renew until told to stop, the work fails, or the lease cannot be kept."""
        waits: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(stop.wait()),
            asyncio.ensure_future(self._lost.wait()),
        ]
        try:
            wait_s = self.renew_s
            while True:
                watched = waits if task.done() else [*waits, task]
                await asyncio.wait(watched, timeout=wait_s, return_when="FIRST_COMPLETED")
                if stop.is_set():
                    return "stopping"
                if task.done() and (task.cancelled() or task.exception() is not None):
                    return "its work failed"
                if self._lost.is_set():
                    return "a fenced write was refused"
                assert self.valid_until is not None
                left = self.valid_until - self.step_down_margin_s - time.monotonic()
                try:
                    async with asyncio.timeout(max(left, 0.001)):
                        if not await self.renew():
                            return "the lease is held by another daemon"
                    wait_s = self.renew_s
                except (TimeoutError, *REDIS_ERRORS) as exc:
                    left = self.valid_until - self.step_down_margin_s - time.monotonic()
                    if left <= 0:
                        return f"the lease could not be renewed in time ({exc!r})"
                    logger.warning("leader lease renewal failed (%r); retrying", exc)
                    wait_s = min(self.renew_s, max(left / 2, 0.05))
        finally:
            for waiter in waits:
                waiter.cancel()

    async def _stop_tasks(self, task: asyncio.Task[None], why: str) -> None:
        """Ask the leader tasks to stop; cancel them if they would outlive the lease."""
        if why != "stopping":  # a lost lease is a recovered fault; failed work logs its own
            logger.warning("stepping down as leader (token %s): %s", self.token, why)
        if task.done():
            return
        grace = 5.0  # a clean shutdown lets a draw in hand finish its commit
        if why != "stopping" and self.valid_until is not None:
            grace = self.valid_until - self.step_down_margin_s / 2 - time.monotonic()
        await asyncio.wait([task], timeout=max(grace, 0.0))  # never raises the task's error
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _give_up(self, *, release: bool) -> None:
        """Forget the lease; on a clean stop, delete it so a standby takes over at once."""
        value = self.value
        self.token = self.valid_until = None
        self.health.leader_token = None
        self.metrics.leader.set(0)
        self.metrics.leader_changes.labels("released" if release else "lost").inc()
        if release and value is not None:
            with contextlib.suppress(*REDIS_ERRORS, TimeoutError):
                async with asyncio.timeout(2):
                    await self._release(keys=[self.lease_key], args=[value])
                    logger.info("leader lease released")
