"""The four-eyes side of the draw runner: exclusions and proxies made directly before a
draw's pools freeze, and after it requested by one staff member and decided by another
(`bonusd.draws.approvals`, the rules in `bonusd.draws.bookchanges`). A part of
`DrawRunner` (its base class): each command is one step of the draw's ledger."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Any

from bonusd.audit.chain import AuditRecord, Entry
from bonusd.clocks.clock import Clock
from bonusd.draws.approvals import ChangeKind, Decision
from bonusd.draws.book import SCHEDULER, DrawBook
from bonusd.draws.claims import Actor

Command = Callable[[DrawBook], list[Entry]]


class ChangeCommands:
    """Exclusions, proxies, change requests and their decisions, for `DrawRunner`."""

    clock: Clock

    async def step(
        self,
        promotion_id: str,
        draw_id: str,
        command: Command,
        *,
        extra: Callable[[Any], None] | None = None,
        check: Callable[[list[Entry]], Awaitable[None]] | None = None,
    ) -> list[AuditRecord]:
        raise NotImplementedError  # DrawRunner's

    async def book(self, promotion_id: str, draw_id: str) -> DrawBook:
        raise NotImplementedError  # DrawRunner's

    async def commit_seeds(self, promotion_id: str, draw_id: str) -> list[AuditRecord]:
        raise NotImplementedError  # DrawRunner's

    async def close_bin(
        self,
        promotion_id: str,
        draw_id: str,
        actor: Actor = SCHEDULER,
        *,
        due: dt.datetime | None = None,
        early: int | None = None,
    ) -> list[AuditRecord]:
        raise NotImplementedError  # DrawRunner's

    async def register_proxy(
        self, promotion_id: str, draw_id: str, card: str, *, proxy_id: str, name: str, actor: Actor
    ) -> list[AuditRecord]:
        now = self.clock.now()
        return await self.step(
            promotion_id, draw_id, lambda b: b.register_proxy(card, proxy_id, name, actor, now)
        )

    async def exclude(
        self, promotion_id: str, draw_id: str, card: str, note: str, actor: Actor
    ) -> list[AuditRecord]:
        now = self.clock.now()
        return await self.step(promotion_id, draw_id, lambda b: b.exclude(card, note, actor, now))

    async def request_change(
        self,
        promotion_id: str,
        draw_id: str,
        change: ChangeKind,
        reason: str,
        actor: Actor,
        **fields: str,
    ) -> list[AuditRecord]:
        """Record a four-eyes change request (`bonusd.draws.approvals`)."""
        if change is ChangeKind.EARLY_CLOSE:
            await self.commit_seeds(promotion_id, draw_id)
        now = self.clock.now()
        return await self.step(
            promotion_id,
            draw_id,
            lambda b: b.request_change(change, reason, actor, now, **fields),
        )

    async def decide(
        self, promotion_id: str, draw_id: str, number: int, decision: Decision, actor: Actor
    ) -> list[AuditRecord]:
        """A second staff member's decision; an approved change is made at once (an early
        close freezes the pools now, recorded as an exception)."""
        now = self.clock.now()
        records = await self.step(
            promotion_id, draw_id, lambda b: b.decide(number, decision, actor, now)
        )
        book = await self.book(promotion_id, draw_id)
        wanted = book.approvals.requests[number]
        if decision is Decision.APPROVED and wanted.change is ChangeKind.EARLY_CLOSE:
            records += await self.close_bin(promotion_id, draw_id, actor, early=number)
        return records
