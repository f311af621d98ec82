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
tests hold it to), for a floor where each card is in one place. It reads the file's bytes
as numpy offsets (`floortable`); the per-row reasons are built only when the eligibility
report asks for them, off the jackpot's critical path.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from bonusd.audit.chain import Json, canonical_json, utc_text
from bonusd.draws.fairness import Pool
from bonusd.draws.verify import Mismatch
from bonusd.raps.floordelta import DeltaError, FloorDelta, apply_delta, is_delta, parse_delta
from bonusd.raps.rules import RAPS_TOMBOLA, FloorPlayer, IneligibleReason, PlayKind, RapsRules
from bonusd.raps.table import Bools, FieldError, FieldTable, Ints

if TYPE_CHECKING:
    from bonusd.raps.columns import FloorColumns

MAGIC = "bonusd-raps-floor 1"
COLUMNS: tuple[str, ...] = ("card", "kind", "area", "device", "seat", "bank", "last_play_ms")
COLUMNS += ("spend_cents", "tier", "excluded")
WIDTH = len(COLUMNS)
PLACE = ("card", "device", "area", "bank", "seat")
CARD, KIND, AREA, DEVICE, SEAT, BANK, LAST, SPEND, TIER, EXCLUDED = range(WIDTH)


class SnapshotError(ValueError):
    """An archived floor snapshot that is not in the documented form."""


def instant_ms(at: dt.datetime) -> int:
    """A jackpot instant as the snapshot file's header writes it (epoch milliseconds)."""
    if at.tzinfo is None:
        raise ValueError("the jackpot instant must be timezone-aware")
    return int(at.timestamp() * 1000)


def player_line(player: FloorPlayer) -> str:
    """One card's line of the snapshot file (LF included)."""
    fields = (
        player.card,
        player.kind.value,
        player.area,
        player.device,
        "" if player.seat is None else str(player.seat),
        player.bank,
        str(int(player.last_play.timestamp() * 1000)),
        str(player.spend_cents),
        player.tier,
        "1" if player.excluded else "0",
    )
    return "\t".join(fields) + "\n"


def _day_line(row: str, day: str) -> str:
    """A `floor-row` line as a snapshot line on gaming day `day`."""
    fields = row.split("\t")
    if len(fields) != WIDTH + 1:
        raise SnapshotError(f"the floor-row index has a line of {len(fields)} fields; rebuild it")
    if fields.pop() != day:
        fields[SPEND] = "0"
    return "\t".join(fields) + "\n"


@dataclass(frozen=True, eq=False)
class FloorSnapshot:
    """Columns of the floor at one instant (row i of every column is one card)."""

    at_ms: int
    # the file's lines after the header, each ending in LF ("" when empty), or those lines
    # as a list (joined on first use: a pick that archives a difference never joins them)
    source: str | list[str]
    # the same rows as columns checked already (the daemon's floor mirror), or None
    checked: FloorColumns | None = field(default=None, repr=False)
    # archived as this difference from a base (form 2), or None: archived whole (form 1)
    delta: FloorDelta | None = None
    # cards and their rows in card order (kept by `lean` for `place`), or None
    index: tuple[list[str], Ints] | None = field(default=None, repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FloorSnapshot):
            return NotImplemented
        return (self.at_ms, self.delta, self.body) == (other.at_ms, other.delta, other.body)

    __hash__ = None  # type: ignore[assignment]

    @cached_property
    def body(self) -> str:
        """The floor's lines (each ending in LF; "" when nobody is on the floor)."""
        return self.source if isinstance(self.source, str) else "".join(self.source)

    @classmethod
    def of(cls, at: dt.datetime, body: str) -> FloorSnapshot:
        snap = cls(instant_ms(at), body)
        snap.table  # noqa: B018 - check the form now, not at first use
        return snap

    @classmethod
    def from_players(cls, at: dt.datetime, players: Collection[FloorPlayer]) -> FloorSnapshot:
        return cls.of(at, "".join(player_line(p) for p in players))

    @classmethod
    def of_rows(cls, at: dt.datetime, day: str, rows: str) -> FloorSnapshot:
        """The snapshot from the ingest's `floor-row` lines (LF-separated): each is a file
        line for the gaming day it ends with. The day is dropped; a row of another day
        than `day` (the jackpot's) has spent nothing on it: its spend becomes 0. (What the
        whole index gives: the daemon's mirror of it, `floormirror`, is held to this.)"""
        if not rows:
            return cls.of(at, "")
        joined = rows + "\n"
        body = joined.replace(f"\t{day}\n", "\n")
        if len(joined) - len(body) != joined.count("\n") * (len(day) + 1):
            body = "".join(_day_line(line, day) for line in joined[:-1].split("\n"))
        return cls.of(at, body)

    def lean(self) -> FloorSnapshot:
        """The same snapshot without its checked columns (a pick needs them; a book that
        keeps the snapshot for the crew's places does not: ~2 MB at 20,000 players)."""
        if self.checked is None:
            return self
        index = (self.checked.cards, self.checked.order)
        return FloorSnapshot(self.at_ms, self.source, delta=self.delta, index=index)

    def compact(self) -> FloorSnapshot:
        """The same snapshot with its lines as one string: a pick's list of lines holds
        about 2.7 times the memory once the mirror has replaced them."""
        if isinstance(self.source, str):
            return self
        return FloorSnapshot(self.at_ms, self.body, delta=self.delta)

    def whole(self) -> FloorSnapshot:
        """The same floor archived whole (form 1): what a difference's base is."""
        return FloorSnapshot(self.at_ms, self.source, self.checked, index=self.index)

    @classmethod
    def parse(cls, raw: bytes, base: bytes | None = None) -> FloorSnapshot:
        """Read an archived snapshot file (a difference with its `base`, docs/fairness.md
        section 10); anything off the documented form is refused."""
        if is_delta(raw):
            try:
                at_ms, delta = parse_delta(raw)
                if base is None:
                    raise SnapshotError("the base of a RAPS floor difference is missing")
                if hashlib.sha256(base).hexdigest() != delta.base_sha256 or is_delta(base):
                    raise SnapshotError("the base of a RAPS floor difference is not the one named")
                return cls(at_ms, apply_delta(cls.parse(base).body, delta), delta=delta)
            except DeltaError as exc:
                raise SnapshotError(str(exc)) from None
        text = raw.decode()
        header, sep, body = text.partition("\n")
        magic, _, at = header.rpartition(" ")
        if not sep or magic != MAGIC or not at.isdigit():
            raise SnapshotError(f"not a RAPS floor snapshot (header {header[:60]!r})")
        return cls(int(at), body)

    @cached_property
    def _raw(self) -> bytes:
        if self.delta is not None:
            return self.delta.file(self.at_ms)
        return f"{MAGIC} {self.at_ms}\n{self.body}".encode()

    def serialise(self) -> bytes:
        """The archived file: the whole floor (form 1), or its difference (form 2)."""
        return self._raw

    @cached_property
    def sha256(self) -> str:
        """The archived file's SHA-256 (the POOL record's `floor_sha256`)."""
        return hashlib.sha256(self._raw).hexdigest()

    @cached_property
    def table(self) -> FieldTable:
        """The body's fields as offsets, checked against the documented form."""
        try:
            table = FieldTable.of(self.body.encode(), WIDTH)
        except FieldError as exc:
            if "line feed" in str(exc):
                raise SnapshotError("a RAPS floor snapshot ends with a line feed") from None
            raise SnapshotError(f"every line of a RAPS floor snapshot has {WIDTH} fields") from None
        if table.has_nul:
            raise SnapshotError("a RAPS floor snapshot holds no NUL bytes")
        cards = table.fixed(CARD)[self._card_order(table)]
        if (cards[1:] == cards[:-1]).any():
            raise SnapshotError("a card appears twice in the RAPS floor snapshot")
        if not (table.equals(KIND, b"egm") | table.equals(KIND, b"table")).all():
            raise SnapshotError("a RAPS floor snapshot kind is egm or table")
        if not (table.equals(EXCLUDED, b"0") | table.equals(EXCLUDED, b"1")).all():
            raise SnapshotError("the excluded column of a RAPS floor snapshot is 0 or 1")
        for col in (LAST, SPEND):
            if table.integers(col) is None:
                raise SnapshotError(f"the {COLUMNS[col]} column of a RAPS floor snapshot is digits")
        return table

    def _card_order(self, table: FieldTable) -> Ints:
        if "card_order" not in self.__dict__:
            self.__dict__["card_order"] = np.argsort(table.fixed(CARD), kind="stable")
        return cast(Ints, self.__dict__["card_order"])

    @property
    def card_order(self) -> Ints:
        """Row numbers in card (code-point) order."""
        return self._card_order(self.table)

    @cached_property
    def columns(self) -> tuple[list[str], ...]:
        """Every column as text (for the report and the reference rules; not on the pick)."""
        return tuple(self.table.texts(c) for c in range(WIDTH))

    @property
    def size(self) -> int:
        return self.table.rows

    def row(self, index: int) -> dict[str, str]:
        return {name: col[index] for name, col in zip(COLUMNS, self.columns, strict=True)}

    def place(self, card: str) -> dict[str, str]:
        """Where the crew finds `card`: card, device, area, bank and seat ("" for an EGM)."""
        fields = self._line(card).rstrip("\n").split("\t")
        return {k: fields[COLUMNS.index(k)] for k in PLACE}

    def _line(self, card: str) -> str:
        index = self.index or (
            (self.checked.cards, self.checked.order) if self.checked is not None else None
        )
        if index is not None and isinstance(self.source, list):
            cards, order = index  # the rows of `source`, by a binary search in card order
            at = bisect.bisect_left(order, card, key=cards.__getitem__)
            row = int(order[at]) if at < len(cards) else -1
            if row < 0 or cards[row] != card:
                raise KeyError(card)
            line: str = self.source[row]
            return line
        body = self.body
        at = 0 if body.startswith(card + "\t") else body.find(f"\n{card}\t") + 1
        if at == 0 and not body.startswith(card + "\t"):
            raise KeyError(card)
        return body[at : body.index("\n", at)]

    def players(self) -> list[FloorPlayer]:
        """The snapshot as `FloorPlayer`s (for the per-player reference rules)."""
        out = []
        for index in range(self.size):
            row = self.row(index)
            out.append(
                FloorPlayer(
                    card=row["card"],
                    kind=PlayKind(row["kind"]),
                    area=row["area"],
                    device=row["device"],
                    bank=row["bank"],
                    seat=int(row["seat"]) if row["seat"] else None,
                    last_play=dt.datetime.fromtimestamp(int(row["last_play_ms"]) / 1000, dt.UTC),
                    spend_cents=int(row["spend_cents"]),
                    tier=row["tier"],
                    excluded=row["excluded"] == "1",
                )
            )
        return out


@dataclass(frozen=True, eq=False)
class Judgement:
    """Who on a snapshot is eligible for a jackpot, and why each other card is not."""

    snapshot: FloorSnapshot
    at_ms: int
    eligible: tuple[str, ...]  # cards, in code-point order
    failed: dict[IneligibleReason, Bools]  # reason -> the rows it applies to
    ordered: bool = False  # taken from checked, sorted columns (`Pool(..., ordered=True)`)

    def pool(self, draw_id: str, round_no: int) -> Pool:
        """The eligible cards as round `round_no`'s RAPS pool, one entry each."""
        ones = np.ones(len(self.eligible), dtype=np.int64)
        return Pool(draw_id, RAPS_TOMBOLA, round_no, self.eligible, ones, ordered=self.ordered)

    @cached_property
    def _left_out(self) -> Bools:
        out = np.zeros(len(next(iter(self.failed.values()))), dtype=np.bool_)
        for mask in self.failed.values():
            out |= mask
        return out

    @property
    def ineligible(self) -> int:
        return int(self._left_out.sum())

    @cached_property
    def others(self) -> dict[int, tuple[IneligibleReason, ...]]:
        """Row -> the reasons it was left out, rows in snapshot order."""
        rows = np.flatnonzero(self._left_out).tolist()
        flags = {r: m.tolist() for r, m in self.failed.items()}
        return {i: tuple(r for r, m in flags.items() if m[i]) for i in rows}

    def reasons(self) -> dict[str, int]:
        """How many cards were left out for each reason (a card may have several)."""
        counted = {r.value: int(m.sum()) for r, m in self.failed.items()}
        return dict(sorted((k, v) for k, v in counted.items() if v))

    def report(self, jackpot_id: str, attempt: int) -> bytes:
        """The readable eligibility report (canonical JSON): each eligible card with its
        place, each other card with its reasons. Derived from the archived snapshot, so
        it is built when someone asks for it, not on the jackpot's critical path."""
        snap = self.snapshot
        cards, devices = snap.columns[CARD], snap.columns[DEVICE]
        row_of = {c: i for i, c in enumerate(cards)}
        eligible: list[Json] = [
            {k: snap.columns[COLUMNS.index(k)][row_of[c]] for k in PLACE} for c in self.eligible
        ]
        ineligible: list[Json] = [
            {"card": cards[i], "device": devices[i], "reasons": [r.value for r in rs]}
            for i, rs in self.others.items()
        ]
        at = dt.datetime.fromtimestamp(self.at_ms / 1000, dt.UTC)
        head = {"jackpot_id": jackpot_id, "attempt": attempt, "at": utc_text(at)}
        return canonical_json(head | {"eligible": eligible, "ineligible": ineligible})


def check_floor(
    pool_record: Mapping[str, Any],
    raw: bytes | None,
    pool: Pool | None,
    rules: RapsRules,
    base: bytes | None = None,
) -> Mismatch | None:
    """Where an archived floor snapshot (`raw`, None when missing; a difference with its
    `base`) does not give a RAPS POOL record's pool under `rules`: its SHA-256 differs from
    the record's, it is not in the documented form, or its eligible cards are not the pool
    file's. None: it does."""
    want = str(pool_record["floor_sha256"])
    if raw is None:
        return Mismatch("floor", None, want, "no archived snapshot")
    try:
        found = hashlib.sha256(raw).hexdigest()
        if found != want:
            return Mismatch("floor", None, want, found)
        floor = FloorSnapshot.parse(raw, base)
        eligible = judge(floor, rules).eligible
    except (SnapshotError, UnicodeDecodeError) as exc:
        return Mismatch("floor", None, "a snapshot in the documented form", str(exc))
    if pool is not None and pool.cards != eligible:
        return Mismatch(
            "floor", None, f"{len(eligible)} eligible cards", f"a pool of {pool.members}"
        )
    return None


def judge(
    snapshot: FloorSnapshot, rules: RapsRules, previous_winners: Collection[str] = ()
) -> Judgement:
    """Split the snapshot into the eligible pool and the rest, at the snapshot's instant."""
    if snapshot.checked is not None:
        eligible, failed = snapshot.checked.judge(snapshot.at_ms, rules, previous_winners)
        return Judgement(snapshot, snapshot.at_ms, eligible, failed, ordered=True)
    table = snapshot.table
    last, spend = table.integers(LAST), table.integers(SPEND)
    assert last is not None  # checked by `table`
    assert spend is not None
    cutoff = snapshot.at_ms - int(rules.active_window.total_seconds() * 1000)
    none = np.zeros(table.rows, dtype=np.bool_)
    failed = {
        IneligibleReason.EXCLUDED: table.equals(EXCLUDED, b"1"),
        IneligibleReason.OUTSIDE_AREAS: ~table.among(AREA, rules.areas),
        IneligibleReason.NOT_ACTIVE: last < cutoff,
        IneligibleReason.BELOW_MIN_SPEND: spend < rules.min_spend_cents,
        IneligibleReason.TIER: none if rules.tiers is None else ~table.among(TIER, rules.tiers),
        IneligibleReason.PREVIOUS_WINNER: table.among(CARD, frozenset(previous_winners)),
    }
    ok = np.ones(table.rows, dtype=np.bool_)
    for mask in failed.values():
        ok &= ~mask
    order = snapshot.card_order
    cards = table.fixed(CARD)[order[ok[order]]].tolist()
    eligible = tuple(b"\n".join(cards).decode().split("\n")) if cards else ()
    return Judgement(snapshot, snapshot.at_ms, eligible, failed)
