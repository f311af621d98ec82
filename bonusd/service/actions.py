"""What the daemon does when a timed action falls due: the scheduler's handlers
(leaderboard publications, seed commitments, entry bins closing, draw rounds, prize
letters lapsing, RAPS jackpots and multiplier windows) and the claim timers' owners.

Every handler is idempotent: the draw and jackpot steps are ledger commits of pure
commands that write nothing for a step already taken (a drawn round is left as it is),
boards are published once and multiplier windows are set members. A handler run twice —
a crash between running and marking, or a paused old leader (docs/leader.md) — changes
nothing the second time.
"""

from __future__ import annotations

import datetime as dt
import logging

from redis.asyncio import Redis

from bonusd.audit.chain import Kind
from bonusd.clocks.clock import Clock
from bonusd.draws.runner import DrawRunner
from bonusd.infra.keys import Keys
from bonusd.promotions import Action, Side, TimedAction
from bonusd.promotions.store import PromotionStore
from bonusd.push.hub import PushHub
from bonusd.raps.runner import RapsRunner
from bonusd.service.claimtimers import RunDue
from bonusd.service.scheduler import Handler

logger = logging.getLogger(__name__)


class ScheduledActions:
    """The handlers of one site's timed actions, over the service's runners and stores."""

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        clock: Clock,
        draw_grace: dt.timedelta,
        promotions: PromotionStore,
        draws: DrawRunner,
        jackpots: RapsRunner,
        push: PushHub,
    ) -> None:
        self.redis, self.keys, self.clock = redis, keys, clock
        self.draw_grace = draw_grace
        self.promotions, self.draws, self.jackpots, self.push = promotions, draws, jackpots, push

    def handlers(self) -> dict[Action, Handler]:
        """The scheduler's handler of each action kind."""
        return {
            Action.LEADERBOARD_PUBLISH: self.publish_boards,
            Action.ACTIVATION_OPENS: self.commit_seeds,
            Action.BIN_CLOSES: self.close_bin,
            Action.DRAW_ROUND: self.draw_round,
            Action.PRIZE_LETTERS_LAPSE: self.lapse_letters,
            Action.JACKPOT_SESSION_STARTS: self.jackpot_seeds,
            Action.JACKPOT: self.jackpot,
            Action.MULTIPLIER_STARTS: self.multiplier_starts,
            Action.MULTIPLIER_ENDS: self.multiplier_ends,
        }

    def timer_owners(self) -> dict[str, RunDue]:
        """The claim timers' owner of each kind of deadline (`draw:`, `raps:`)."""
        return {"draw": self.draw_timers, "raps": self.raps_timers}

    # -- draws ------------------------------------------------------------------------------

    async def publish_boards(self, action: TimedAction) -> None:
        promotion_id, draw_id = action.ids
        for side in Side:
            try:
                await self.promotions.publish_board(promotion_id, draw_id, side, action.at)
            except ValueError:
                continue  # this draw has no board on that side
        await self.push.announce("boards")

    async def commit_seeds(self, action: TimedAction) -> None:
        promotion_id, draw_id = action.ids
        await self.draws.commit_seeds(promotion_id, draw_id)

    async def close_bin(self, action: TimedAction) -> None:
        """The bin's scheduled close (or, after downtime, its late catch-up): the only
        close besides the desk's explicit POST, which is refused before this instant."""
        promotion_id, draw_id = action.ids
        await self.draws.close_bin(promotion_id, draw_id, due=action.at)
        pool = await self.promotions.pool(promotion_id, draw_id)
        book = await self.draws.book(promotion_id, draw_id)
        committed = [
            f"{tombola} round {number} {rnd.pool.commitment}"
            for (tombola, number), rnd in sorted(book.draw.rounds.items())
            if rnd.pool is not None
        ]
        logger.info(
            "entry bin of %s/%s closed: entry pool sha256 %s; round pools committed: %s",
            promotion_id,
            draw_id,
            pool and pool.sha256,
            "; ".join(committed) or "none",
        )

    async def draw_round(self, action: TimedAction) -> None:
        """Draw a round at its time. A round missed by more than the grace (the daemon was
        down) is not drawn behind the floor's back: it is reported and the desk runs it."""
        promotion_id, draw_id, number = action.ids
        plan = self.draws.plan(promotion_id, draw_id)
        if plan.manual:
            logger.info("%s round %s is manual: the desk enters the tickets", plan.subject, number)
            return
        late = self.clock.now() - action.at
        if late > self.draw_grace:
            await self.draws.missed(promotion_id, draw_id, int(number), late)
            return
        records = await self.draws.run_round(promotion_id, draw_id, int(number), due=action.at)
        picks = [r.payload["card"] for r in records if r.kind == Kind.PICK]
        logger.info("%s round %s drawn: %d winner(s)", plan.subject, number, len(picks))

    async def lapse_letters(self, action: TimedAction) -> None:
        promotion_id, draw_id = action.ids
        await self.draws.run_due(promotion_id, draw_id)

    async def draw_timers(self, subject: str) -> int:
        promotion_id, draw_id = self.draws.resolve(subject)
        return await self.draws.run_due(promotion_id, draw_id)

    # -- RAPS jackpots ----------------------------------------------------------------------

    async def jackpot_seeds(self, action: TimedAction) -> None:
        promotion_id, session_id = action.ids
        await self.jackpots.commit_seeds(promotion_id, session_id)

    async def jackpot(self, action: TimedAction) -> None:
        """A RAPS jackpot at its time; one missed by more than the grace is recorded (an
        exception record) and left to the desk."""
        promotion_id, session_id, number = action.ids
        late = self.clock.now() - action.at
        if late > self.draw_grace:
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

    async def raps_timers(self, subject: str) -> int:
        promotion_id, _, session_id = subject.partition(".")
        return await self.jackpots.run_due(promotion_id, session_id)

    # -- multiplier windows -----------------------------------------------------------------

    async def multiplier_starts(self, action: TimedAction) -> None:
        await self.redis.sadd(self.keys.active_multipliers, ":".join(action.ids))
        await self.push.announce("multiplier")

    async def multiplier_ends(self, action: TimedAction) -> None:
        await self.redis.srem(self.keys.active_multipliers, ":".join(action.ids))
        await self.push.announce("multiplier")
