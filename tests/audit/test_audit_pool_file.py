"""`poolfile.parse_pool`, the numpy reader of archived pool files, against the line-by-line
reference it replaced (kept below verbatim): it must accept exactly the files the
reference accepts, return the same pool, and refuse the rest with an AuditFormatError that
names the problem.

Deliberate differences, all where the reference did not answer with an AuditFormatError
or accepted a file the format forbids: a file without any LF (the reference raised
IndexError), a ticket count beyond an int64 (OverflowError) and a total beyond an int64
(accepted, with the wrapped-around sum in the header). The fast reader refuses all three
with an AuditFormatError; `reference_outcome` counts them as refusals. The reference
builds the current `Pool`, so it refuses what `Pool` refuses: since 2026-12-06 that
includes whitespace at either end of a card or id, which both used to accept (a pool
file `Pool` could write but not read back).
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from bonusd.draws.fairness import POOL_MAGIC, Pool, check_cards
from bonusd.draws.poolfile import parse_pool
from bonusd.errors import AuditFormatError

INT64_MAX = 2**63 - 1


def reference_parse_pool(data: bytes) -> Pool:
    """The parser before the numpy reader (bonusd/audit/chain.py at bbe9931), unchanged."""
    try:
        header, *lines = data.decode().split("\n")
        magic, *fields = header.split(" ")
        meta = dict(f.split("=", 1) for f in fields)
        if magic != POOL_MAGIC or lines[-1] != "":
            raise ValueError("not a bonusd-pool-v1 file")
        pairs = [line.split(":") for line in lines[:-1]]
        cards = tuple(c for c, _ in pairs)
        tickets = np.array([int(n) for _, n in pairs], dtype=np.int64)
        pool = Pool(meta["draw"], meta["tombola"], int(meta["round"]), cards, tickets)
        if pool.serialise() != data:
            raise ValueError("not in canonical form (header counts, number format or order)")
    except (ValueError, KeyError) as exc:
        raise AuditFormatError(f"pool file: {exc}") from exc
    return pool


Outcome = tuple[str, str, int, tuple[str, ...], list[int], int, str] | None  # None: refused


def facts(pool: Pool) -> Outcome:
    assert pool.tickets.dtype == np.int64
    tickets = pool.tickets.tolist()
    return (
        pool.draw_id,
        pool.tombola,
        pool.round_no,
        pool.cards,
        tickets,
        pool.total,
        pool.commitment,
    )


def reference_outcome(data: bytes) -> Outcome:
    try:
        pool = reference_parse_pool(data)
    except (AuditFormatError, IndexError, OverflowError):  # see the module docstring
        return None
    if sum(pool.tickets.tolist()) > INT64_MAX:  # accepted with a wrapped total
        return None
    return facts(pool)


def fast_outcome(data: bytes) -> Outcome:
    try:
        pool = parse_pool(data)
    except AuditFormatError:  # and nothing else may escape
        return None
    # what it accepts is canonical, and what it returns is an ordinary pool
    assert pool.serialise() == data
    assert pool.commitment == hashlib.sha256(data).hexdigest()
    again = Pool(pool.draw_id, pool.tombola, pool.round_no, pool.cards, pool.tickets.copy())
    assert pool.commitment == again.commitment
    assert not pool.tickets.flags.writeable
    return facts(pool)


# -- generated files -------------------------------------------------------------------
CHARS = "AC019é€ -:=\t\r\n\x00\x85\u3000١"  # some allowed in cards, some not, some only at the ends
plain_cards = st.from_regex(r"C[0-9]{1,3}", fullmatch=True) | st.text(
    st.sampled_from("AC019é€-\x00"), min_size=1, max_size=4
)
odd_cards = plain_cards | st.text(st.sampled_from(CHARS), max_size=4)
counts = st.integers(1, 20) | st.integers(1, 10**6) | st.integers(1, INT64_MAX) | st.just(INT64_MAX)
tokens = st.sampled_from(["gh-halfway", "main", "é", "d"] * 4 + ["x=y", "a:b", " x", "\tx", ""])


@st.composite
def pools(draw: st.DrawFn) -> bytes:
    """A pool's serialisation, or (when the ingredients make no valid pool) a hand-made
    file of the same shape."""
    entries = draw(
        st.dictionaries(draw(st.sampled_from([plain_cards, odd_cards])), counts, max_size=12)
    )
    draw_id, tombola = draw(tokens), draw(tokens)
    round_no = draw(st.integers(-3, 3) | st.integers())
    try:
        return Pool.freeze(draw_id, tombola, entries, round_no=round_no).serialise()
    except ValueError:
        lines = [f"{c}:{n}\n" for c, n in sorted(entries.items())]
        header = (
            f"{POOL_MAGIC} draw={draw_id} tombola={tombola} round={round_no}"
            f" members={len(entries)} tickets={sum(entries.values())}\n"
        )
        return (header + "".join(lines)).encode()


PIECES = [b":", b"=", b"\n", b" ", b"\r", b"\t", b"0", b"1", b"9", b"-", b"+", b"_", b"C"]
PIECES += [b"\xc3\xa9", b"\xff", b"\xc3", b"\x00", "\u3000".encode(), "١".encode(), b"\r\n"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A pool file with a few bytes or lines inserted, deleted, replaced, repeated or moved."""
    data = draw(pools())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        lines = data.split(b"\n")
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["insert", "delete", "replace", "repeat", "swap", "number"]))
        if how == "insert":
            data = data[:at] + draw(st.sampled_from(PIECES)) + data[at:]
        elif how == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 3)) :]
        elif how == "replace":
            data = data[:at] + draw(st.sampled_from(PIECES)) + data[at + 1 :]
        elif how == "repeat":
            data = b"\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
        elif how == "swap":
            lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        else:  # a number anywhere: a count, the header's members, tickets or round
            digits = [m.span() for m in re.finditer(rb"[0-9]+", data)]
            if digits:
                a, b = draw(st.sampled_from(digits))
                new = draw(st.integers(0, 10**20) | st.integers(0, 40))
                data = data[:a] + draw(st.sampled_from([b"%d", b"0%d", b"+%d"])) % new + data[b:]
    return data


@settings(max_examples=300)
@given(pools())
@example(Pool.freeze("d", "t", {}).serialise())
# (whitespace at a card's or an id's edge: written by hand, a Pool refuses to hold it)
@example(
    "bonusd-pool-v1 draw=d tombola=t round=-7 members=2 tickets=3\n\tA:1\nB\u3000:2\n".encode()
)
@example(
    f"bonusd-pool-v1 draw=\tx tombola=t round=1 members=1 tickets={INT64_MAX}\nC1:{INT64_MAX}\n".encode()
)
def test_pool_files_of_every_shape_read_as_the_reference_reads_them(data: bytes) -> None:
    outcome = fast_outcome(data)
    event("refused" if outcome is None else "accepted")
    assert outcome == reference_outcome(data)


def refused_as_the_reference_refuses(data: bytes) -> None:
    outcome = fast_outcome(data)
    event("refused" if outcome is None else "accepted")
    assert outcome == reference_outcome(data)


# a few hundred damaged files in the default suite, as every fuzz test there; thousands in
# the deep run (`make test-slow`)
@settings(max_examples=400)
@given(mutated())
def test_damaged_pool_files_are_refused_exactly_when_the_reference_refuses(data: bytes) -> None:
    refused_as_the_reference_refuses(data)


@pytest.mark.slow
@settings(max_examples=3000)
@given(mutated())
def test_damaged_pool_files_are_refused_exactly_when_the_reference_refuses_deep(
    data: bytes,
) -> None:
    refused_as_the_reference_refuses(data)


def test_a_bench_sized_pool_file_reads_back_exactly() -> None:
    rng = np.random.default_rng(11)
    entries = {f"8{i:09d}": int(n) for i, n in enumerate(rng.integers(1, 40, 200_000))}
    pool = Pool.freeze("bench-draws.nightly", "pooled", entries)
    data = pool.serialise()
    assert fast_outcome(data) == reference_outcome(data) == facts(pool)
    late = data.replace(b"\n8000123456:", b"\n8000123456:0")  # one bad line deep inside
    with pytest.raises(AuditFormatError, match=r"line 123458 '8000123456:0\d+': .*leading zero"):
        parse_pool(late)


# -- named refusals ---------------------------------------------------------------------
VALID = Pool.freeze("gh-halfway", "main", {"C100": 1, "C200": 12, "C300": 3}).serialise()
HEAD = b"bonusd-pool-v1 draw=gh-halfway tombola=main round=1 members=3 tickets=16\n"
assert VALID == HEAD + b"C100:1\nC200:12\nC300:3\n"


def edit(old: bytes, new: bytes) -> bytes:
    assert old in VALID
    return VALID.replace(old, new, 1)


BIG = INT64_MAX
MALFORMED = {
    "empty file": (b"", "not a bonusd-pool-v1 file"),
    "other magic": (edit(b"pool-v1", b"pool-v2"), "not a bonusd-pool-v1 file"),
    "byte order mark": (b"\xef\xbb\xbf" + VALID, "not a bonusd-pool-v1 file"),
    "no LF at all": (HEAD[:-1], "line 1: the header does not end with LF"),
    "CRLF lines": (VALID.replace(b"\n", b"\r\n"), r"line 2 'C100:1\\r': the ticket count is not"),
    "last LF missing": (VALID[:-1], "line 4: the last line does not end with LF"),
    "blank line at the end": (VALID + b"\n", "line 5 '': not one card:tickets pair"),
    "blank line inside": (edit(b"\nC200", b"\n\nC200"), "line 3 '': not one card:tickets"),
    "no colon": (edit(b"C100:1", b"C100 1"), "line 2 'C100 1': not one card:tickets"),
    "two colons": (edit(b"C100:1", b"C1:00:1"), "line 2 'C1:00:1': not one card:tickets"),
    "empty card": (edit(b"C100:1", b":1"), "line 2 ':1': an empty card"),
    "no count": (edit(b"C100:1", b"C100:"), "line 2 'C100:': no ticket count"),
    "zero": (edit(b"C100:1", b"C100:0"), "line 2 'C100:0': a ticket count of 0 or with"),
    "leading zero": (edit(b"C200:12", b"C200:012"), "line 3 'C200:012': a ticket count of 0"),
    "plus sign": (edit(b"C100:1", b"C100:+1"), r"line 2 'C100:\+1': the ticket count is not a"),
    "minus sign": (edit(b"C100:1", b"C100:-1"), "the ticket count is not a decimal integer"),
    "space before": (edit(b"C100:1", b"C100: 1"), "the ticket count is not a decimal integer"),
    "space after": (edit(b"C100:1", b"C100:1 "), "the ticket count is not a decimal integer"),
    "underscore": (edit(b"C200:12", b"C200:1_2"), "the ticket count is not a decimal integer"),
    "arabic digit": (edit(b"C300:3", "C300:٣".encode()), "the ticket count is not a decimal"),
    "20 digits": (edit(b"C100:1", b"C100:" + b"1" * 20), "line 2 .*: the ticket count is too"),
    "20 nines": (edit(b"C100:1", b"C100:" + b"9" * 20), "line 2 .*: the ticket count is too"),
    "2**63": (edit(b"C100:1", b"C100:%d" % 2**63), "line 2 .*: the ticket count is too large"),
    "total over 2**63 - 1": (
        b"%s members=2 tickets=%d\nA:%d\nB:%d\n" % (HEAD.split(b" members")[0], 2 * BIG, BIG, BIG),
        "18446744073709551614 tickets in all: more than an int64 holds",
    ),
    "= in a card": (edit(b"C100:1", b"C=100:1"), "line 2 'C=100:1': '=' in the card"),
    "space in a card": (edit(b"C200:", b"C 200:"), "without spaces.*line 3: card 'C 200'"),
    "tab in a card": (edit(b"C300:", b"C3\t00:"), r"line 4: card 'C3\\t00'"),
    "space at a card's end": (edit(b"C200:", b"C200 :"), "line 3: card 'C200 '"),
    "tab at the first card's start": (edit(b"C100:", b"\tC100:"), r"line 2: card '\\tC100'"),
    "lines out of order": (
        HEAD + b"C200:12\nC100:1\nC300:3\n",
        "code-point order \\(line 3: 'C100' after 'C200'\\)",
    ),
    "a card twice": (
        HEAD.replace(b"3 tickets=16", b"4 tickets=28") + b"C100:1\nC200:12\nC200:12\nC300:3\n",
        "unique.*line 4: 'C200' after 'C200'",
    ),
    "members miscounted": (edit(b"members=3", b"members=4"), "header counts 'members=4' but"),
    "tickets miscounted": (edit(b"C200:12", b"C200:13"), "header counts 'tickets=16' but"),
    "round with a zero": (edit(b"round=1", b"round=01"), "header field 'round=01' is not canon"),
    "round not a number": (edit(b"round=1", b"round=x"), "header round='x' is not an integer"),
    "no round": (edit(b" round=1", b""), "the header has no round="),
    "field without =": (edit(b" round=1", b" round=1 x"), "header field 'x' is not name=value"),
    "extra field": (edit(b"=16\n", b"=16 z=1\n"), "header field 'z=1' after tickets="),
    "no tickets field": (edit(b" tickets=16", b""), "header ends before 'tickets=16'"),
    "fields swapped": (
        edit(b"draw=gh-halfway tombola=main", b"tombola=main draw=gh-halfway"),
        "header field 'tombola=main' is not canonical, expected 'draw=gh-halfway'",
    ),
    "two spaces": (edit(b"main round", b"main  round"), "header field '' is not name=value"),
    "colon in the draw id": (edit(b"gh-halfway", b"gh:halfway"), "every draw id and tombola"),
    "not UTF-8": (edit(b"C300", b"C\xff00"), "line 4: not UTF-8"),
    "not UTF-8 in the header": (edit(b"main", b"m\xffin"), "line 1: not UTF-8"),
}


@pytest.mark.parametrize(("data", "message"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_pool_files_are_refused_with_what_is_wrong(data: bytes, message: str) -> None:
    assert reference_outcome(data) is None  # the format forbids it: the reference agrees
    with pytest.raises(AuditFormatError, match=message):
        parse_pool(data)


def test_pool_cards_must_rise_strictly_in_code_point_order() -> None:
    one = np.ones(2, dtype=np.int64)
    for cards in [("A", "A"), ("B", "A"), ("a", "B"), ("é", "z")]:
        with pytest.raises(ValueError, match="unique and in code-point order"):
            Pool("d", "t", 1, cards, one.copy())
    assert Pool("d", "t", 1, ("B", "a"), one.copy()).cards == ("B", "a")


def test_an_ordered_pool_skips_only_the_card_checks_its_caller_vouches_for() -> None:
    """`ordered=True` (a RAPS pick's cards, from the floor mirror's checked, sorted columns)
    skips the order and card checks and nothing else."""
    one = np.ones(2, dtype=np.int64)
    assert Pool("d", "t", 1, ("B", "A"), one.copy(), ordered=True).cards == ("B", "A")
    with pytest.raises(ValueError, match="one ticket count"):
        Pool("d", "t", 1, ("A",), one.copy(), ordered=True)
    with pytest.raises(ValueError, match="draw id and tombola"):
        Pool("d:1", "t", 1, ("A", "B"), one.copy(), ordered=True)
    with pytest.raises(ValueError, match="unique and in code-point order"):
        Pool("d", "t", 1, ("B", "A"), one.copy())  # the default checks them


@pytest.mark.parametrize("card", [" A", "A ", "A\u00a0", "A\r", "\x1cA", "A:1", "A=1", ""])
def test_a_card_a_pool_file_cannot_hold_is_refused_wherever_it_is(card: str) -> None:
    """Whitespace at either end of a card (or of the pool's only card) too: a pool that
    could be written but not read back would leave its round unverifiable."""
    for cards in [(card,), (card, "Z"), ("0", card)]:
        if list(cards) != sorted(set(cards)):
            continue
        with pytest.raises(ValueError, match="non-empty, without spaces"):
            Pool("d", "t", 1, cards, np.ones(len(cards), dtype=np.int64))
    with pytest.raises(ValueError, match="non-empty, without spaces"):
        check_cards([card])


@given(st.lists(st.text(st.sampled_from("AaB\x00é€"), min_size=1, max_size=3), max_size=6))
def test_pool_order_check_is_sorted_and_unique(cards: list[str]) -> None:
    expected = cards == sorted(cards) and len(set(cards)) == len(cards)
    try:
        Pool("d", "t", 1, tuple(cards), np.ones(len(cards), dtype=np.int64))
    except ValueError:
        assert not expected
    else:
        assert expected
