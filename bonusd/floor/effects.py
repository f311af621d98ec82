"""What a batch of events does to Redis, gathered before it is written.

The floor rules (`bonusd/floor/rules.py`) and promotion accounting
(`bonusd/floor/accounting.py`) describe each event's effects on an `Effects` object.
Commutative effects — increments, maxima, set members, last-writer values — are merged
as they arrive, so a batch of 500 events that touch one player's day 500 times becomes
one increment. Session moves depend on order
and stay a per-event list. `lua/apply.lua` writes it all in one atomic step.

Keys are relative to the site's key base.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Slot = tuple[str, str]  # (key, hash field or set/zset member)


@dataclass
class Effects:
    """The merged effects of the events of one batch."""

    increments: dict[Slot, int] = field(default_factory=dict)  # HINCRBY
    values: dict[Slot, str] = field(default_factory=dict)  # HSET, last writer wins
    maxima: dict[Slot, int] = field(default_factory=dict)  # HSET if larger
    scores: dict[Slot, int] = field(default_factory=dict)  # ZINCRBY
    members: set[Slot] = field(default_factory=set)  # SADD
    # SADD a member; when it is new to the set, HINCRBY a counter (distinct days = visits)
    counted: dict[Slot, Slot] = field(default_factory=dict)
    # in event order: [card, op, args...] for the session moves IN / P / OUT (bonusd/floor/rules.py)
    sessions: list[list[str]] = field(default_factory=list)
    cards: set[str] = field(default_factory=set)

    def incr(self, key: str, name: str, amount: int) -> None:
        if amount:
            slot = (key, name)
            self.increments[slot] = self.increments.get(slot, 0) + amount

    def put(self, key: str, name: str, value: str) -> None:
        self.values[(key, name)] = value

    def maximum(self, key: str, name: str, value: int) -> None:
        slot = (key, name)
        if slot not in self.maxima or value > self.maxima[slot]:
            self.maxima[slot] = value

    def score(self, key: str, member: str, amount: int) -> None:
        if amount:
            slot = (key, member)
            self.scores[slot] = self.scores.get(slot, 0) + amount

    def add(self, key: str, member: str) -> None:
        self.members.add((key, member))

    def add_counted(self, key: str, member: str, counter: str, name: str) -> None:
        self.counted.setdefault((key, member), (counter, name))

    def session(self, card: str, *op: str) -> None:
        self.sessions.append([card, *op])

    def payload(self) -> dict[str, Any]:
        """The JSON-ready form `apply.lua` reads. Its short names are the Redis command
        each list becomes: `H` HINCRBY (key, field, amount), `HS` HSET (key, field, value),
        `HMAX` HSET when larger (key, field, value), `Z` ZINCRBY (key, member, amount),
        `S` SADD (key, member), `SH` SADD then HINCRBY when the member was new (key, member,
        counter key, counter field), `SESS` the session moves in event order, `CARDS` the
        cards whose floor rows the batch may change."""
        return {
            "H": [[k, f, n] for (k, f), n in self.increments.items()],
            "HS": [[k, f, v] for (k, f), v in self.values.items()],
            "HMAX": [[k, f, v] for (k, f), v in self.maxima.items()],
            "Z": [[k, m, n] for (k, m), n in self.scores.items()],
            "S": [[k, m] for k, m in self.members],
            "SH": [[k, m, c, f] for (k, m), (c, f) in self.counted.items()],
            "SESS": self.sessions,
            "CARDS": sorted(self.cards),
        }
