"""Verifying draws as an auditor does: one round's picks recomputed from its revealed seed
and frozen pool (`verify`), then a whole draw: each round's stream, then once-per-draw
across rounds and tombolas in the order the picks were made (`verify_draw`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from bonusd.draws.fairness import CandidateStream, Pick, Pool, SkipReason, commit_seed
from bonusd.draws.types import ALREADY, EXCLUDED, SEATED, ManualPick, RoundKey


@dataclass(frozen=True)
class Mismatch:
    """One place where a record differs from the recomputation."""

    what: str  # "seed", "pool", "pick", "pass-over", "evidence" or "trail"
    pick: int | None
    expected: str
    recorded: str
    text: str = ""  # a trail problem says itself (`bonusd.draws.trailcheck`)

    def __str__(self) -> str:
        if self.text:
            return self.text
        where = f"pick {self.pick}" if self.pick is not None else self.what
        return f"{where}: expected {self.expected}, recorded {self.recorded}"


@dataclass(frozen=True)
class Verification:
    picks_checked: int
    mismatches: tuple[Mismatch, ...]

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def __str__(self) -> str:
        if self.ok:
            return f"verified: seed, pool and all {self.picks_checked} picks match"
        return "; ".join(str(m) for m in self.mismatches)


def _check_pick(
    stream: CandidateStream,
    pool: Pool,
    number: int,
    pick: Pick,
    *,
    picked: set[str],
    outside: Mapping[str, Collection[SkipReason]],
) -> Mismatch | None:
    """The first difference between recorded pick `k` and the recomputed stream, if any."""
    if pick.number != number:
        return Mismatch("pick", number, f"number {number}", str(pick.number))
    if pool.total == 0:
        return Mismatch("pick", number, "no pick from an empty pool", pick.card)
    steps = [(p.counter, p.ticket, p.card, p.reason) for p in pick.passed_over]
    for counter, ticket, card, reason in [*steps, (pick.counter, pick.ticket, pick.card, None)]:
        stream_counter, stream_ticket = stream.below(pool.total)
        owner = pool.owner(stream_ticket)
        if (stream_counter, stream_ticket, owner) != (counter, ticket, card):
            expected = f"counter {stream_counter} ticket {stream_ticket + 1} card {owner}"
            return Mismatch(
                "pick", number, expected, f"counter {counter} ticket {ticket + 1} card {card}"
            )
        if reason is None and card in picked:
            return Mismatch("pick", number, f"card {card} passed over", "picked twice")
        already = reason is SkipReason.ALREADY_PICKED and card in picked
        if reason is not None and not already and reason not in outside.get(card, ()):
            return Mismatch("pass-over", number, f"card {card} picked", f"passed over: {reason}")
    return None


def verify(
    pool: Pool,
    seed: bytes,
    *,
    seed_commitment: str,
    pool_commitment: str,
    picks: Sequence[Pick],
    barred: Mapping[str, Collection[SkipReason]] | None = None,
) -> Verification:
    """Recompute the stream and check the commitments and every recorded pick.

    `barred` lists cards legitimately passed over for reasons outside this stream (picked
    elsewhere in the draw, seated, excluded). Stops at the first pick that differs, since
    everything after it follows from it.
    """
    found: list[Mismatch] = []
    if commit_seed(seed) != seed_commitment:
        found.append(Mismatch("seed", None, seed_commitment, f"hash {commit_seed(seed)}"))
    if pool.commitment != pool_commitment:
        found.append(Mismatch("pool", None, pool_commitment, f"hash {pool.commitment}"))
    stream = CandidateStream(seed, pool.draw_id, pool.tombola, pool.commitment)
    picked: set[str] = set()
    for number, pick in enumerate(picks, 1):
        problem = _check_pick(stream, pool, number, pick, picked=picked, outside=barred or {})
        if problem is not None:
            return Verification(number - 1, (*found, problem))
        picked.add(pick.card)
    return Verification(len(picks), tuple(found))


@dataclass(frozen=True)
class RoundRecord:
    """What an auditor holds for one electronic round: seed, pool, commitments, picks."""

    pool: Pool
    seed: bytes
    seed_commitment: str
    pool_commitment: str
    picks: tuple[Pick, ...]

    @property
    def key(self) -> RoundKey:
        return (self.pool.tombola, self.pool.round_no)


def verify_draw(
    rounds: Sequence[RoundRecord],
    order: Sequence[tuple[RoundKey, int]],
    *,
    seated: Collection[str] = (),
    excluded: Collection[str] = (),
    manual: Mapping[RoundKey, Sequence[ManualPick]] | None = None,
) -> dict[RoundKey, Verification]:
    """Verify each round's stream, then once-per-draw across rounds in the order picked.

    `order` is the draw-wide sequence of (round, pick number), as in `Draw.order`;
    `manual` holds the accepted hand-drawn tickets of manual rounds.
    """
    manual = manual or {}
    by_key = {r.key: r for r in rounds}
    barred: dict[str, set[SkipReason]] = {}
    everyone = {p.card for r in rounds for p in r.picks}
    for cards, reason in ((everyone, ALREADY), (excluded, EXCLUDED), (seated, SEATED)):
        for card in cards:
            barred.setdefault(card, set()).add(reason)
    result = {
        rec.key: verify(
            rec.pool,
            rec.seed,
            seed_commitment=rec.seed_commitment,
            pool_commitment=rec.pool_commitment,
            picks=rec.picks,
            barred=barred,
        )
        for rec in rounds
    }
    placed = set(order)
    for rec in rounds:  # every pick must have its place in the draw-wide order
        missing = [n for n in range(1, len(rec.picks) + 1) if (rec.key, n) not in placed]
        if missing and result[rec.key].ok:
            result[rec.key] = Verification(0, (Mismatch("pick", missing[0], "in order", "absent"),))
    won: set[str] = set(seated)
    for key, number in order:
        if key in manual and 1 <= number <= len(manual[key]):
            won.add(manual[key][number - 1].card)
        if key not in by_key or not 1 <= number <= len(by_key[key].picks):
            continue  # a manual pick, or a missing pick the round check already reports
        pick = by_key[key].picks[number - 1]
        late = [p.card for p in pick.passed_over if p.reason is ALREADY]
        problem = None
        if pick.card in won:
            problem = Mismatch("pick", number, f"card {pick.card} passed over", "picked again")
        elif any(card not in won for card in late):
            problem = Mismatch("pass-over", number, "only earlier picks passed over", str(late))
        if problem is not None and result[key].ok:
            result[key] = Verification(result[key].picks_checked, (problem,))
        won.add(pick.card)
    return result
