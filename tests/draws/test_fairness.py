"""The verifiable randomness: commitments, the canonical pool, the stream, picks, verify."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bonusd.audit.chain import AuditLog, Kind, canonical_json
from bonusd.draws.evidence import pick_payload
from bonusd.draws.fairness import (
    CandidateStream,
    PassedOver,
    Pick,
    Picker,
    Pool,
    SkipReason,
    candidate,
    commit_seed,
    new_seed,
    pick_message,
    pick_sequence,
    shuffle,
)
from bonusd.draws.verify import Mismatch, verify

SEED = bytes(range(32))


def small_pool() -> Pool:
    return Pool.freeze("gh-halfway", "main", {"C300": 3, "C100": 1, "C200": 2, "C400": 0})


def test_new_seed_takes_32_bytes_from_the_source() -> None:
    assert new_seed(lambda n: b"\x07" * n) == b"\x07" * 32
    assert len(new_seed()) == 32
    with pytest.raises(ValueError, match="16 bytes"):
        new_seed(lambda n: b"\x00" * 16)


def test_seed_commitment_is_sha256_hex_of_the_seed() -> None:
    assert commit_seed(SEED) == hashlib.sha256(SEED).hexdigest()


def test_pool_serialisation_is_canonical() -> None:
    pool = small_pool()
    assert pool.serialise() == (
        b"bonusd-pool-v1 draw=gh-halfway tombola=main round=1 members=3 tickets=6\n"
        b"C100:1\nC200:2\nC300:3\n"
    )
    assert pool.commitment == hashlib.sha256(pool.serialise()).hexdigest()
    shuffled = Pool.freeze("gh-halfway", "main", {"C200": 2, "C300": 3, "C100": 1})
    assert shuffled.commitment == pool.commitment  # input order does not matter


@pytest.mark.parametrize("card", ["", "C 1", "C:1", "C=1", "C\n1"])
def test_pool_refuses_cards_that_would_break_the_serialisation(card: str) -> None:
    with pytest.raises(ValueError, match="card"):
        Pool.freeze("d", "t", {card: 1})


def test_pool_refuses_negative_tickets_and_unsorted_cards() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        Pool.freeze("d", "t", {"A": -1})
    with pytest.raises(ValueError, match="order"):
        Pool("d", "t", 1, ("B", "A"), np.array([1, 1], dtype=np.int64))


def test_ticket_owner_follows_cumulative_counts() -> None:
    pool = small_pool()
    expanded = [c for c, n in zip(pool.cards, pool.tickets.tolist(), strict=True) for _ in range(n)]
    assert [pool.owner(t) for t in range(pool.total)] == expanded
    assert list(pool.ticket_ranges()) == [(1, 1, "C100"), (2, 3, "C200"), (4, 6, "C300")]
    with pytest.raises(IndexError):
        pool.owner(6)


def test_candidate_takes_the_top_bits_and_rejects_out_of_range() -> None:
    def block(first: int) -> bytes:
        return bytes([first]) + b"\xff" * 31

    # n = 3 needs 2 bits: 00, 01, 10 are kept, 11 is rejected (no modulo folding).
    assert [candidate(block(b << 6), 3) for b in range(4)] == [0, 1, 2, None]
    assert candidate(block(0xAB), 256) == 0xAB
    assert candidate(block(0xFF), 1) == 0
    assert candidate(b"\x00" * 31 + b"\x01", 2**256) == 1
    with pytest.raises(ValueError, match="n must be"):
        candidate(block(0), 0)


def test_pick_message_layout() -> None:
    h = "ab" * 32
    msg = pick_message("d1", "slots", h, 258)
    assert msg == (
        b"bonusd-pick-v1" + b"\x00\x02d1" + b"\x00\x05slots" + bytes.fromhex(h) + (258).to_bytes(8)
    )
    block = CandidateStream(SEED, "d1", "slots", h).block(258)
    assert block == hmac.new(SEED, msg, hashlib.sha256).digest()


def test_the_sequence_is_fixed_and_derived_lazily() -> None:
    pool = Pool.freeze("d", "t", {f"M{i:03d}": 1 + i % 4 for i in range(200)})
    first = pick_sequence(pool, SEED, 10)
    longer = pick_sequence(pool, SEED, 25)
    assert longer[:10] == first
    picker = Picker(pool, SEED)
    assert [picker.next() for _ in range(25)] == longer
    assert len({p.card for p in longer}) == 25  # nobody picked twice
    assert [p.number for p in longer] == list(range(1, 26))


def test_picker_passes_over_barred_members_with_the_reason() -> None:
    pool = Pool.freeze("d", "t", {"A": 50, "B": 1, "C": 1})
    picker = Picker(pool, SEED, barred={"A": SkipReason.EXCLUDED})
    picks = picker.take(3)
    assert [p.card for p in picks] in (["B", "C"], ["C", "B"])  # A never, then exhausted
    skipped = [s for p in picks for s in p.passed_over]
    assert skipped
    assert {s.card for s in skipped} <= {"A", "B", "C"}
    assert all(s.reason is SkipReason.EXCLUDED for s in skipped if s.card == "A")
    assert picker.exhausted
    assert picker.next() is None


def test_exclusion_after_the_freeze_is_passed_over_at_pick_time() -> None:
    pool = Pool.freeze("d", "t", {f"M{i}": 1 for i in range(10)})
    plain = pick_sequence(pool, SEED, 10)
    picker = Picker(pool, SEED)
    assert picker.next() == plain[0]
    picker.bar(plain[1].card, SkipReason.EXCLUDED)
    rest = picker.take(10)
    assert plain[1].card not in {p.card for p in rest}
    assert rest[0].card == plain[2].card
    assert any(
        s.card == plain[1].card and s.reason is SkipReason.EXCLUDED for s in rest[0].passed_over
    )


def test_picker_resumes_after_a_restart_from_the_recorded_picks() -> None:
    pool = Pool.freeze("d", "t", {f"M{i}": 1 + i % 3 for i in range(40)})
    full = pick_sequence(pool, SEED, 12)
    resumed = Picker(pool, SEED, picks=full[:7])
    assert resumed.take(5) == full[7:]


def test_empty_pool_gives_no_pick() -> None:
    pool = Pool.freeze("d", "t", {})
    assert pool.total == 0
    assert Picker(pool, SEED).next() is None


def recorded() -> tuple[Pool, list[Pick]]:
    pool = Pool.freeze("gh-bonus", "main", {f"M{i:03d}": 1 + i % 5 for i in range(60)})
    return pool, pick_sequence(pool, SEED, 15, barred={"M007": SkipReason.EXCLUDED})


def check(pool: Pool, picks: list[Pick], seed: bytes = SEED, **kw: str) -> tuple[Mismatch, ...]:
    args = {"seed_commitment": commit_seed(SEED), "pool_commitment": pool.commitment} | kw
    return verify(
        pool, seed, picks=picks, barred={"M007": {SkipReason.EXCLUDED}}, **args
    ).mismatches


def test_verify_confirms_a_real_draw() -> None:
    pool, picks = recorded()
    result = verify(
        pool,
        SEED,
        seed_commitment=commit_seed(SEED),
        pool_commitment=pool.commitment,
        picks=picks,
        barred={"M007": {SkipReason.EXCLUDED}},
    )
    assert result.ok, result
    assert result.picks_checked == 15
    assert "all 15 picks" in str(result)


def test_verify_rejects_a_changed_pool() -> None:
    pool, picks = recorded()
    entries = dict(zip(pool.cards, pool.tickets.tolist(), strict=True)) | {"M010": 9}
    tampered = Pool.freeze("gh-bonus", "main", entries)
    found = check(tampered, picks, pool_commitment=pool.commitment)
    assert found[0].what == "pool"
    assert found[0].expected == pool.commitment


def test_verify_rejects_a_changed_seed() -> None:
    pool, picks = recorded()
    found = check(pool, picks, seed=b"\x01" * 32)
    assert found[0].what == "seed"
    assert found[1].what == "pick"
    assert found[1].pick == 1


def test_verify_names_a_swapped_winner() -> None:
    pool, picks = recorded()
    other = next(c for c in pool.cards if c not in {p.card for p in picks} and c != "M007")
    picks[4] = dataclasses.replace(picks[4], card=other)
    (found,) = check(pool, picks)
    assert (found.what, found.pick) == ("pick", 5)
    assert other in found.recorded
    assert f"card {recorded()[1][4].card}" in found.expected
    assert str(found).startswith("pick 5: expected counter")


def test_verify_rejects_an_invented_pass_over() -> None:
    pool, picks = recorded()
    first = picks[0]
    invented = PassedOver(first.counter, first.ticket, first.card, SkipReason.EXCLUDED)
    later = pick_sequence(pool, SEED, 16, barred={"M007": SkipReason.EXCLUDED})[1]
    picks[0] = dataclasses.replace(
        later, number=1, passed_over=(*first.passed_over, invented, *later.passed_over)
    )
    (found,) = check(pool, picks[:1])
    assert (found.what, found.pick) == ("pass-over", 1)


def test_shuffle_is_a_deterministic_permutation() -> None:
    items = list(range(20))
    a = shuffle(items, SEED, "d", "reveals-main-1", "00" * 32)
    assert sorted(a) == items
    assert a == shuffle(items, SEED, "d", "reveals-main-1", "00" * 32)
    assert a != shuffle(items, SEED, "d", "reveals-main-2", "00" * 32)
    assert a != items


def bench_pick(members: int = 200_000, tickets: int = 1_000_000, winners: int = 15) -> float:
    """Seconds to pick `winners` from a frozen pool, including the cumulative array."""
    rng = np.random.default_rng(7)
    counts = 1 + rng.multinomial(tickets - members, np.full(members, 1 / members))
    cards = tuple(f"C{i:09d}" for i in range(members))
    pool = Pool("bench", "main", 1, cards, counts.astype(np.int64))
    assert pool.total == tickets
    assert pool.commitment  # computed at bin close, before the draw
    start = time.perf_counter()
    picks = Picker(pool, SEED).take(winners)  # builds pool.cumulative on first use
    elapsed = time.perf_counter() - start
    assert len(picks) == winners
    return elapsed


def test_picking_15_of_a_million_tickets_is_fast() -> None:
    best = min(bench_pick() for _ in range(3))
    print(f"\npick 15 winners, 1,000,000 tickets, 200,000 members: {best * 1000:.2f} ms")
    assert best < 0.1


DOCS = Path(__file__).resolve().parents[2] / "docs" / "fairness.md"


def test_worked_example_in_the_docs() -> None:
    pool = Pool.freeze(
        "gh-halfway-2026-11-07", "main", {"C1001": 3, "C1002": 1, "C1003": 2, "C1004": 4}
    )
    text = DOCS.read_text()
    assert pool.serialise().decode() in text
    assert commit_seed(SEED) in text
    assert pool.commitment in text
    stream = CandidateStream(SEED, pool.draw_id, pool.tombola, pool.commitment)
    assert stream.block(1).hex() in text
    picks = pick_sequence(pool, SEED, 3, barred={"C1003": SkipReason.EXCLUDED})
    assert [(p.counter, p.ticket_number, p.card) for p in picks] == [
        (1, 8, "C1004"),
        (2, 2, "C1001"),
        (9, 4, "C1002"),
    ]
    assert [(s.counter, s.card, s.reason.value) for s in picks[2].passed_over] == [
        (4, "C1001", "already_picked"),
        (5, "C1004", "already_picked"),
        (6, "C1003", "excluded"),
        (7, "C1004", "already_picked"),
    ]
    log = AuditLog()
    sast = dt.timezone(dt.timedelta(hours=2))
    rec = log.append(
        at=dt.datetime(2026, 11, 7, 19, 0, tzinfo=sast),
        actor="system",
        kind=Kind.PICK,
        payload=pick_payload(pool, picks[0]),
    )
    assert rec.to_json() in text
    assert canonical_json(rec.body()).decode() in text


def test_the_independent_reimplementation_in_the_docs_agrees() -> None:
    code = DOCS.read_text().split("```python\n")[1].split("```")[0]
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    docs_picks = namespace["picks"]
    rng = np.random.default_rng(11)
    for trial in range(30):
        members = int(rng.integers(1, 40))
        entries = {f"M{i:03d}": int(rng.integers(1, 9)) for i in range(members)}
        pool = Pool.freeze(f"draw-{trial}", "slots", entries)
        seed = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
        barred = {c for c in entries if rng.random() < 0.2}
        ours = pick_sequence(pool, seed, 8, barred=dict.fromkeys(barred, SkipReason.EXCLUDED))
        assert docs_picks(pool.serialise(), seed, 8, barred) == [p.card for p in ours]


def test_second_worked_example_in_the_docs() -> None:
    """docs/fairness.md section 13: an exclusion after the freeze and a no-show's redraw."""
    entries = {"C2001": 2, "C2002": 3, "C2003": 1, "C2004": 2, "C2005": 2}
    pool = Pool.freeze("gh-final-example", "main", entries)
    seed = bytes(range(32, 64))
    text = DOCS.read_text()
    section = text[text.index("## 13.") :]
    assert pool.serialise().decode() in section
    assert seed.hex() in section and commit_seed(seed) in section
    assert pool.commitment in section
    stream = CandidateStream(seed, pool.draw_id, pool.tombola, pool.commitment)
    for counter in range(9):
        assert f"| {counter} | `{stream.block(counter).hex()[:16]}…` |" in section
    # two winners with C2005 barred, then the redraw after pick 1's no-show
    picks = pick_sequence(pool, seed, 3, barred={"C2005": SkipReason.EXCLUDED})
    assert [(p.counter, p.ticket_number, p.card) for p in picks] == [
        (2, 7, "C2004"),
        (7, 4, "C2002"),
        (8, 2, "C2001"),
    ]
    skipped = [
        [(s.counter, s.ticket + 1, s.card, s.reason.value) for s in p.passed_over] for p in picks
    ]
    assert skipped == [
        [(1, 9, "C2005", "excluded")],
        [(3, 9, "C2005", "excluded"), (5, 9, "C2005", "excluded")],
        [],
    ]
