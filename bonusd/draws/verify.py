"""Verifying a whole draw as an auditor does: each round's stream from its seed and pool,
then once-per-draw across rounds and tombolas in the order the picks were made."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from bonusd.draws.fairness import Mismatch, Pick, Pool, SkipReason, Verification, verify
from bonusd.draws.types import ALREADY, EXCLUDED, SEATED, ManualPick, RoundKey


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
