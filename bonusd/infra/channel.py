"""Listening to one of the site's Redis notification channels for as long as a task runs:
subscribed again with back-off whenever Redis goes away, and told of every (re)subscription,
since whatever was published while nobody listened is gone (Redis pub/sub keeps nothing).

The site's `notify` channel carries what changed: an audit subject or kind after each
commit, a reason from the push hub, and `token-revoked:{id}` when a token is revoked (so
every daemon of the site closes that token's websockets at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from bonusd.infra.backoff import Backoff, pause
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import REDIS_ERRORS

logger = logging.getLogger(__name__)

OnMessage = Callable[[str | None], Awaitable[None]]
"""Called with each message's data, and with None after each (re)subscription."""
REVOKED = "token-revoked:"  # no audit subject or kind holds a colon


def notify_channel(keys: Keys) -> str:
    """The site's notification channel (published after every audit commit)."""
    return keys.notify


def revoked_message(token_id: str) -> str:
    """The notification that token `token_id` was revoked."""
    return f"{REVOKED}{token_id}"


def revoked_token(data: object) -> str | None:
    """The id of the revoked token a notification names, or None for any other one."""
    if isinstance(data, str) and data.startswith(REVOKED):
        return data.removeprefix(REVOKED)
    return None


async def listen(
    redis: Redis, channel: str, stop: asyncio.Event, on_message: OnMessage, *, what: str
) -> None:
    """Hand every message on `channel` to `on_message` until `stop` (`what` names the
    listener in the log when the channel is lost). Returns as soon as `stop` is set: the
    poll of the channel is cancelled, not waited out."""
    async with asyncio.TaskGroup() as tg:
        polling = tg.create_task(_listen(redis, channel, stop, on_message, what), name=what)
        tg.create_task(cancel_when(stop, polling), name=f"{what}-end")


async def _listen(
    redis: Redis, channel: str, stop: asyncio.Event, on_message: OnMessage, what: str
) -> None:
    backoff = Backoff()
    while not stop.is_set():
        pubsub = redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(channel)
            backoff.reset()
            await on_message(None)
            while not stop.is_set():
                message = await pubsub.get_message(timeout=1.0)
                if message is not None:
                    await on_message(message["data"])
        except REDIS_ERRORS as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # a cancel that met the read's own
                raise asyncio.CancelledError from exc  # timeout comes out as TimeoutError
            logger.warning("%s: notification channel lost (%s); reconnecting", what, exc)
            if await pause(stop, backoff.next_delay()):
                return
        finally:
            with contextlib.suppress(*REDIS_ERRORS):
                await pubsub.aclose()


async def cancel_when(stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    """Cancel `task` once `stop` is set: a listener that only wakes others need not wait
    out its poll of the channel (up to a second) before the daemon may stop."""
    await stop.wait()
    task.cancel()
