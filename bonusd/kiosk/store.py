"""Kiosk visits and printed receipts in Redis.

- A *visit* is one card at one kiosk: opened when the card reader types the card, passed
  its PIN (where the member file has one), ended when the card leaves or the screen
  resets. It lives `kiosk_visit_s` of the daemon's clock after its last action (judged
  with the clock; Redis's own expiry, an hour later, only clears the key) and answers
  only to the kiosk token that opened it: a visit id seen on another kiosk is worth nothing.
- A *receipt* is numbered once per site (`receipts:next`, no gaps: the number is taken in
  the same transaction that files the receipt) and once per (promotion, draw, card)
  (`receipts:index`): printing again is a reprint of the same receipt, each print listed
  in `receipts:prints:{number}` with its kiosk and time; checks made at claims are listed
  in `receipts:checks:{number}` (the draw's audit ledger holds them too).
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import redis.exceptions
from redis.asyncio import Redis

from bonusd.infra.keys import Keys
from bonusd.kiosk.receipt import Receipt

VISIT_BYTES = 16
_KEEP_S = 3600  # Redis keeps a visit's key this long after its end (housekeeping only)


@dataclass(frozen=True, slots=True)
class Visit:
    """One card at one kiosk."""

    visit_id: str
    card: str
    token_id: str  # the kiosk token that opened it
    kiosk: str  # that token's name
    needs_pin: bool
    pin_ok: bool

    @property
    def open(self) -> bool:
        """The member may see their standings and print: no PIN asked, or it was given."""
        return self.pin_ok or not self.needs_pin


@dataclass(frozen=True, slots=True)
class Print:
    """One print of a receipt: 0 the original, n the n-th reprint."""

    reprint: int
    at: dt.datetime
    kiosk: str


class KioskStore:
    """Visits and receipts of one site."""

    def __init__(self, redis: Redis, keys: Keys, *, visit_s: int) -> None:
        self.redis = redis
        self.keys = keys
        self.visit_s = visit_s

    # -- visits ---------------------------------------------------------------------------
    async def open_visit(
        self, card: str, *, token_id: str, kiosk: str, needs_pin: bool, now: dt.datetime
    ) -> Visit:
        visit = Visit(secrets.token_hex(VISIT_BYTES), card, token_id, kiosk, needs_pin, False)
        key = self.keys.kiosk_visit(visit.visit_id)
        fields = {
            "card": card,
            "token": token_id,
            "kiosk": kiosk,
            "needs_pin": "1" if needs_pin else "0",
            "pin_ok": "0",
            "opened": now.isoformat(),
        }
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=cast(Mapping[Any, Any], fields))
            self._extend(pipe, key, now)
            await pipe.execute()
        return visit

    def _extend(self, pipe: Any, key: str, now: dt.datetime) -> None:
        ends = now + dt.timedelta(seconds=self.visit_s)
        pipe.hset(key, "ends", ends.isoformat())
        pipe.expire(key, self.visit_s + _KEEP_S)

    async def visit(self, visit_id: str, token_id: str, now: dt.datetime) -> Visit | None:
        """The visit, if it is still open at `now` and was opened by this kiosk token."""
        raw = cast(dict[str, str], await self.redis.hgetall(self.keys.kiosk_visit(visit_id)))
        if not raw or not secrets.compare_digest(raw.get("token", ""), token_id):
            return None
        if now >= dt.datetime.fromisoformat(raw["ends"]):
            return None
        return Visit(
            visit_id,
            raw["card"],
            raw["token"],
            raw.get("kiosk", ""),
            raw.get("needs_pin") == "1",
            raw.get("pin_ok") == "1",
        )

    async def pin_given(self, visit: Visit, now: dt.datetime) -> None:
        key = self.keys.kiosk_visit(visit.visit_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, "pin_ok", 1)
            self._extend(pipe, key, now)
            await pipe.execute()

    async def touch(self, visit: Visit, now: dt.datetime) -> None:
        """An action at the kiosk: the visit lives `visit_s` from now."""
        async with self.redis.pipeline(transaction=True) as pipe:
            self._extend(pipe, self.keys.kiosk_visit(visit.visit_id), now)
            await pipe.execute()

    async def end_visit(self, visit: Visit) -> None:
        await self.redis.delete(self.keys.kiosk_visit(visit.visit_id))

    # -- receipts -------------------------------------------------------------------------
    @staticmethod
    def _field(promotion: str, draw: str, card: str) -> str:
        return f"{promotion}|{draw}|{card}"

    async def number_of(self, promotion: str, draw: str, card: str) -> int | None:
        found = await self.redis.hget(
            self.keys.receipts("index"), self._field(promotion, draw, card)
        )
        return int(found) if found else None

    async def numbers_of(self, card: str, draws: list[tuple[str, str]]) -> list[int | None]:
        """The receipt numbers of `card` in each (promotion, draw), one read."""
        if not draws:
            return []
        fields = [self._field(promotion, draw, card) for promotion, draw in draws]
        found = await self.redis.hmget(self.keys.receipts("index"), fields)
        return [int(value) if value else None for value in found]

    async def receipt(self, number: int) -> Receipt | None:
        raw = await self.redis.hget(self.keys.receipts("all"), str(number))
        return Receipt.from_json(raw) if raw else None

    async def prints(self, number: int) -> list[Print]:
        rows = cast(
            list[str], await self.redis.lrange(self.keys.receipts(f"prints:{number}"), 0, -1)
        )
        out = []
        for place, row in enumerate(rows):
            data = json.loads(row)
            out.append(Print(place, dt.datetime.fromisoformat(data["at"]), data["kiosk"]))
        return out

    async def issue(
        self,
        promotion: str,
        draw: str,
        card: str,
        build: Any,
        *,
        kiosk: str,
        now: dt.datetime,
    ) -> tuple[Receipt, int]:
        """The (promotion, draw, card) receipt and this print's reprint number: a new receipt
        built by `build(number)` the first time, the stored one (a reprint) after that."""
        index, counter = self.keys.receipts("index"), self.keys.receipts("next")
        field = self._field(promotion, draw, card)
        while True:
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(index, counter)
                    existing = await pipe.hget(index, field)
                    if existing:
                        await pipe.reset()  # type: ignore[no-untyped-call]
                        return await self._reprint(int(existing), kiosk=kiosk, now=now)
                    number = int(await pipe.get(counter) or 0) + 1
                    receipt: Receipt = build(number)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.set(counter, number)
                    pipe.hset(index, field, number)
                    pipe.hset(self.keys.receipts("all"), str(number), receipt.to_json())
                    pipe.rpush(self.keys.receipts(f"prints:{number}"), _print_row(now, kiosk))
                    await pipe.execute()
                    return receipt, 0
                except redis.exceptions.WatchError:
                    continue  # another kiosk numbered a receipt meanwhile: take the next

    async def _reprint(self, number: int, *, kiosk: str, now: dt.datetime) -> tuple[Receipt, int]:
        receipt = await self.receipt(number)
        if receipt is None:  # indexed in the same MULTI as filed: only a damaged store
            raise LookupError(f"receipt {number} is indexed but not filed")
        key = self.keys.receipts(f"prints:{number}")
        count = int(await self.redis.rpush(key, _print_row(now, kiosk)))
        return receipt, count - 1  # a print's reprint number is its place in the list

    async def add_check(self, number: int, row: dict[str, Any]) -> None:
        await self.redis.rpush(self.keys.receipts(f"checks:{number}"), json.dumps(row))

    async def checks(self, number: int) -> list[dict[str, Any]]:
        rows = cast(
            list[str], await self.redis.lrange(self.keys.receipts(f"checks:{number}"), 0, -1)
        )
        return [json.loads(row) for row in rows]


def _print_row(at: dt.datetime, kiosk: str) -> str:
    return json.dumps({"at": at.isoformat(), "kiosk": kiosk})
