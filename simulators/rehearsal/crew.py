"""The people of a rehearsal: members activating entries, the promotions desk and the crew.

A rehearsal needs someone to do what people do on a real floor, or no draw would have an
entry and no claim an outcome. Everything goes through the daemon's own code — the
activation rules of `PromotionStore.activate`, the `DrawRunner` and `RapsRunner` steps —
exactly as the kiosk, the desk page and the crew handhelds call them, so refusals and
deadlines are the daemon's. Each choice is a deterministic draw from the rehearsal seed
and what it is about (the draw and card, the claim), so a rerun decides the same way:

- **members** holding tickets activate (kiosk, or the app for app users who are carded
  in) a minute before each bin closes, with probability `activation`;
- **the desk** draws a manual round's tickets by hand (uniformly from its ticket list,
  until the round has its winners), issues prize letters, and the cash desk redeems
  a letter with probability `redeem` (the rest lapse);
- **proxies**: a minute before a draw's proxy forms close (15 minutes before its first
  round), each member then holding tickets has the desk register a proxy with
  probability `proxy`; a winner with a proxy is always presented by that proxy;
- **the decline register**: a minute before a RAPS session starts, each registered
  member signs the session's register at the desk with probability `decline` (regulars
  who will play but not stay by their machine); a signer who wins is away from the
  device (that is why they signed), so nobody presents and the scheduler settles the
  claim by the register: the prize stands;
- **the crew** answers every draw winner: nobody presents with probability `no_show`
  (the scheduler records the no-show at the deadline and redraws), else present, verify
  and, when the round's prizes are loaded, a reveal picked; for a RAPS winner the crew
  goes to the device, finds the player gone with probability `away`, then announces,
  and nobody presents with probability `raps_no_show` (the scheduler reselects).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
from dataclasses import dataclass, field
from typing import cast

from bonusd.draws.claims import Actor, ClaimError, ClaimRole, DrawClaimState
from bonusd.draws.rounds import DrawError
from bonusd.errors import NotFoundError
from bonusd.promotions import Channel, Promotion, standing
from bonusd.promotions.kinds import QualificationKind
from bonusd.promotions.schema import Draw
from bonusd.promotions.store import ActivationRefused
from bonusd.promotions.timing import activation_opens_at, bin_closes_at, local, round_instants
from bonusd.raps.rules import RapsClaimState, RapsError
from bonusd.registry.records import Member
from bonusd.service.root import Service

logger = logging.getLogger(__name__)
CREW = Actor("rehearsal crew", ClaimRole.CREW)
DESK = Actor("rehearsal desk", ClaimRole.DESK)
ACTIVATION_LEAD = dt.timedelta(minutes=1)  # members activate this long before the bin closes
CLAIMS_AFTER = dt.timedelta(hours=6)  # claims of a draw are looked after this long
_CHUNK = 200  # activations in flight at once
PROXY_LEAD = dt.timedelta(minutes=1)  # proxies are registered this long before forms close
DECLINE_LEAD = dt.timedelta(minutes=1)  # the register is signed this long before a session


@dataclass(frozen=True)
class CrewModel:
    """Probabilities of what people do (each 0 to 1)."""

    activation: float = 0.8
    no_show: float = 0.15
    away: float = 0.3
    raps_no_show: float = 0.4
    redeem: float = 0.9
    proxy: float = 0.15
    decline: float = 0.005

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"crew probability {name} must be 0 to 1, got {value}")


def chance(seed: int, *about: object) -> float:
    """A uniform number in [0, 1) fixed by the seed and what it decides."""
    text = "/".join(str(x) for x in (seed, *about)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2**64


@dataclass
class CrewLog:
    """What the people did, for the report."""

    activations: dict[str, int] = field(default_factory=dict)  # draw -> activated members
    refused: dict[str, int] = field(default_factory=dict)  # draw -> activations refused
    hand_drawn: dict[str, int] = field(default_factory=dict)  # draw -> tickets drawn by hand
    refused_tickets: dict[str, int] = field(default_factory=dict)  # draw -> tickets refused
    gave_up: list[str] = field(default_factory=list)
    proxies: dict[str, dict[str, str]] = field(default_factory=dict)  # draw -> card -> proxy id
    declined: dict[str, list[str]] = field(default_factory=dict)  # session -> signed cards


class Crew:
    """Acts for members, desk and crew at each instant the rehearsal stops at."""

    def __init__(self, service: Service, promotion: Promotion, model: CrewModel, seed: int) -> None:
        self.service, self.promotion, self.model, self.seed = service, promotion, model, seed
        self.log = CrewLog()
        p = promotion
        self._activate_at = {
            d.id: max(bin_closes_at(p, d) - ACTIVATION_LEAD, activation_opens_at(p, d))
            for d in p.draw_list
        }
        self._rounds = {d.id: round_instants(p, d) for d in p.draw_list}
        cutoff = self._proxy_cutoff = dt.timedelta(minutes=p.claims.proxy_cutoff_minutes)
        self._proxy_at = {
            d.id: self._rounds[d.id][0] - cutoff - PROXY_LEAD
            for d in p.draw_list
            if self._rounds[d.id][0] - cutoff - PROXY_LEAD
            >= dt.datetime.combine(d.date, p.claims.proxy_forms_open, p.zone)
        }
        self._sign_at = {
            s.id: local(p, s.date, s.start) - DECLINE_LEAD
            for s in p.jackpot_sessions
            if s.decline_register
        }
        self._done: set[tuple[str, str]] = set()  # ("proxies" | "decline", draw or session)
        self._activated: set[str] = set()
        self._handled: set[tuple[str, int]] = set()  # (subject, claim id) already answered
        self._sessions: dict[str, tuple[dt.datetime, dt.datetime]] = {}

    def next_instant(self, after: dt.datetime) -> dt.datetime | None:
        """The next instant people act at of their own accord (activations)."""
        own = [*self._activate_at.values(), *self._proxy_at.values(), *self._sign_at.values()]
        return min((at for at in own if at > after), default=None)

    async def act(self, now: dt.datetime) -> None:
        """Everything people do at `now`, after the daemon's own actions of that instant."""
        for draw in self.promotion.draw_list:
            proxy_at = self._proxy_at.get(draw.id)
            if proxy_at is not None and proxy_at <= now and ("proxies", draw.id) not in self._done:
                self._done.add(("proxies", draw.id))
                if now < self._rounds[draw.id][0] - self._proxy_cutoff:  # forms still open
                    await self._register_proxies(draw)
            if draw.id not in self._activated and self._activate_at[draw.id] <= now:
                self._activated.add(draw.id)
                if now < bin_closes_at(self.promotion, draw):
                    await self._activate(draw, now)
            rounds = self._rounds[draw.id]
            if rounds[0] <= now <= rounds[-1] + CLAIMS_AFTER:
                if draw.mode.value == "manual":
                    await self._hand_draw(draw, now)
                await self._draw_claims(draw, now)
        for session in self.promotion.jackpot_sessions:
            sign_at = self._sign_at.get(session.id)
            if sign_at is not None and sign_at <= now and ("decline", session.id) not in self._done:
                self._done.add(("decline", session.id))
                if now < sign_at + DECLINE_LEAD:  # the register is still open
                    await self._sign_register(session.id)
            if session.id not in self._sessions:  # random times come from Redis: read once
                plan = await self.service.jackpots.load_plan(self.promotion.id, session.id)
                self._sessions[session.id] = (plan.starts_at, plan.times[-1] + CLAIMS_AFTER)
            opens, closes = self._sessions[session.id]
            if opens <= now <= closes:
                await self._raps_claims(session.id)

    # -- members ----------------------------------------------------------------------------
    async def _ticket_holders(self, draw: Draw) -> list[Member]:
        """Members who hold tickets in `draw` now (by the daemon's live totals)."""
        p, store = self.promotion, self.service.promotion_store
        redis = store.redis
        if draw.qualification.kind is QualificationKind.ACTIVES:
            index = cast(dict[str, str], await redis.hgetall(store.keys.member_index))
        else:
            played = cast(set[str], await redis.smembers(store.keys.played(p.id, draw.id)))
            rows = cast(
                list[str | None],
                await redis.hmget(store.keys.member_index, sorted(played)) if played else [],
            )
            index = {c: t for c, t in zip(sorted(played), rows, strict=True) if t}
        cards = sorted(index)
        stats = await store.window_stats(p, draw, cards)
        holders = []
        for card, st in zip(cards, stats, strict=True):
            member = Member.from_index(card, index[card])
            s = standing(p, draw, member, st, activated=False, on_date=draw.date, explain=False)
            if s.tickets:
                holders.append(member)
        return holders

    async def _activate(self, draw: Draw, now: dt.datetime) -> None:
        """Members holding tickets now activate, each with probability `activation`."""
        chosen = [
            m
            for m in await self._ticket_holders(draw)
            if chance(self.seed, "activate", draw.id, m.card) < self.model.activation
        ]
        done = refused = 0
        for at in range(0, len(chosen), _CHUNK):
            results = await asyncio.gather(
                *(self._activate_one(draw, m, now) for m in chosen[at : at + _CHUNK])
            )
            done += sum(results)
            refused += len(results) - sum(results)
        self.log.activations[draw.id] = done
        self.log.refused[draw.id] = refused

    async def _activate_one(self, draw: Draw, member: Member, now: dt.datetime) -> bool:
        store, channels = self.service.promotion_store, draw.activation.channels
        order = [Channel.APP, Channel.KIOSK] if member.app_user else [Channel.KIOSK, Channel.APP]
        for channel in (c for c in order if c in channels):
            try:
                await store.activate(self.promotion.id, draw.id, member.card, channel, now)
                return True
            except ActivationRefused:
                continue
        return False

    # -- the desk ---------------------------------------------------------------------------
    async def _register_proxies(self, draw: Draw) -> None:
        """Ticket holders nominate a proxy on the desk's form, with probability `proxy`."""
        registered = self.log.proxies.setdefault(draw.id, {})
        for member in await self._ticket_holders(draw):
            if chance(self.seed, "proxy", draw.id, member.card) >= self.model.proxy:
                continue
            proxy_id = f"PX-{member.card}"  # one proxy for one participant only
            try:
                await self.service.draws.register_proxy(
                    self.promotion.id,
                    draw.id,
                    member.card,
                    proxy_id=proxy_id,
                    name=f"proxy of {member.card}",
                    actor=DESK,
                )
            except (ClaimError, DrawError) as exc:
                logger.info("rehearsal desk: proxy for %s refused: %s", member.card, exc)
                continue
            registered[member.card] = proxy_id

    async def _sign_register(self, session_id: str) -> None:
        """Registered members sign the session's decline register (`decline`)."""
        signed = self.log.declined.setdefault(session_id, [])
        store = self.service.promotion_store
        members = cast(list[str], await store.redis.hkeys(store.keys.member_index))
        for card in sorted(members):
            if chance(self.seed, "decline", session_id, card) >= self.model.decline:
                continue
            try:
                await self.service.jackpots.sign_decline(self.promotion.id, session_id, card, DESK)
            except (RapsError, ClaimError, NotFoundError) as exc:  # unregistered, or too late
                logger.info("rehearsal desk: %s cannot sign the register: %s", card, exc)
                continue
            signed.append(card)

    async def _hand_draw(self, draw: Draw, now: dt.datetime) -> None:
        """Draw tickets by hand for every manual round that is due and short of winners."""
        desk, pid = self.service.draws, self.promotion.id
        book = await desk.book(pid, draw.id)
        for number, at in enumerate(self._rounds[draw.id], start=1):
            if at > now:
                continue
            for tombola, wanted in book.plan.round(number).winners.items():
                key = (tombola, number)
                for attempt in range(200):
                    book = await desk.book(pid, draw.id)
                    if key not in book.draw.rounds or book.draw.round(*key).pool is None:
                        break  # the bin is not closed (yet): nothing to draw from
                    claims = [
                        c
                        for i, c in book.claims.items()
                        if book.claim_round[i][0] == key and c.state is not DrawClaimState.NO_SHOW
                    ]
                    pool = book.draw.round(*key).pool
                    assert pool is not None
                    barred = set(book.draw.seats) | book.draw.excluded
                    left = [c for c in pool.cards if not book.draw.is_picked(c) and c not in barred]
                    if len(claims) >= wanted or not left:
                        break
                    subject = f"{book.subject}/{tombola}/{number}"
                    ticket = 1 + int(chance(self.seed, "ticket", subject, attempt) * pool.total)
                    try:
                        await desk.accept_ticket(pid, draw.id, key, ticket, actor=DESK)
                        self.log.hand_drawn[draw.id] = self.log.hand_drawn.get(draw.id, 0) + 1
                    except DrawError:  # its owner already won, is seated or excluded
                        n = self.log.refused_tickets.get(draw.id, 0)
                        self.log.refused_tickets[draw.id] = n + 1
                else:
                    self.log.gave_up.append(f"{draw.id} {tombola} round {number}")

    # -- the crew ---------------------------------------------------------------------------
    async def _draw_claims(self, draw: Draw, now: dt.datetime) -> None:
        desk, pid = self.service.draws, self.promotion.id
        book = await desk.book(pid, draw.id)
        for claim_id, claim in list(book.claims.items()):
            if claim.state is not DrawClaimState.ANNOUNCED or (book.subject, claim_id) in (
                self._handled
            ):
                continue
            self._handled.add((book.subject, claim_id))
            proxy = self.log.proxies.get(draw.id, {}).get(claim.card)
            if proxy is not None:  # the registered proxy presents for the winner
                await desk.act(pid, draw.id, claim_id, "present", CREW, proxy_id=proxy)
            elif chance(self.seed, "no-show", book.subject, claim_id) < self.model.no_show:
                continue  # nobody comes: the scheduler records the no-show at the deadline
            else:
                await desk.act(pid, draw.id, claim_id, "present", CREW)
            await desk.act(pid, draw.id, claim_id, "verify", CREW)
            book = await desk.book(pid, draw.id)
            reveals = book.reveal_sets.get(book.claim_round[claim_id][0])
            if reveals is None:
                continue  # no prize values loaded: the winner stays verified
            free = [n for n in range(1, len(reveals.sealed) + 1) if n not in reveals.picked]
            if not free:
                continue
            pick = free[int(chance(self.seed, "reveal", book.subject, claim_id) * len(free))]
            await desk.act(pid, draw.id, claim_id, "pick_reveal", CREW, reveal=pick)
            await desk.act(pid, draw.id, claim_id, "issue_letter", DESK)
            if chance(self.seed, "redeem", book.subject, claim_id) < self.model.redeem:
                await desk.act(pid, draw.id, claim_id, "redeem", DESK)

    async def _raps_claims(self, session_id: str) -> None:
        desk, pid = self.service.jackpots, self.promotion.id
        book = await desk.book(pid, session_id)
        for claim_id, claim in list(book.claims.items()):
            if claim.state is not RapsClaimState.ALERTED:
                continue
            about = (book.subject, claim_id)
            signed = claim.card in self.log.declined.get(session_id, [])
            await desk.act(pid, session_id, claim_id, "crew_arrived", CREW)
            if signed:  # gone, as the register said: the scheduler settles it by the register
                await desk.act(pid, session_id, claim_id, "not_at_device", CREW)
                await desk.act(pid, session_id, claim_id, "announce", CREW)
                continue
            if chance(self.seed, "away", *about) >= self.model.away:
                await desk.act(pid, session_id, claim_id, "verify_at_device", CREW)
                continue
            await desk.act(pid, session_id, claim_id, "not_at_device", CREW)
            await desk.act(pid, session_id, claim_id, "announce", CREW)
            if chance(self.seed, "raps-no-show", *about) >= self.model.raps_no_show:
                await desk.act(pid, session_id, claim_id, "present", CREW)
                await desk.act(pid, session_id, claim_id, "verify", CREW)
