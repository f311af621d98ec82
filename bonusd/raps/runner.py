"""The RAPS sessions of one site against Redis: seeds, the live floor snapshot, books,
steps committed with the audit trail (`LedgerRunner`, as the draw runner, for bonus jackpots).

Its keys (bonusd/infra/keys.py): each jackpot's sealed seed (`draws/seeds.py`), pool files
(shared with the draws, so one verifier reads both), the floor snapshot each attempt was
judged from (its SHA-256 is in the POOL record), the session's ledger and its entry in
the deadline index; it reads the ingest's `floor-row` through `bonusd.raps.mirror`.

A step loads the session's book (cached; brought up to date from the ledger's tail),
runs a pure command on it and commits the entries against the ledger length it read,
with the archives and the deadline index; a lost race reloads and decides again. As in
the draw runner, each session has a lock within the daemon: loads and steps hold it, so
tasks sharing the cached book never replay a record twice nor see an uncommitted step.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cachetools import LRUCache
from redis.asyncio import Redis

from bonusd.audit.chain import AuditRecord, Entry, Kind
from bonusd.audit.store import AuditStore
from bonusd.audit.writes import StepWrites
from bonusd.clocks.clock import Clock, GamingCalendar
from bonusd.draws.book import SCHEDULER
from bonusd.draws.caches import DESK_CACHES, MB, CacheBounds, DeskCache
from bonusd.draws.claims import Actor, ClaimError
from bonusd.draws.fairness import Pool, SeedSource
from bonusd.draws.ledger import ExcludedSincePool, LedgerRunner
from bonusd.draws.rounds import RoundKey
from bonusd.draws.runner import DrawRunner
from bonusd.draws.seal import SeedSeal
from bonusd.draws.seeds import Committed, SeedVault
from bonusd.draws.verify import Verification
from bonusd.errors import ConflictError, NotFoundError
from bonusd.infra.keys import Keys
from bonusd.promotions import Action
from bonusd.promotions.store import PromotionStore
from bonusd.promotions.timetable import promotion_timetable
from bonusd.raps.book import RapsBook
from bonusd.raps.floorarchive import FILE_REF, FloorArchive, verified_jackpot
from bonusd.raps.mirror import FloorMirror
from bonusd.raps.plan import SessionPlan, jackpot_number
from bonusd.raps.snapshot import FloorSnapshot, judge

Command = Callable[[RapsBook], list[Entry]]
MadePlan = tuple[object, object, SessionPlan]  # a plan, with the promotion and times it is of


class RapsRunner(LedgerRunner[RapsBook]):
    """Runs the site's RAPS sessions: every change is one atomic commit."""

    kind = "raps"

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        audit: AuditStore,
        promotions: PromotionStore,
        clock: Clock,
        calendar: GamingCalendar,
        seal: SeedSeal,
        seed_source: SeedSource = secrets.token_bytes,
        on_deadline_change: Callable[[], None] = lambda: None,
        bounds: CacheBounds = DESK_CACHES,
        pools: DeskCache[str, Pool] | None = None,
    ) -> None:
        super().__init__(redis, keys, audit, on_deadline_change=on_deadline_change, bounds=bounds)
        self.promotions, self.clock, self.calendar = promotions, clock, calendar
        self.seeds = SeedVault(redis, seal, seed_source)
        self._floors = FloorArchive(redis, keys, bounds.floors, bounds.floors_mb * MB)
        self.live_floor = FloorMirror(redis, keys)  # the floor a pick judges
        self._random_times = LRUCache[tuple[str, str], tuple[dt.datetime, ...]](bounds.timetables)
        self._plans = LRUCache[tuple[str, str], MadePlan](bounds.timetables)
        # pool files and the deadline index are the draw runner's: the same keys, one reader
        self._draws = DrawRunner(
            redis=redis,
            keys=keys,
            audit=audit,
            promotions=promotions,
            clock=clock,
            seal=seal,
            bounds=bounds,
            pools=pools,
        )

    def plan(self, promotion_id: str, session_id: str) -> SessionPlan:
        """The session's plan; a session with random jackpot times needs `load_plan` once
        first (its times come from the scheduler's seed in Redis)."""
        promotion = self.promotions.promotion(promotion_id)
        try:
            session = promotion.jackpot_session(session_id)
        except KeyError as exc:
            raise NotFoundError(str(exc).strip("'\"")) from None
        times = None
        if session.times.random:
            times = self._random_times.get((promotion_id, session_id))
            if times is None:
                raise ConflictError(
                    f"jackpot session {promotion_id}.{session_id} has random times that are "
                    "not loaded yet; retry in a moment"
                )
        made = self._plans.get((promotion_id, session_id))
        if made is not None and made[0] is promotion and made[1] == times:
            return made[2]  # (a pick asks three times: working out its times takes ~0.1 ms)
        plan = SessionPlan.of(promotion, session, times)
        self._plans[(promotion_id, session_id)] = (promotion, times, plan)
        return plan

    async def load_plan(
        self, promotion_id: str, session_id: str, *, create: bool = True
    ) -> SessionPlan:
        """`plan`, first fetching a random-time session's instants as the scheduler has them;
        with `create`, fixing them if the scheduler has not yet (a read passes False: it
        never writes, and is answered 409 until they are fixed)."""
        promotion = self.promotions.promotion(promotion_id)
        session = next((s for s in promotion.jackpot_sessions if s.id == session_id), None)
        if session is not None and session.times.random:
            actions = await promotion_timetable(self.redis, self.keys, promotion, create=create)
            self._random_times[(promotion_id, session_id)] = tuple(
                a.at for a in actions if a.action is Action.JACKPOT and a.ids[1] == session_id
            )
        return self.plan(promotion_id, session_id)

    async def resolve(self, jackpot_ref: str) -> tuple[str, str, int]:
        """(promotion, session, number) of `promotion.session.jN`."""
        parts = jackpot_ref.split(".")
        if len(parts) != 3 or not parts[2].startswith("j") or not parts[2][1:].isdigit():
            raise NotFoundError(
                f"jackpot {jackpot_ref!r}: name it as promotion.session.jN, e.g. "
                "montecasino-festa-fortuna.jackpot-2025-10-04.j1"
            )
        plan = await self.load_plan(parts[0], parts[1], create=False)
        plan.at(jackpot_number(jackpot_ref))
        return parts[0], parts[1], jackpot_number(jackpot_ref)

    # -- loading ----------------------------------------------------------------------------
    def _seed_name(self, plan: SessionPlan, number: int) -> str:
        return self.keys.seed(plan.subject, "raps", str(number))

    def _wanted(
        self, plan: SessionPlan, book: RapsBook, records: Sequence[AuditRecord] = ()
    ) -> dict[int, Committed]:
        """The seed of every jackpot the book or `records` commit: its key and commitment."""
        want = {n: st.commitment for n, st in book.jackpots.items() if st.seed}
        for rec in records:
            if rec.kind == Kind.COMMITMENT:
                want[jackpot_number(rec.payload["draw_id"])] = rec.payload["seed_commitment"]
        return {n: Committed(self._seed_name(plan, n), sealed) for n, sealed in want.items()}

    async def _seeds(
        self,
        plan: SessionPlan,
        book: RapsBook,
        records: Sequence[AuditRecord] = (),
        read: tuple[dict[int, Committed], list[str | None]] | None = None,
    ) -> dict[int, bytes]:
        """The seeds of every jackpot the book or `records` commit, each checked against
        its commitment (`SeedVault.committed`: `SeedRefused` otherwise); `read`: the seed
        keys as read with the ledger's length, used when they are still the ones wanted."""
        want = self._wanted(plan, book, records)
        values = read[1] if read is not None and read[0] == want else None
        opened = await self.seeds.committed(plan.subject, list(want.values()), values)
        return {n: opened[c.name] for n, c in want.items()}

    async def book(self, promotion_id: str, session_id: str) -> RapsBook:
        """The session's book, up to date with its ledger. Read it before your next await:
        a later step extends the same book."""
        subject = (await self.load_plan(promotion_id, session_id, create=False)).subject
        async with self._lock(subject):
            return await self._load(promotion_id, session_id)

    async def _load(self, promotion_id: str, session_id: str, *, writing: bool = False) -> RapsBook:
        """`book`, for a caller holding the lock; `writing`: its seeds checked (`_checked`)."""
        plan = await self.load_plan(promotion_id, session_id, create=False)

        async def replay(book: RapsBook, records: list[AuditRecord]) -> None:
            pools: dict[str, Pool] = {}  # held for the replay: the caches may drop some
            floors: dict[tuple[str, int], FloorSnapshot] = {}
            for frozen in (r.payload for r in records if r.kind == Kind.POOL):
                commitment = frozen["pool_commitment"]
                pools[commitment] = await self._draws.pool_file(commitment)
                at = (frozen["draw_id"], frozen["round"])
                floors[at] = await self._floors.load(*at)
            seeds = await self._seeds(plan, book, records)
            for rec in records:
                book.apply(rec, seeds=seeds, pools=pools.__getitem__, floors=lambda *at: floors[at])

        length, read, cached = None, None, self.cached(plan.subject) if writing else None
        if cached is not None and cached.plan == plan:  # a step: its seeds read with the length
            want = self._wanted(plan, cached)
            length, values = await self._length_with(plan.subject, [c.name for c in want.values()])
            read = (want, values)
        refresh = self._refresh(
            plan.subject, lambda: RapsBook(plan), replay, lambda b: b.plan == plan, length
        )
        check = (lambda b: self._seeds(plan, b, read=read)) if writing else None
        where = lambda name: (f"{plan.subject}.j{name.rsplit(':', 1)[1]}", "raps", 0)  # noqa: E731
        return await self._checked(plan.subject, refresh, check, where)

    async def step(
        self,
        promotion_id: str,
        session_id: str,
        command: Command,
        *,
        extra: Callable[[Any], None] | None = None,
        check: Callable[[list[Entry]], Awaitable[None]] | None = None,
    ) -> list[AuditRecord]:
        """Run `command` on the book and commit its entries, retrying lost races."""
        subject = (await self.load_plan(promotion_id, session_id)).subject
        load = lambda: self._load(promotion_id, session_id, writing=True)  # noqa: E731
        return await self._step(subject, load, command, extra=extra, check=check)

    # -- the floor --------------------------------------------------------------------------
    async def snapshot(self, at: dt.datetime | None = None, jid: str = "") -> FloorSnapshot:
        """Every carded-in player on the floor now, with the gaming day's spend, as the
        snapshot file a jackpot at `at` (default: now) is judged from; for jackpot `jid`,
        archived as a difference from its base when `prepare_floor` archived one."""
        at = at or self.clock.now()
        day = self.calendar.gaming_day(at).isoformat()
        # The ingest keeps one pre-joined line per active card in `floor-row`; the daemon
        # mirrors it, so the pick reads only the rows changed since the mirror last looked
        # (one atomic script call) and judges columns checked when they arrived.
        return await self.live_floor.snapshot(at, day, jid)

    async def prepare_floor(self, promotion_id: str, session_id: str, number: int) -> bool:
        """Archive the whole floor now as the base jackpot `number`'s pick writes its floor
        against (docs/fairness.md section 10, form 2): the pick then archives and hashes only
        the rows changed since. False: the mirror dropped it (the pick archives whole)."""
        plan = await self.load_plan(promotion_id, session_id, create=False)
        jid = f"{plan.subject}.j{number}"
        day = self.calendar.gaming_day(plan.at(number)).isoformat()
        await self.live_floor.sync()
        base = self.live_floor.checkpoint(jid, self.clock.now(), day)
        await self.redis.hsetnx(self.keys.raps_floor(jid), FILE_REF + base.sha256, base.serialise())
        return self.live_floor.confirm(jid, base.sha256)

    # -- the session's life -----------------------------------------------------------------
    async def commit_seeds(self, promotion_id: str, session_id: str) -> list[AuditRecord]:
        """Fix and publish every jackpot's seed commitment (at the session start, or before)."""
        plan = await self.load_plan(promotion_id, session_id)
        async with self._lock(plan.subject):  # a seed is made only for a jackpot not committed
            book = await self._load(promotion_id, session_id, writing=True)
        todo = {n: self._seed_name(plan, n) for n, st in book.jackpots.items() if st.seed is None}
        if not todo:
            return []
        made = await self.seeds.create(plan.subject, list(todo.values()))
        seeds = {n: made[name] for n, name in todo.items()}
        now = self.clock.now()
        return await self.step(promotion_id, session_id, lambda b: b.commit_seeds(seeds, now))

    async def sign_decline(
        self, promotion_id: str, session_id: str, card: str, actor: Actor
    ) -> list[AuditRecord]:
        """The desk signs `card` into the session's decline register (until it starts)."""
        if not await self.redis.hexists(self.keys.member_index, card):
            raise NotFoundError(f"card {card} is not a registered member; check the card number")
        now = self.clock.now()
        return await self.step(promotion_id, session_id, lambda b: b.sign_decline(card, actor, now))

    async def run_jackpot(
        self, promotion_id: str, session_id: str, number: int, actor: Actor = SCHEDULER
    ) -> list[AuditRecord]:
        """Select jackpot `number`'s winner from the floor now (idempotent: a jackpot run
        already is left as it is, unless its empty-pool retry is due)."""
        plan = await self.load_plan(promotion_id, session_id)
        book = self.cached(plan.subject)  # if it says "run it", the step's own read decides
        if book is None or not book.ready(number, self.clock.now()):
            await self.commit_seeds(promotion_id, session_id)  # normally done at the start;
            book = await self.book(promotion_id, session_id)  # a refused seed is recorded
            if not book.selectable(number, self.clock.now()):
                return []
        now = self.clock.now()
        floor = await self.snapshot(now, book.jackpot(number).jackpot_id)
        archives: list[tuple[Pool, FloorSnapshot]] = []

        def command(current: RapsBook) -> list[Entry]:
            out, frozen = current.select(number, floor, actor, now)
            archives[:] = frozen
            return out

        def archive(writes: StepWrites) -> None:
            for pool, snap in archives:
                writes.file(self.keys.poolfile(pool.commitment), pool.serialise())
                key, ref = self.keys.raps_floor(pool.draw_id), FILE_REF + snap.sha256
                writes.hfile(key, ref, snap.serialise())  # the file, under its SHA-256
                writes.hsetnx(key, str(pool.round_no), ref)  # the attempt's, with the records

        records = await self.step(promotion_id, session_id, command, extra=archive)
        for pool, _ in archives:  # (the book keeps the floor until the jackpot is settled;
            self._draws.remember_pool(pool)  # a replay reads it from its archive)
        return records

    async def eligibility_report(self, jackpot_ref: str, attempt: int = 0) -> bytes:
        """The readable eligibility report of a jackpot attempt (the latest by default):
        rebuilt from the archived floor snapshot, so it is exactly what the pool was."""
        promotion_id, session_id, number = await self.resolve(jackpot_ref)
        book = await self.book(promotion_id, session_id)
        st = book.jackpot(number)
        attempt = attempt or st.attempt
        if not 1 <= attempt <= st.attempt:
            raise NotFoundError(
                f"jackpot {jackpot_ref} has no attempt {attempt} (it ran {st.attempt})"
            )
        snap = await self._floors.load(st.jackpot_id, attempt)
        return judge(snap, book.plan.rules).report(st.jackpot_id, attempt)

    async def missed(
        self, promotion_id: str, session_id: str, number: int, late: dt.timedelta
    ) -> list[AuditRecord]:
        """Record that jackpot `number` did not run at its time (the daemon was down), so
        the desk sees it in the session and runs it on demand."""
        await self.commit_seeds(promotion_id, session_id)
        now = self.clock.now()
        return await self.step(promotion_id, session_id, lambda b: b.missed(number, late, now))

    async def act(
        self,
        promotion_id: str,
        session_id: str,
        claim_id: int,
        action: str,
        actor: Actor,
        *,
        reason: str = "",
    ) -> list[AuditRecord]:
        """A claim action by the crew or the desk (or the scheduler on a timer); `reason`:
        a reselection's (`bonusd.raps.reselection`). A reselected winner excluded since the
        pool froze is recorded as excluded and passed over, and the reselection made again."""
        now = self.clock.now()
        while True:
            try:
                return await self.step(
                    promotion_id,
                    session_id,
                    lambda b: b.act(claim_id, action, actor, now, reason),
                    check=self._refuse_excluded,
                )
            except ExcludedSincePool as exc:
                found = [(p["draw_id"], p["card"]) for p in exc.picks]
                await self.step(promotion_id, session_id, self._exclusions(found, now))

    async def approve_reselection(
        self, promotion_id: str, session_id: str, number: int, actor: Actor, reason: str
    ) -> list[AuditRecord]:
        """The desk grants the crew one more reselection of jackpot `number`."""
        now = self.clock.now()
        command: Command = lambda b: b.approve_reselection(number, actor, now, reason)  # noqa: E731
        return await self.step(promotion_id, session_id, command)

    @staticmethod
    def _exclusions(found: list[tuple[str, str]], now: dt.datetime) -> Command:
        return lambda b: [e for j, c in found for e in b.exclude(j, c, SCHEDULER, now)]

    async def run_due(self, promotion_id: str, session_id: str) -> int:
        """Act on every expired timer of the session: announcements that ran out
        (register or reselection) and empty-pool retries; returns how many."""
        done = 0
        await self.load_plan(promotion_id, session_id)
        while True:
            book = await self.book(promotion_id, session_id)
            due = book.due(self.clock.now())
            if not due:
                return done
            next_due = due[0]
            if next_due.claim_id is None:
                await self.run_jackpot(promotion_id, session_id, next_due.jackpot, SCHEDULER)
            else:
                try:
                    await self.act(
                        promotion_id, session_id, next_due.claim_id, next_due.action, SCHEDULER
                    )
                except ClaimError:
                    # lost a race: another daemon (or the desk) acted on the claim first
                    if next_due in (await self.book(promotion_id, session_id)).due(
                        self.clock.now()
                    ):
                        raise
                    continue
            done += 1

    # -- verification -----------------------------------------------------------------------
    async def verify(self, jackpot_ref: str) -> tuple[str, dict[RoundKey, Verification]]:
        """The chain check and the jackpot's picks recomputed from what Redis holds: the
        revealed seed, the pool files (one missing or not canonical fails), the floors."""
        promotion_id, session_id, _ = await self.resolve(jackpot_ref)
        rules = (await self.load_plan(promotion_id, session_id, create=False)).rules
        part = await self.audit.reads.draw(jackpot_ref)  # its records, each held to the chain
        found = await verified_jackpot(self.redis, self.keys, part.records, jackpot_ref, rules)
        return str(part.check), found
