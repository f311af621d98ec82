"""Statistical tests of selection. Run with `-s` to see the test statistics.

The big runs use a vectorised model of the stream: the HMAC blocks come from
`Stream.block` (the real code), the rest (top bits, rejection, owner lookup) is done on
whole numpy arrays. `test_vector_model_is_the_real_stream` pins the model to the real
`Stream.below` and `Pool.owner` value for value, so the statistics speak for the code.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from bonusd.draws.fairness import CandidateStream, Picker, Pool, SkipReason

P_MIN = 0.001
IntArray = npt.NDArray[np.int64]


def stream_values(seed: bytes, pool: Pool, blocks: int) -> IntArray:
    """Accepted ticket indexes from the first `blocks` candidates of the pool's stream."""
    block = CandidateStream(seed, pool.draw_id, pool.tombola, pool.commitment).block
    raw = b"".join([block(c)[:8] for c in range(blocks)])
    bits = (pool.total - 1).bit_length()
    assert bits <= 63
    values = (np.frombuffer(raw, dtype=">u8") >> np.uint64(64 - bits)).astype(np.int64)
    return values[values < pool.total]


def owners(pool: Pool, tickets: IntArray) -> IntArray:
    return np.searchsorted(pool.cumulative, tickets, side="right").astype(np.int64)


def seed_of(i: int) -> bytes:
    return i.to_bytes(32, "big")


def test_vector_model_is_the_real_stream() -> None:
    pool = Pool.freeze("d", "t", {f"M{i:03d}": 1 + i % 7 for i in range(300)})
    model = stream_values(seed_of(1), pool, 3000)
    stream = CandidateStream(seed_of(1), pool.draw_id, pool.tombola, pool.commitment)
    real = [stream.below(pool.total)[1] for _ in range(len(model))]
    assert model.tolist() == real
    assert owners(pool, model).tolist() == [pool.index_of(pool.owner(t)) for t in real]


def test_every_ticket_is_equally_likely() -> None:
    pool = Pool.freeze("d", "t", {f"M{i:03d}": 1 + i % 5 for i in range(100)})  # 300 tickets
    # Many seeded runs, the first 3,000 candidates of each.
    tickets = np.concatenate([stream_values(seed_of(s), pool, 3000) for s in range(120)])
    counts = np.bincount(tickets, minlength=pool.total)
    chi2, p = stats.chisquare(counts)
    print(
        f"\nticket uniformity: {len(tickets)} picks over {pool.total} tickets, "
        f"chi2={chi2:.1f} dof={pool.total - 1} p={p:.4f}"
    )
    assert p > P_MIN


def test_no_modulo_bias_for_n_3() -> None:
    # n = 3 takes 2 bits per block; '11' is rejected rather than folded onto 0.
    pool = Pool.freeze("d", "t", {"A": 1, "B": 1, "C": 1})
    values = stream_values(seed_of(9), pool, 300_000)
    counts = np.bincount(values, minlength=3)
    chi2, p = stats.chisquare(counts)
    accepted = len(values) / 300_000
    print(f"\nn=3: counts={counts.tolist()} chi2={chi2:.2f} p={p:.4f} accepted={accepted:.4f}")
    assert p > P_MIN
    assert accepted == pytest.approx(0.75, abs=0.005)
    # What modulo reduction of a byte would have done: 256 % 3 == 1 makes 0 likelier.
    assert np.bincount(np.arange(256) % 3).tolist() == [86, 85, 85]


def test_twice_the_tickets_wins_about_twice_as_often() -> None:
    entries = {"DOUBLE": 2} | {f"M{i:02d}": 1 for i in range(18)}  # 20 tickets
    pool = Pool.freeze("d", "t", entries)
    runs = 40_000
    wins: dict[str, int] = {}
    for s in range(runs):  # the real Picker, one fresh seed per draw
        pick = Picker(pool, seed_of(s)).next()
        assert pick is not None
        wins[pick.card] = wins.get(pick.card, 0) + 1
    singles = [wins.get(c, 0) for c in entries if c != "DOUBLE"]
    ratio = wins["DOUBLE"] / np.mean(singles)
    observed = [wins["DOUBLE"], *singles]
    expected = [runs * 2 / 20] + [runs / 20] * len(singles)
    chi2, p = stats.chisquare(observed, expected)
    print(f"\n2x tickets: ratio={ratio:.3f} chi2={chi2:.1f} p={p:.4f} over {runs} draws")
    assert p > P_MIN
    assert 1.8 < ratio < 2.2


@pytest.mark.slow
def test_excluded_members_are_never_picked_in_a_million_picks() -> None:
    # Slow only because of the 1.4 million HMAC blocks (about 3 us each here).
    rng = np.random.default_rng(3)
    tickets = rng.integers(1, 6, size=1000)
    pool = Pool.freeze("d", "t", {f"M{i:04d}": int(n) for i, n in enumerate(tickets)})
    excluded = np.zeros(pool.members, dtype=bool)
    excluded[rng.choice(pool.members, size=100, replace=False)] = True
    # Back-to-back one-winner draws along one stream: an excluded owner is passed over
    # and the next value drawn, so the picks are the owners that are not excluded.
    drawn = owners(pool, stream_values(seed_of(5), pool, 1_600_000))
    picks = drawn[~excluded[drawn]]
    print(f"\nexclusions: {len(picks)} picks, {excluded.sum()} excluded members, 0 picked")
    assert len(picks) >= 1_000_000
    assert not excluded[picks].any()
    seen = np.bincount(picks, minlength=pool.members)
    assert (seen[~excluded] > 0).all()


def test_the_real_picker_never_picks_an_excluded_member() -> None:
    pool = Pool.freeze("d", "t", {f"M{i:03d}": 1 + i % 4 for i in range(60)})
    barred = {f"M{i:03d}": SkipReason.EXCLUDED for i in range(0, 60, 6)}
    picked = 0
    for s in range(2000):
        picks = Picker(pool, seed_of(s), barred=barred).take(25)
        assert not {p.card for p in picks} & barred.keys()
        picked += len(picks)
    print(f"\nreal Picker: {picked} picks, none excluded")
    assert picked == 50_000
