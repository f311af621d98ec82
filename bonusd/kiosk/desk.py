"""The kiosk's work, step by step: a card at a kiosk, its PIN, the member's standings in
every running draw, *activate and print*, reprints, and the receipt check at a claim.

Everything a kiosk answers about a card it reads through `bonusd.kiosk.standings` (the
player's view: no reasons, no other member's data); everything it writes is the
activation (`PromotionStore.activate`, channel kiosk), the receipt and its prints
(`bonusd.kiosk.store`), and the wrong-PIN count (`bonusd.access.lockout`). A check of a
presented receipt is recorded in the draw's audit ledger (`receipt_check`) as well as on
the receipt.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass, replace
from typing import Any
from zoneinfo import ZoneInfo

from bonusd.access.auth import Principal
from bonusd.access.lockout import KIOSK_PIN, Lockout
from bonusd.access.pins import verify_pin
from bonusd.access.ratelimit import RateLimiter
from bonusd.draws.claims import Actor
from bonusd.draws.rounds import DrawError
from bonusd.draws.runner import DrawRunner
from bonusd.errors import BonusdError, NotFoundError
from bonusd.kiosk.printer import parse_target, print_receipt, qr_svg_data_uri
from bonusd.kiosk.receipt import Check, Receipt, check, parse_code, qr_payload, short_code
from bonusd.kiosk.receipttext import receipt_lines
from bonusd.kiosk.standings import player_view
from bonusd.kiosk.store import KioskStore, Print, Visit
from bonusd.promotions.kinds import Channel
from bonusd.promotions.store import PromotionStore

logger = logging.getLogger(__name__)
PIN_SCOPE = KIOSK_PIN
NEUTRAL = "not eligible — please see the promotions desk"


class KioskError(BonusdError):
    """A kiosk step refused: `status` is the HTTP answer, the message the player's words."""

    def __init__(self, status: int, message: str, *, retry_after_s: int | None = None) -> None:
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Printed:
    """One print of a receipt, as the kiosk shows and prints it."""

    receipt: Receipt
    reprint: int
    prints: int
    code: str
    qr: str
    lines: list[str]
    printed_to: str  # "browser" or "printer"

    @property
    def qr_svg(self) -> str:
        return qr_svg_data_uri(self.qr)


@dataclass(frozen=True, slots=True)
class KioskConfig:
    """What the kiosk desk takes from the settings."""

    site: str
    timezone: str
    key: bytes  # the receipts' MAC key (`bonusd.kiosk.receiptkey`)
    printers: dict[str, str]  # kiosk name (or "*") -> printer target
    pin_attempts: int
    pin_lock_s: int


class KioskDesk:
    """The kiosks' and the receipt checks' side of one site."""

    def __init__(
        self,
        store: KioskStore,
        promotions: PromotionStore,
        draws: DrawRunner,
        limiter: RateLimiter,
        config: KioskConfig,
    ) -> None:
        self.store = store
        self.promotions = promotions
        self.draws = draws
        self.limiter = limiter
        self.config = config
        self.zone = ZoneInfo(config.timezone)
        self.lockout = Lockout(
            store.redis,
            store.keys,
            PIN_SCOPE,
            attempts=config.pin_attempts,
            lock_s=config.pin_lock_s,
        )
        for name, target in config.printers.items():
            parse_target(target)  # a wrong printer setting stops the start, naming it
            logger.info("kiosk %s prints its receipts to %s", name, target)

    # -- the card and its PIN -------------------------------------------------------------
    async def open_visit(self, card: str, kiosk: Principal, now: dt.datetime) -> Visit:
        await self._not_locked(card, now)
        try:
            member = await self.promotions.member(card)
            needs_pin = member.pin_hash is not None
        except NotFoundError:  # no member: the view will say only the neutral words
            needs_pin = False
        return await self.store.open_visit(
            card, token_id=kiosk.token_id, kiosk=kiosk.name, needs_pin=needs_pin, now=now
        )

    async def visit(
        self, visit_id: str, kiosk: Principal, now: dt.datetime, *, opened: bool = True
    ) -> Visit:
        """The kiosk's visit; `opened`: the PIN step must be behind it."""
        found = await self.store.visit(visit_id, kiosk.token_id, now)
        if found is None:
            raise KioskError(401, "this visit has ended — please insert your card again")
        if opened and not found.open:
            raise KioskError(403, "PIN needed")
        return found

    async def _not_locked(self, card: str, now: dt.datetime) -> None:
        state = await self.lockout.state(card, now)
        if state.locked:
            raise KioskError(
                423, self._locked_words(state.retry_after_s), retry_after_s=state.retry_after_s
            )

    def _locked_words(self, retry_after_s: int) -> str:
        minutes = max(1, -(-retry_after_s // 60))
        return (
            f"this card is locked at the kiosks for {minutes} more minute"
            f"{'s' if minutes != 1 else ''} after {self.config.pin_attempts} wrong PINs"
            " — please see the promotions desk"
        )

    async def enter_pin(self, visit: Visit, pin: str, now: dt.datetime) -> None:
        """Check the PIN: right opens the visit, wrong counts one (`KioskError` 401 with the
        tries left, 423 at the lock)."""
        if visit.open:
            return
        # count the try before checking it: fifty guesses sent at once are five checks
        state = await self.lockout.failed(visit.card, now)
        if not state.counted:  # locked already: nothing is checked
            raise KioskError(
                423, self._locked_words(state.retry_after_s), retry_after_s=state.retry_after_s
            )
        member = await self.promotions.member(visit.card)
        if await asyncio.to_thread(verify_pin, member.pin_hash or "", pin):
            await self.lockout.cleared(visit.card)
            await self.store.pin_given(visit, now)
            return
        if state.locked:
            await self.store.end_visit(visit)
            raise KioskError(
                423, self._locked_words(state.retry_after_s), retry_after_s=state.retry_after_s
            )
        tries = f"{state.left} {'try' if state.left == 1 else 'tries'} left"
        raise KioskError(401, f"wrong PIN — {tries}")

    # -- what the member sees --------------------------------------------------------------
    async def view(self, visit: Visit, now: dt.datetime) -> dict[str, Any]:
        """The player's view (`bonusd.kiosk.standings`) with each draw's receipt, if any."""
        view = await player_view(self.promotions, visit.card, now)
        draws = view.get("draws", [])
        numbers = await self.store.numbers_of(
            visit.card, [(d["promotion"], d["draw"]) for d in draws]
        )
        for entry, number in zip(draws, numbers, strict=True):
            if number is not None:
                entry["receipt"] = {
                    "number": number,
                    "prints": len(await self.store.prints(number)),
                }
        return view

    # -- activate and print ----------------------------------------------------------------
    async def print_receipt(
        self, visit: Visit, promotion: str, draw: str, now: dt.datetime
    ) -> Printed:
        """Activate the member's entries in the draw (when not yet) and print its receipt:
        the first time a new numbered receipt, after that the same one as a reprint."""
        await self._admit_print(visit, now)
        await self.store.touch(visit, now)
        entry = await self._draw_entry(visit, promotion, draw, now)
        if not entry["activation"]["activated"]:
            try:
                await self.promotions.activate(promotion, draw, visit.card, Channel.KIOSK, now)
            except (
                BonusdError
            ) as exc:  # ActivationRefused: the reason is the draw's, not the card's
                raise KioskError(409, _refusal_words(str(exc))) from exc
            entry = await self._draw_entry(visit, promotion, draw, now)
        receipt, reprint = await self.store.issue(
            promotion,
            draw,
            visit.card,
            lambda number: self._new_receipt(visit, entry, number, now),
            kiosk=visit.kiosk,
            now=now,
        )
        receipt = await self._with_drum_tickets(receipt)
        prints = reprint + 1
        logger.info("kiosk %s printed receipt %d (print %d)", visit.kiosk, receipt.number, prints)
        return await self._out(receipt, reprint, prints)

    async def _admit_print(self, visit: Visit, now: dt.datetime) -> None:
        limits = self.limiter.limits
        over = await self.limiter.admit(
            [
                ("receipt-prints", f"card {visit.card}", limits.receipts_per_card),
                (
                    "receipt-prints",
                    f"kiosk {visit.kiosk or visit.token_id}",
                    limits.receipts_per_token,
                ),
            ],
            now,
        )
        if over is not None:
            raise KioskError(
                429, "too many prints — please wait a minute", retry_after_s=over.retry_after_s
            )

    async def _draw_entry(
        self, visit: Visit, promotion: str, draw: str, now: dt.datetime
    ) -> dict[str, Any]:
        view = await player_view(self.promotions, visit.card, now)
        for entry in view.get("draws", []):
            if entry["promotion"] == promotion and entry["draw"] == draw:
                if not entry["tickets"]:
                    raise KioskError(409, "no tickets in this draw yet: nothing to print")
                return dict(entry) | {
                    "masked_name": (view.get("member") or {}).get("masked_name", "")
                }
        raise KioskError(409, NEUTRAL)  # not running, or this card may not take part

    def _new_receipt(
        self, visit: Visit, entry: dict[str, Any], number: int, now: dt.datetime
    ) -> Receipt:
        activation = entry["activation"]
        return Receipt(
            site=self.config.site,
            casino=entry["casino"],
            promotion=entry["promotion"],
            promotion_name=entry["promotion_name"],
            draw=entry["draw"],
            draw_name=entry["draw_name"],
            draw_times=tuple(_instant(t) for t in entry["draw_times"]),
            card=visit.card,
            masked_name=entry.get("masked_name", ""),
            tickets=int(entry["tickets"]),
            breakdown=tuple(entry["lines"]),
            activated_at=_instant(activation["at"]) if activation.get("at") else None,
            printed_at=now,
            kiosk=visit.kiosk,
            number=number,
        )

    async def _with_drum_tickets(self, receipt: Receipt) -> Receipt:
        """The receipt as printed now: for a manual draw (a physical tombola) the member's
        numbered tickets in each drum once its pool is frozen, else when they will be."""
        if not self.draws.plan(receipt.promotion, receipt.draw).manual:
            return receipt
        drums = await self._tombola_tickets(receipt)
        if drums:
            return replace(receipt, tombola_tickets=drums)
        closes = self.promotions.bin_closes_at(receipt.promotion, receipt.draw)
        at = closes.astimezone(self.zone)
        note = f"drum ticket numbers: reprint after the bin closes at {at:%H:%M}"
        return replace(receipt, breakdown=(*receipt.breakdown, note))

    async def _tombola_tickets(
        self, receipt: Receipt
    ) -> tuple[tuple[str, tuple[tuple[int, int], ...]], ...]:
        """The member's numbered tickets in each manual tombola whose pool is frozen."""
        plan = self.draws.plan(receipt.promotion, receipt.draw)
        out = []
        for tombola, round_no in plan.keys:
            try:
                _, tickets = await self.draws.ticket_list(
                    receipt.promotion, receipt.draw, tombola, round_no
                )
            except (DrawError, BonusdError):  # not frozen yet: the numbers come at the close
                continue
            ranges = tuple(
                (first, last) for first, last, card in tickets.ranges if card == receipt.card
            )
            if ranges:
                out.append((tombola, ranges))
        return tuple(out)

    async def _out(self, receipt: Receipt, reprint: int, prints: int) -> Printed:
        key = self.config.key
        code = short_code(key, receipt, reprint)
        qr = qr_payload(key, receipt, reprint)
        lines = receipt_lines(receipt, reprint, code, zone=self.zone)
        target = self.config.printers.get(receipt.kiosk) or self.config.printers.get("*")
        printed_to = "browser"
        if target:
            try:
                await print_receipt(parse_target(target), lines, qr)
                printed_to = "printer"
            except BonusdError as exc:  # PrinterError: the receipt stands, the browser prints it
                logger.error(
                    "kiosk %s: receipt %d not printed: %s", receipt.kiosk, receipt.number, exc
                )
        return Printed(receipt, reprint, prints, code, qr, lines, printed_to)

    # -- the desk and the crew -------------------------------------------------------------
    async def lookup(self, number: int) -> tuple[Receipt, list[Print], list[dict[str, Any]]]:
        receipt = await self.store.receipt(number)
        if receipt is None:
            raise NotFoundError(f"there is no receipt {number}")
        return receipt, await self.store.prints(number), await self.store.checks(number)

    async def check_at_claim(
        self, claim: tuple[str, str, int], code: str, actor: Actor, now: dt.datetime
    ) -> Check:
        """Check a presented receipt code against the claim's winner and draw; the check is
        recorded on the claim (the draw's ledger) and on the receipt. `claim`: (promotion,
        draw, claim id)."""
        promotion, draw, claim_id = claim
        presented = parse_code(code)  # ReceiptCodeError (422) for text that is no code at all
        book = await self.draws.book(promotion, draw)
        card = book.claim(claim_id).card  # ClaimError: no such claim
        stored = await self.store.receipt(presented.number)
        prints = len(await self.store.prints(presented.number)) if stored else 0
        found = check(
            self.config.key,
            self.config.site,
            presented,
            stored,
            prints,
            card=card,
            promotion=promotion,
            draw=draw,
        )
        facts = {
            "verdict": found.verdict.value,
            "message": found.message,
            "receipt": found.number,
            "reprint": found.reprint,
        }
        await self.draws.step(
            promotion, draw, lambda current: current.check_receipt(claim_id, facts, actor, now)
        )
        if stored is not None:
            await self.store.add_check(
                presented.number,
                {"at": now.isoformat(), "draw": f"{promotion}/{draw}", "claim": claim_id}
                | {"verdict": found.verdict.value, "by": actor.name},
            )
        return found


def _refusal_words(reason: str) -> str:
    """The activation's refusal without the card number (the kiosk is a public screen)."""
    return reason.split(": ", 1)[-1] if reason.startswith("card ") else reason


def _instant(value: dt.datetime | str) -> dt.datetime:
    return value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(value)
