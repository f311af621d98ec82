"""The RAPS floor snapshot: every carded-in player at a jackpot instant, as one archived
file, and who in it is eligible (columnar, so 20,000 players are judged in milliseconds).

The snapshot file is what Redis held at the instant, read in one atomic script call and
archived byte for byte; its SHA-256 goes into the jackpot's POOL record, and the pool is
exactly the eligible cards of the file under the session's rules. So the pool, and the
reasons every other player was left out, can be recomputed from the archive by anyone:

    bonusd-raps-floor 1 <jackpot instant, epoch ms>\\n
    card TAB kind TAB area TAB device TAB seat TAB bank TAB last_play_ms TAB
        spend_cents TAB tier TAB excluded(0|1) LF      (one line per carded-in card)

`judge` is the vectorised twin of `raps.eligibility` (the per-player reference, which the
tests hold it to), for a floor where each card is in one place.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property

from bonusd.audit import Json, canonical_json, utc_text
from bonusd.raps import FloorPlayer, PlayKind, RapsRules, Reason

MAGIC = "bonusd-raps-floor 1"
COLUMNS = (
    "card",
    "kind",
    "area",
    "device",
    "seat",
    "bank",
    "last_play_ms",
    "spend_cents",
    "tier",
    "excluded",
)
WIDTH = len(COLUMNS)
PLACE = ("card", "device", "area", "bank", "seat")


class SnapshotError(ValueError):
    """An archived floor snapshot that is not in the documented form."""


def instant_ms(at: dt.datetime) -> int:
    """A jackpot instant as the snapshot file's header writes it (epoch milliseconds)."""
    if at.tzinfo is None:
        raise ValueError("the jackpot instant must be timezone-aware")
    return int(at.timestamp() * 1000)


@dataclass(frozen=True)
class FloorSnapshot:
    """Columns of the floor at one instant (row i of every column is one card)."""

    at_ms: int
    body: str  # the file's lines after the header, each ending in LF ("" when empty)

    @classmethod
    def of(cls, at: dt.datetime, body: str) -> FloorSnapshot:
        snap = cls(instant_ms(at), body)
        snap.columns  # noqa: B018 - check the form now, not at first use
        return snap

    @classmethod
    def from_players(cls, at: dt.datetime, players: Collection[FloorPlayer]) -> FloorSnapshot:
        rows = [
            "\t".join(
                (
                    p.card,
                    p.kind.value,
                    p.area,
                    p.device,
                    "" if p.seat is None else str(p.seat),
                    p.bank,
                    str(int(p.last_play.timestamp() * 1000)),
                    str(p.spend_cents),
                    p.tier,
                    "1" if p.excluded else "0",
                )
            )
            + "\n"
            for p in players
        ]
        return cls.of(at, "".join(rows))

    @classmethod
    def parse(cls, raw: bytes) -> FloorSnapshot:
        """Read an archived snapshot file; anything off the documented form is refused."""
        text = raw.decode()
        header, sep, body = text.partition("\n")
        magic, _, at = header.rpartition(" ")
        if not sep or magic != MAGIC or not at.isdigit():
            raise SnapshotError(f"not a RAPS floor snapshot (header {header[:60]!r})")
        return cls(int(at), body)

    def serialise(self) -> bytes:
        return f"{MAGIC} {self.at_ms}\n{self.body}".encode()

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.serialise()).hexdigest()

    @cached_property
    def columns(self) -> tuple[list[str], ...]:
        if not self.body:
            return tuple([] for _ in COLUMNS)
        if not self.body.endswith("\n"):
            raise SnapshotError("a RAPS floor snapshot ends with a line feed")
        flat = self.body[:-1].replace("\n", "\t").split("\t")
        rows = self.body.count("\n")
        if len(flat) != rows * WIDTH:
            raise SnapshotError(f"every line of a RAPS floor snapshot has {WIDTH} fields")
        cols = tuple(flat[i::WIDTH] for i in range(WIDTH))
        cards = cols[0]
        if len(set(cards)) != len(cards):
            raise SnapshotError("a card appears twice in the RAPS floor snapshot")
        if any(k not in ("egm", "table") for k in set(cols[1])):
            raise SnapshotError("a RAPS floor snapshot kind is egm or table")
        if any(x not in ("0", "1") for x in set(cols[9])):
            raise SnapshotError("the excluded column of a RAPS floor snapshot is 0 or 1")
        for name in ("last_play_ms", "spend_cents"):
            if not all(v.isdigit() for v in cols[COLUMNS.index(name)]):
                raise SnapshotError(f"the {name} column of a RAPS floor snapshot is digits")
        return cols

    @property
    def size(self) -> int:
        return len(self.columns[0])

    def row(self, i: int) -> dict[str, str]:
        return {name: col[i] for name, col in zip(COLUMNS, self.columns, strict=True)}

    @cached_property
    def _index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.columns[0])}

    def place(self, card: str) -> dict[str, str]:
        """Where the crew finds `card`: card, device, area, bank and seat ("" for an EGM)."""
        row = self.row(self._index[card])
        return {k: row[k] for k in PLACE}

    def players(self) -> list[FloorPlayer]:
        """The snapshot as `FloorPlayer`s (for the per-player reference rules)."""
        out = []
        for i in range(self.size):
            r = self.row(i)
            out.append(
                FloorPlayer(
                    card=r["card"],
                    kind=PlayKind(r["kind"]),
                    area=r["area"],
                    device=r["device"],
                    bank=r["bank"],
                    seat=int(r["seat"]) if r["seat"] else None,
                    last_play=dt.datetime.fromtimestamp(int(r["last_play_ms"]) / 1000, dt.UTC),
                    spend_cents=int(r["spend_cents"]),
                    tier=r["tier"],
                    excluded=r["excluded"] == "1",
                )
            )
        return out


@dataclass(frozen=True)
class Judgement:
    """Who on a snapshot is eligible for a jackpot, and why each other card is not."""

    snapshot: FloorSnapshot
    at_ms: int
    eligible: tuple[str, ...]  # cards, in code-point order
    others: dict[int, tuple[Reason, ...]]  # row -> reasons, rows in snapshot order

    def reasons(self) -> dict[str, int]:
        """How many cards were left out for each reason (a card may have several)."""
        counted = Counter(r.value for rs in self.others.values() for r in rs)
        return dict(sorted(counted.items()))

    def report(self, jackpot_id: str, attempt: int) -> bytes:
        """The readable eligibility report (canonical JSON): each eligible card with its
        place, each other card with its reasons. Derived from the archived snapshot, so
        it is built when someone asks for it, not on the jackpot's critical path."""
        snap = self.snapshot
        eligible: list[Json] = [dict(snap.place(c)) for c in self.eligible]
        cards, devices = snap.columns[0], snap.columns[3]
        ineligible: list[Json] = [
            {"card": cards[i], "device": devices[i], "reasons": [r.value for r in rs]}
            for i, rs in self.others.items()
        ]
        at = dt.datetime.fromtimestamp(self.at_ms / 1000, dt.UTC)
        head = {"jackpot_id": jackpot_id, "attempt": attempt, "at": utc_text(at)}
        return canonical_json(head | {"eligible": eligible, "ineligible": ineligible})


def judge(
    snapshot: FloorSnapshot, rules: RapsRules, previous_winners: Collection[str] = ()
) -> Judgement:
    """Split the snapshot into the eligible pool and the rest, at the snapshot's instant."""
    cards, _, areas, _, _, _, last, spend, tiers, excluded = snapshot.columns
    cutoff = snapshot.at_ms - int(rules.active_window.total_seconds() * 1000)
    floor = rules.min_spend_cents
    zones, grades, won = rules.areas, rules.tiers, frozenset(previous_winners)
    lp = list(map(int, last))
    sp = list(map(int, spend))
    ok = [
        x == "0" and a in zones and t >= cutoff and s >= floor
        for x, a, t, s in zip(excluded, areas, lp, sp, strict=True)
    ]
    if grades is not None:
        ok = [o and g in grades for o, g in zip(ok, tiers, strict=True)]
    if won:
        ok = [o and c not in won for o, c in zip(ok, cards, strict=True)]
    others: dict[int, tuple[Reason, ...]] = {}
    for i, good in enumerate(ok):
        if good:
            continue
        found = []
        if excluded[i] == "1":
            found.append(Reason.EXCLUDED)
        if areas[i] not in zones:
            found.append(Reason.OUTSIDE_AREAS)
        if lp[i] < cutoff:
            found.append(Reason.NOT_ACTIVE)
        if sp[i] < floor:
            found.append(Reason.BELOW_MIN_SPEND)
        if grades is not None and tiers[i] not in grades:
            found.append(Reason.TIER)
        if cards[i] in won:
            found.append(Reason.PREVIOUS_WINNER)
        others[i] = tuple(found)
    eligible = tuple(sorted(c for c, good in zip(cards, ok, strict=True) if good))
    return Judgement(snapshot, snapshot.at_ms, eligible, others)
