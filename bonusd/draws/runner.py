"""The draws of one site against Redis: seeds, books, steps committed with the audit trail.

Its keys (bonusd/infra/keys.py): each round's sealed secret seed (`draws/seeds.py`), pool
files, the draw's ledger, its entry in the deadline index and the prize letters' numbers.

A step loads the draw's book (cached; brought up to date from the ledger's tail), runs a
pure command on it, and commits the entries against the ledger length it read, together
with the deadline index. A lost race (`StaleLedger`) reloads and decides again; so two
daemons, or the scheduler and the desk, can never both announce the same pick. Within one
daemon the cached book is shared by every task, so each draw has a lock: a load and a
step hold it, and no task replays a record twice or sees changes not committed. The caches
are bounded (`CacheBounds`: count, MB, idle time): what they drop is read again when used.

Reading never writes: `book`, `ticket_list`, `letter` and `verify` read what the ledger
holds and say what is missing. The entry bin is closed (`close_bin`) only by the scheduler
at the bin's time, or by the desk's explicit request, never before the scheduled close
(`bin_may_close`); running a round closes the bin first, so it is refused then too.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Entry, Kind
from bonusd.audit.store import AuditStore
from bonusd.audit.writes import StepWrites
from bonusd.clocks.clock import Clock
from bonusd.draws import caches
from bonusd.draws.book import SCHEDULER, DrawBook, DrawPlan, check_bin_closes, subject_of
from bonusd.draws.caches import DESK_CACHES, CacheBounds
from bonusd.draws.changerunner import ChangeCommands
from bonusd.draws.claims import Actor, ClaimError, Prize
from bonusd.draws.evidence import evidence
from bonusd.draws.fairness import Pool, SeedSource
from bonusd.draws.ledger import ExcludedSincePool, LedgerRunner
from bonusd.draws.poolfile import parse_pool
from bonusd.draws.rounds import DrawError, RoundKey, TicketList
from bonusd.draws.seal import SeedSeal
from bonusd.draws.seeds import SeedVault, draw_seeds
from bonusd.draws.verify import Verification
from bonusd.errors import NotFoundError
from bonusd.infra.keys import Keys
from bonusd.promotions.store import PromotionStore

logger = logging.getLogger(__name__)

Command = Callable[[DrawBook], list[Entry]]


class DrawRunner(ChangeCommands, LedgerRunner[DrawBook]):
    """Runs the site's draws: every change is one atomic commit of ledger, chain and index."""

    kind = "draw"

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        audit: AuditStore,
        promotions: PromotionStore,
        clock: Clock,
        seal: SeedSeal,
        seed_source: SeedSource = secrets.token_bytes,
        on_deadline_change: Callable[[], None] = lambda: None,
        on_records: Callable[[str, list[AuditRecord]], Awaitable[None]] | None = None,
        bounds: CacheBounds = DESK_CACHES,
        pools: caches.DeskCache[str, Pool] | None = None,
    ) -> None:
        super().__init__(redis, keys, audit, on_deadline_change=on_deadline_change, bounds=bounds)
        self.promotions, self.clock = promotions, clock
        self.seeds = SeedVault(redis, seal, seed_source)
        # pool files by commitment: `pools` when shared with the daemon's other runners
        self.pools = caches.pool_cache(bounds, self._now) if pools is None else pools
        self._on_records = on_records

    # -- plans ------------------------------------------------------------------------------
    def plan(self, promotion_id: str, draw_id: str) -> DrawPlan:
        promotion, draw = self.promotions.draw(promotion_id, draw_id)
        return DrawPlan.of(promotion, draw)

    def resolve(self, draw_ref: str) -> tuple[str, str]:
        """`promotion.draw`, or a bare draw id held by exactly one promotion."""
        promotion_id, dot, draw_id = draw_ref.rpartition(".")
        if dot:
            self.promotions.draw(promotion_id, draw_id)
            return promotion_id, draw_id
        owners = [
            p.id
            for p in self.promotions.promotions.values()
            if any(d.id == draw_ref for d in p.draw_list)
        ]
        if len(owners) != 1:
            raise NotFoundError(
                f"draw {draw_ref!r} is in {len(owners)} promotions; name it as promotion.draw"
            )
        return owners[0], draw_ref

    # -- loading ----------------------------------------------------------------------------
    async def pool_file(self, commitment: str) -> Pool:
        """The pool file (cached; read from Redis when the cache has dropped it)."""
        pool = self.pools.get(commitment)
        if pool is None:
            raw = await self.redis.get(self.keys.poolfile(commitment))
            if raw is None:
                raise DrawError(f"pool file {commitment[:12]}… is missing from Redis")
            pool = parse_pool(cast(str, raw).encode())
            if pool.commitment == commitment:  # one that is not what its key names: never kept
                self.pools[commitment] = pool
        return pool  # served even when too large to keep (or not its key's: a replay refuses it)

    def remember_pool(self, pool: Pool) -> None:
        self.pools[pool.commitment] = pool

    async def book(self, promotion_id: str, draw_id: str) -> DrawBook:
        """The draw's book, up to its ledger (read it before your next await: a later step
        extends the same book)."""
        async with self._lock(subject_of(promotion_id, draw_id)):
            return await self._load(promotion_id, draw_id)

    async def _load(self, promotion_id: str, draw_id: str, *, writing: bool = False) -> DrawBook:
        """`book`, for a caller holding the lock; `writing`: its seeds checked (`_checked`)."""
        plan = self.plan(promotion_id, draw_id)
        names = {k: self.keys.seed(plan.subject, k[0], str(k[1])) for k in plan.keys}

        async def replay(book: DrawBook, records: list[AuditRecord]) -> None:
            found = [r.payload["pool_commitment"] for r in records if r.kind == Kind.POOL]
            pools = {c: await self.pool_file(c) for c in found}  # held: the cache may drop some
            seeds = await draw_seeds(self.seeds, book, names, records)
            for rec in records:
                book.apply(rec, seeds=seeds, pools=pools.__getitem__)

        refresh = self._refresh(
            plan.subject, lambda: DrawBook(plan), replay, lambda b: b.plan == plan
        )
        check = (lambda b: draw_seeds(self.seeds, b, names, [])) if writing else None
        return await self._checked(plan.subject, refresh, check)

    async def step(
        self,
        promotion_id: str,
        draw_id: str,
        command: Command,
        *,
        extra: Callable[[Any], None] | None = None,
        check: Callable[[list[Entry]], Awaitable[None]] | None = None,
    ) -> list[AuditRecord]:
        """Run `command` on the book and commit its entries, retrying lost races."""
        subject = subject_of(promotion_id, draw_id)
        load = lambda: self._load(promotion_id, draw_id, writing=True)  # noqa: E731
        records = await self._step(subject, load, command, extra=extra, check=check)
        if records and self._on_records is not None:
            await self._on_records(subject, records)
        return records

    # -- the draw's life --------------------------------------------------------------------
    async def commit_seeds(self, promotion_id: str, draw_id: str) -> list[AuditRecord]:
        """Fix and publish the seed commitment of every round without one (at activation
        opening): a seed is made only for such a round, never again for a committed one."""
        plan = self.plan(promotion_id, draw_id)
        async with self._lock(plan.subject):
            book = await self._load(promotion_id, draw_id, writing=True)
        names = {k: self.keys.seed(plan.subject, k[0], str(k[1])) for k in plan.keys}
        todo = {k: name for k, name in names.items() if k not in book.draw.rounds}
        if not todo:
            return []
        made = await self.seeds.create(plan.subject, list(todo.values()))
        now = self.clock.now()
        return await self.step(
            promotion_id,
            draw_id,
            lambda b: [e for k in todo for e in b.commit_round(k, made[todo[k]], now)],
        )

    async def bin_may_close(
        self, promotion_id: str, draw_id: str, due: dt.datetime | None = None
    ) -> None:
        """`BinOpenError` (nothing written) before the bin's scheduled close, unless its
        entry pool is frozen already (a close cut short: the round pools follow from it).
        `due`: the instant of the scheduled action asking (its clock has reached it)."""
        closes = self.promotions.bin_closes_at(promotion_id, draw_id)
        now = self.clock.now() if due is None else max(self.clock.now(), due)
        if now >= closes or await self.promotions.pool(promotion_id, draw_id) is not None:
            return
        why = "it cannot be closed, nor a round drawn, before then (the scheduler closes it)"
        check_bin_closes(subject_of(promotion_id, draw_id), closes, now, why)

    async def close_bin(
        self,
        promotion_id: str,
        draw_id: str,
        actor: Actor = SCHEDULER,
        *,
        due: dt.datetime | None = None,
        early: int | None = None,
    ) -> list[AuditRecord]:
        """Freeze the entry pool (once), seat the leaders and freeze every round's pool;
        refused before the bin's scheduled close (`bin_may_close`) unless `early` names an
        approved early-close request."""
        if early is None:  # an approved early close cut short is finished
            async with self._lock(subject_of(promotion_id, draw_id)):
                book = await self._load(promotion_id, draw_id, writing=True)
            early = book.approvals.waiting_close()
        if early is None:
            await self.bin_may_close(promotion_id, draw_id, due)
        await self.commit_seeds(promotion_id, draw_id)
        book = await self.book(promotion_id, draw_id)
        if all(book.draw.round(*k).pool is not None for k in book.plan.keys):
            return []
        now = self.clock.now() if due is None else max(self.clock.now(), due)
        entry_pool = await self.promotions.freeze_pool(promotion_id, draw_id, now)
        entries = {t.value: entry_pool.entries(t) for t, _ in entry_pool.tombolas}
        seats = await self.promotions.seats(promotion_id, draw_id)
        pools: list[Pool] = []

        def command(current: DrawBook) -> list[Entry]:
            out, frozen = current.close_bin(entries, seats, actor, now, early=early)
            pools[:] = frozen
            return out

        def archive(writes: StepWrites) -> None:
            for pool in pools:
                writes.file(self.keys.poolfile(pool.commitment), pool.serialise())

        records = await self.step(promotion_id, draw_id, command, extra=archive)
        for pool in pools:
            self.remember_pool(pool)
        return records

    async def _with_exclusions(
        self,
        promotion_id: str,
        draw_id: str,
        command: Command,
        extra: Callable[[Any], None] | None = None,
    ) -> list[AuditRecord]:
        """Run a picking command; a picked member excluded since the pool froze is recorded
        as excluded first and passed over, and the picks are made again."""
        while True:
            try:
                return await self.step(
                    promotion_id, draw_id, command, extra=extra, check=self._refuse_excluded
                )
            except ExcludedSincePool as exc:
                cards = [p["card"] for p in exc.picks]
                await self.step(promotion_id, draw_id, self._exclusions(cards))

    def _exclusions(self, cards: list[str]) -> Command:
        now, note = self.clock.now(), "excluded in the member file after the pool froze"
        return lambda b: [e for c in cards for e in b.exclude(c, note, SCHEDULER, now)]

    async def run_round(
        self,
        promotion_id: str,
        draw_id: str,
        number: int,
        actor: Actor = SCHEDULER,
        *,
        due: dt.datetime | None = None,
    ) -> list[AuditRecord]:
        """Draw round `number` (idempotent: a drawn round is left as it is); closes the
        bin first, so it is refused before the bin's scheduled close."""
        await self.close_bin(promotion_id, draw_id, actor, due=due)
        now = self.clock.now()
        return await self._with_exclusions(
            promotion_id, draw_id, lambda b: b.run_round(number, actor, now)
        )

    async def missed(
        self, promotion_id: str, draw_id: str, number: int, late: dt.timedelta
    ) -> list[AuditRecord]:
        """Record that round `number` was not drawn at its time (the daemon was down)."""
        await self.close_bin(promotion_id, draw_id)
        now = self.clock.now()
        return await self.step(promotion_id, draw_id, lambda b: b.missed(number, late, now))

    async def accept_ticket(
        self,
        promotion_id: str,
        draw_id: str,
        key: RoundKey,
        number: int,
        *,
        actor: Actor,
        printed_pool: str | None = None,
    ) -> list[AuditRecord]:
        await self.close_bin(promotion_id, draw_id, actor)
        now = self.clock.now()
        return await self._with_exclusions(  # an owner excluded since the freeze is refused
            promotion_id, draw_id, lambda b: b.accept_ticket(key, number, printed_pool, actor, now)
        )

    async def act(
        self, promotion_id: str, draw_id: str, claim_id: int, action: str, actor: Actor, **args: Any
    ) -> list[AuditRecord]:
        """A claim action; publishes the seeds of rounds it settles."""
        now = self.clock.now()
        letters: dict[str, str] = {}

        def command(current: DrawBook) -> list[Entry]:
            out = current.act(claim_id, action, actor, now, **args) + current.reveal_seeds(now)
            letters.clear()
            letters.update(
                {e.payload["number"]: current.subject for e in out if e.kind is Kind.LETTER}
            )
            return out

        def index(pipe: Any) -> None:
            if letters:
                pipe.hset(self.keys.letters, mapping=letters)

        return await self._with_exclusions(promotion_id, draw_id, command, extra=index)

    async def load_prizes(
        self,
        promotion_id: str,
        draw_id: str,
        key: RoundKey,
        prizes: tuple[Prize, ...],
        actor: Actor,
    ) -> list[AuditRecord]:
        await self.commit_seeds(promotion_id, draw_id)
        now = self.clock.now()
        return await self.step(
            promotion_id, draw_id, lambda b: b.load_prizes(key, prizes, actor, now)
        )

    async def run_due(self, promotion_id: str, draw_id: str) -> int:
        """Act on every expired claim timer of the draw (no-shows, lapsed letters)."""
        done = 0
        while True:
            book = await self.book(promotion_id, draw_id)
            due = book.due(self.clock.now())
            if not due:
                return done
            claim_id, action = due[0]
            try:
                await self.act(promotion_id, draw_id, claim_id, action, SCHEDULER)
            except ClaimError:
                # lost a race: another daemon (or the desk) acted on the claim first
                if (claim_id, action) in (await self.book(promotion_id, draw_id)).due(
                    self.clock.now()
                ):
                    raise
                continue
            done += 1

    async def ticket_list(
        self, promotion_id: str, draw_id: str, tombola: str, round_no: int
    ) -> tuple[DrawBook, TicketList]:
        """A round's numbered ticket list, read only (`DrawError` while it is not frozen)."""
        plan = self.plan(promotion_id, draw_id)
        if (tombola, round_no) not in plan.keys:
            have = ", ".join(f"{t} {r}" for t, r in plan.keys)
            raise NotFoundError(
                f"draw {plan.subject} has no {tombola} round {round_no}; its rounds: {have}"
            )
        book = await self.book(promotion_id, draw_id)
        rnd = book.draw.rounds.get((tombola, round_no))
        if rnd is not None and rnd.pool is not None:
            return book, book.draw.ticket_list(tombola, round_no)
        closes = self.promotions.bin_closes_at(promotion_id, draw_id)
        check_bin_closes(plan.subject, closes, self.clock.now(), "the ticket lists exist then")
        raise DrawError(
            f"the entry bin of {plan.subject} closed at {closes.isoformat()} but its pools are "
            "not frozen yet: the leader's scheduler freezes them; if no daemon leads, close it "
            f"with POST /promotions/{promotion_id}/draws/{draw_id}/close-bin (desk)"
        )

    async def letter(self, number: str) -> tuple[str, str]:
        """(promotion, draw) of a prize letter number."""
        subject = await self.redis.hget(self.keys.letters, number)
        if subject is None:
            raise NotFoundError(f"there is no prize letter {number}")
        return self.resolve(cast(str, subject))

    # -- verification -----------------------------------------------------------------------
    async def verify(self, draw_ref: str) -> tuple[str, dict[RoundKey, Verification]]:
        """The chain check and each round recomputed from its revealed seed and pool file."""
        promotion_id, draw_id = self.resolve(draw_ref)
        subject = subject_of(promotion_id, draw_id)
        part = await self.audit.reads.draw(subject)  # its records, each held to the chain
        records = part.records
        pools = {}
        for rec in records:
            if rec.kind == Kind.POOL:
                commitment = rec.payload["pool_commitment"]
                raw = await self.redis.get(self.keys.poolfile(commitment))
                if raw is not None:
                    pools[commitment] = parse_pool(cast(str, raw).encode())
        return str(part.check), evidence(records, subject, pools).verify()
