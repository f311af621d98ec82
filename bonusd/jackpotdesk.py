"""The RAPS sessions of one site against Redis: seeds, the live floor snapshot, books,
steps committed with the audit trail (the `drawdesk` model, for bonus jackpots).

Keys (all under the site's hash tag):

    seed:{subject}:raps:{n}    string  jackpot n's secret seed (hex), SET NX
    poolfile:{commitment}      string  an archived jackpot pool (`Pool.serialise`), shared
                                       with the draws so the same verifier reads it
    eligibility:{jackpot_id}   hash    attempt -> the eligibility report (canonical JSON:
                                       eligible cards with their place, the others with
                                       their reasons); its SHA-256 is in the POOL record
    ledger:{subject}           list    the session's audit records (see audit_store)
    deadlines                  zset    `raps:{subject}` -> its next timer (epoch seconds)

A step loads the session's book (cached; brought up to date from the ledger's tail),
runs a pure command on it and commits the entries against the ledger length it read,
with the archives and the deadline index; a lost race reloads and decides again.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections.abc import Callable
from typing import Any, cast

from redis.asyncio import Redis

from bonusd.audit import AuditFormatError, AuditRecord, Kind, evidence, parse_pool, verify_chain
from bonusd.audit_store import AuditStore, Entry
from bonusd.claims import Actor
from bonusd.clock import Clock, GamingCalendar
from bonusd.drawbook import SCHEDULER
from bonusd.drawdesk import DrawDesk
from bonusd.draws import RoundKey
from bonusd.errors import BonusdError, NotFoundError
from bonusd.fairness import Pool, SeedSource, Verification
from bonusd.keys import Keys
from bonusd.ledger import ledger_step, stored_seeds
from bonusd.raps import FloorPlayer, PlayKind
from bonusd.rapsbook import RapsBook, SessionPlan, jackpot_number
from bonusd.standings import PromotionStore

logger = logging.getLogger(__name__)

Command = Callable[[RapsBook], list[Entry]]

# One round trip for the whole floor: Redis reads each active card's session, day spend,
# member-index row and device bank (20,000 cards: ~70 ms of server time, where a client
# pipeline of the same reads costs ~0.5 s of client CPU). Read-only; every key it builds
# carries the site's hash tag, like apply.lua.
_SNAPSHOT = """
local base, day = ARGV[1], ARGV[2]
local out, banks = {}, {}
for _, key in ipairs(KEYS) do
  for _, c in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    local s = redis.call('HMGET', base .. 'session:' .. c,
      'kind', 'area', 'device', 'seat', 'last_play')
    if s[1] then
      local bank = banks[s[3]]
      if not bank then
        bank = redis.call('HGET', base .. 'device:' .. s[3], 'bank') or ''
        banks[s[3]] = bank
      end
      local spend = redis.call('HGET', base .. 'day:' .. day .. ':' .. c, 'spend_cents')
      local member = redis.call('HGET', base .. 'member-index', c)
      out[#out + 1] = table.concat({c, s[1], s[2] or '', s[3] or '', s[4] or '',
        s[5] or '0', spend or '0', member or '', bank}, '\\t')
    end
  end
end
return table.concat(out, '\\n')
"""


class JackpotDesk:
    """Runs the site's RAPS sessions: every change is one atomic commit."""

    def __init__(
        self,
        *,
        redis: Redis,
        keys: Keys,
        audit: AuditStore,
        promotions: PromotionStore,
        clock: Clock,
        calendar: GamingCalendar,
        seed_source: SeedSource = secrets.token_bytes,
        on_deadline_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.redis, self.keys, self.audit = redis, keys, audit
        self.promotions, self.clock, self.calendar = promotions, clock, calendar
        self._seed_source = seed_source
        self._deadline_changed = on_deadline_change
        self._books: dict[str, RapsBook] = {}
        self._reports: dict[tuple[str, int], bytes] = {}
        # pool files and the deadline index are the draw desk's: the same keys, one reader
        self._draws = DrawDesk(
            redis=redis, keys=keys, audit=audit, promotions=promotions, clock=clock
        )
        self._snapshot = redis.register_script(_SNAPSHOT)

    def _key(self, *parts: str) -> str:
        return self.keys.base + ":".join(parts)

    def plan(self, promotion_id: str, session_id: str) -> SessionPlan:
        promotion = self.promotions.promotion(promotion_id)
        try:
            session = promotion.jackpot_session(session_id)
        except KeyError as exc:
            raise NotFoundError(str(exc).strip("'\"")) from None
        return SessionPlan.of(promotion, session)

    def resolve(self, jackpot_ref: str) -> tuple[str, str, int]:
        """(promotion, session, number) of `promotion.session.jN`."""
        parts = jackpot_ref.split(".")
        if len(parts) != 3 or not parts[2].startswith("j") or not parts[2][1:].isdigit():
            raise NotFoundError(
                f"jackpot {jackpot_ref!r}: name it as promotion.session.jN, e.g. "
                "montecasino-festa-fortuna.jackpot-2025-10-04.j1"
            )
        self.plan(parts[0], parts[1]).at(jackpot_number(jackpot_ref))
        return parts[0], parts[1], jackpot_number(jackpot_ref)

    # -- loading ----------------------------------------------------------------------------
    async def _seeds(self, plan: SessionPlan, *, create: bool) -> dict[int, bytes]:
        numbers = list(range(1, len(plan.times) + 1))
        names = [self._key("seed", plan.subject, "raps", str(n)) for n in numbers]
        seeds = await stored_seeds(self.redis, names, create=create, source=self._seed_source)
        return {n: v for n, v in zip(numbers, seeds, strict=True) if v}

    async def _report(self, jid: str, attempt: int) -> bytes:
        if (jid, attempt) not in self._reports:
            raw = await self.redis.hget(self._key("eligibility", jid), str(attempt))
            if raw is None:
                raise BonusdError(
                    f"the eligibility report of {jid} attempt {attempt} is missing from Redis; "
                    "restore it from the backup before running the session"
                )
            self._reports[(jid, attempt)] = cast(str, raw).encode()
        return self._reports[(jid, attempt)]

    async def book(self, promotion_id: str, session_id: str) -> RapsBook:
        """The session's book, up to date with its ledger."""
        plan = self.plan(promotion_id, session_id)
        book = self._books.get(plan.subject)
        length = await self.redis.llen(self.audit.ledger_key(plan.subject))
        if book is None or book.version > length or book.plan != plan:
            book = RapsBook(plan)
        if book.version < length:
            records = await self.audit.ledger(plan.subject, book.version)
            for rec in records:
                if rec.kind == Kind.POOL:
                    await self._draws.pool_file(rec.payload["pool_commitment"])
                    await self._report(rec.payload["draw_id"], rec.payload["round"])
            seeds = await self._seeds(plan, create=False)
            pools = self._draws.cached_pool
            reports = lambda jid, attempt: self._reports[(jid, attempt)]  # noqa: E731
            for rec in records:
                book.apply(rec, seeds=seeds, pools=pools, reports=reports)
        self._books[plan.subject] = book
        return book

    async def step(
        self,
        promotion_id: str,
        session_id: str,
        command: Command,
        *,
        extra: Callable[[Any], None] | None = None,
    ) -> list[AuditRecord]:
        """Run `command` on the book and commit its entries, retrying lost races."""
        subject = self.plan(promotion_id, session_id).subject
        records = await ledger_step(
            audit=self.audit,
            subject=subject,
            deadlines=self._draws.deadlines,
            member=f"raps:{subject}",
            load=lambda: self.book(promotion_id, session_id),
            forget=lambda: self._books.pop(subject, None),
            command=command,
            extra=extra,
        )
        if records:
            self._deadline_changed()
        return records

    # -- the floor --------------------------------------------------------------------------
    async def snapshot(self, at: dt.datetime | None = None) -> list[FloorPlayer]:
        """Every active player on the floor now, with the gaming day's spend (at `at`)."""
        day = self.calendar.gaming_day(at or self.clock.now()).isoformat()
        index = cast(set[str], await self.redis.smembers(self.keys.active_index))
        if not index:
            return []
        keys = [self.keys.base + rel for rel in sorted(index)]
        raw = cast(str, await self._snapshot(keys=keys, args=[self.keys.base, day]))
        out: list[FloorPlayer] = []
        utc = dt.UTC
        for line in raw.split("\n") if raw else []:
            card, kind, area, device, seat, last, spend, member, bank = line.split("\t")
            if kind not in ("egm", "table"):
                logger.warning("card %s: active at %s of unknown kind %r", card, device, kind)
                continue
            tier, _, excluded, *_ = member.split("|") if member else ("", "", "0")
            out.append(
                FloorPlayer(
                    card=card,
                    kind=PlayKind(kind),
                    area=area,
                    device=device,
                    bank=bank,
                    seat=int(seat) if seat else None,
                    last_play=dt.datetime.fromtimestamp(int(last) / 1000, utc),
                    spend_cents=int(spend),
                    tier=tier,
                    excluded=excluded == "1",
                )
            )
        return out

    # -- the session's life -----------------------------------------------------------------
    async def commit_seeds(self, promotion_id: str, session_id: str) -> list[AuditRecord]:
        """Fix and publish every jackpot's seed commitment (at the session start, or before)."""
        plan = self.plan(promotion_id, session_id)
        seeds = await self._seeds(plan, create=True)
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
        await self.commit_seeds(promotion_id, session_id)
        now = self.clock.now()
        if not (await self.book(promotion_id, session_id)).selectable(number, now):
            return []
        players = await self.snapshot(now)
        archives: list[tuple[Pool, bytes]] = []

        def command(b: RapsBook) -> list[Entry]:
            out, frozen = b.select(number, players, actor, now)
            archives[:] = frozen
            return out

        def archive(pipe: Any) -> None:
            for pool, report in archives:
                pipe.set(self._key("poolfile", pool.commitment), pool.serialise(), nx=True)
                pipe.hsetnx(self._key("eligibility", pool.draw_id), str(pool.round_no), report)

        records = await self.step(promotion_id, session_id, command, extra=archive)
        for pool, report in archives:
            self._draws.remember_pool(pool)
            self._reports[(pool.draw_id, pool.round_no)] = report
        return records

    async def act(
        self, promotion_id: str, session_id: str, claim_id: int, action: str, actor: Actor
    ) -> list[AuditRecord]:
        """A claim action by the crew or the desk (or the scheduler on a timer)."""
        now = self.clock.now()
        return await self.step(
            promotion_id, session_id, lambda b: b.act(claim_id, action, actor, now)
        )

    async def run_due(self, promotion_id: str, session_id: str) -> int:
        """Act on every expired timer of the session: announcements that ran out
        (register or reselection) and empty-pool retries; returns how many."""
        done = 0
        while True:
            book = await self.book(promotion_id, session_id)
            due = book.due(self.clock.now())
            if not due:
                return done
            d = due[0]
            if d.claim_id is None:
                await self.run_jackpot(promotion_id, session_id, d.jackpot, SCHEDULER)
            else:
                await self.act(promotion_id, session_id, d.claim_id, d.action, SCHEDULER)
            done += 1

    # -- verification -----------------------------------------------------------------------
    async def verify(self, jackpot_ref: str) -> tuple[str, dict[RoundKey, Verification]]:
        """The chain check and the jackpot's picks recomputed from the revealed seed and the
        archived pool, straight from what Redis holds (a pool file that is missing or not
        in canonical form fails the check)."""
        self.resolve(jackpot_ref)
        records = await self.audit.records()
        pools: dict[str, Pool] = {}
        for rec in records:
            if rec.kind == Kind.POOL and rec.payload.get("draw_id") == jackpot_ref:
                commitment = rec.payload["pool_commitment"]
                raw = await self.redis.get(self._key("poolfile", commitment))
                try:
                    if raw is not None:
                        pools[commitment] = parse_pool(cast(str, raw).encode())
                except AuditFormatError as exc:
                    logger.warning("jackpot %s: pool file %s: %s", jackpot_ref, commitment, exc)
        chain = verify_chain(records)
        return str(chain), evidence(records, jackpot_ref, pools).verify()
