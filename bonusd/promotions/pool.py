"""The frozen entry pool of a draw: who holds how many tickets in each tombola at bin close.

An `EntryPool` is immutable and has one canonical serialisation (sorted, compact JSON)
and its SHA-256, which the audit record keeps so anyone can later prove which pool a
draw was made from. `entries(tombola)` is the card -> tickets mapping the draw engine
freezes into its per-round pool (`bonusd.draws.fairness.Pool.freeze`), which numbers tickets.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bonusd.promotions.kinds import Tombola
from bonusd.promotions.rules import Standing
from bonusd.promotions.schema import Draw

POOL_FORMAT = 1


@dataclass(frozen=True)
class EntryPool:
    """Use `EntryPool.freeze` or `from_standings`; the fields are already canonical."""

    promotion_id: str
    draw_id: str
    closed_at: dt.datetime
    tombolas: tuple[tuple[Tombola, tuple[tuple[str, int], ...]], ...]
    seated: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.closed_at.tzinfo is None or self.closed_at.utcoffset() != dt.timedelta(0):
            raise ValueError("closed_at must be an aware UTC instant")
        names = [t for t, _ in self.tombolas]
        if names != sorted(set(names)):
            raise ValueError("tombolas must be unique and sorted")
        for tombola, holders in self.tombolas:
            cards = [card for card, _ in holders]
            if cards != sorted(set(cards)):
                raise ValueError(f"{tombola.value}: cards must be unique and sorted")
            if any(n <= 0 for _, n in holders):
                raise ValueError(f"{tombola.value}: ticket counts must be > 0")
            if set(cards) & set(self.seated):
                raise ValueError(f"{tombola.value}: a seated member cannot hold tickets")
        if list(self.seated) != sorted(set(self.seated)):
            raise ValueError("seated must be unique and sorted")

    @classmethod
    def freeze(
        cls,
        *,
        promotion_id: str,
        draw_id: str,
        closed_at: dt.datetime,
        counts: Mapping[Tombola, Mapping[str, int]],
        seated: Iterable[str] = (),
    ) -> EntryPool:
        """Freeze ticket counts per tombola and card. Zero counts and seated members
        (who are not drawn from the tombolas) are left out."""
        seats = tuple(sorted(set(seated)))
        tombolas = tuple(
            (
                tombola,
                tuple(sorted((c, n) for c, n in holders.items() if n and c not in seats)),
            )
            for tombola, holders in sorted(counts.items())
        )
        return cls(promotion_id, draw_id, closed_at.astimezone(dt.UTC), tombolas, seats)

    @classmethod
    def from_standings(
        cls,
        promotion_id: str,
        draw: Draw,
        standings: Iterable[Standing],
        *,
        closed_at: dt.datetime,
        seated: Iterable[str] = (),
    ) -> EntryPool:
        """The pool of the members' *entries*: tickets of activated members only."""
        counts: dict[Tombola, dict[str, int]] = {t: {} for t in draw.tombola_names}
        for standing in standings:
            if standing.draw_id != draw.id or standing.promotion_id != promotion_id:
                raise ValueError(
                    f"standing of {standing.promotion_id}/{standing.draw_id} in pool of {draw.id}"
                )
            if standing.card in counts[draw.tombola_names[0]]:
                raise ValueError(f"card {standing.card} has two standings")
            for tombola in draw.tombola_names:
                counts[tombola][standing.card] = (
                    standing.per_tombola[tombola] if standing.activated else 0
                )
        return cls.freeze(
            promotion_id=promotion_id,
            draw_id=draw.id,
            closed_at=closed_at,
            counts=counts,
            seated=seated,
        )

    def holders(self, tombola: Tombola) -> tuple[tuple[str, int], ...]:
        for name, holders in self.tombolas:
            if name is tombola:
                return holders
        raise KeyError(f"draw {self.draw_id} has no {tombola.value} tombola")

    def entries(self, tombola: Tombola) -> dict[str, int]:
        """Card -> tickets in one tombola (a fresh dict; the pool itself never changes)."""
        return dict(self.holders(tombola))

    def total(self, tombola: Tombola) -> int:
        return sum(n for _, n in self.holders(tombola))

    def canonical(self) -> bytes:
        """The one serialisation the hash is taken over."""
        doc = {
            "format": POOL_FORMAT,
            "promotion": self.promotion_id,
            "draw": self.draw_id,
            "closed_at": self.closed_at.isoformat().replace("+00:00", "Z"),
            "seated": list(self.seated),
            "tombolas": {t.value: [[c, n] for c, n in h] for t, h in self.tombolas},
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("ascii")

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical()).hexdigest()

    @classmethod
    def parse(cls, data: bytes) -> EntryPool:
        """Read back a `canonical()` serialisation (and refuse anything not canonical)."""
        doc = json.loads(data)
        if doc.get("format") != POOL_FORMAT:
            raise ValueError(f"unknown entry pool format {doc.get('format')!r}")
        pool = cls.freeze(
            promotion_id=doc["promotion"],
            draw_id=doc["draw"],
            closed_at=dt.datetime.fromisoformat(doc["closed_at"]),
            counts={Tombola(t): dict(h) for t, h in doc["tombolas"].items()},
            seated=doc["seated"],
        )
        if pool.canonical() != data:
            raise ValueError("not a canonical entry pool serialisation")
        return pool
