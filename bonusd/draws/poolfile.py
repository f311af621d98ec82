"""Reading an archived pool file (`fairness.Pool.serialise()` form, docs/fairness.md
section 2) fast and strictly: a 1,000,000-ticket round has 200,000 lines, checked at
once with numpy, and anything off the canonical form is refused naming its line."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bonusd.draws.fairness import POOL_MAGIC, Pool, bad_token
from bonusd.errors import AuditFormatError

_INT64_MAX = 2**63 - 1
_MAX_DIGITS = 19  # of a ticket count; 19 nines still fit the uint64 it is read into


def parse_pool(data: bytes) -> Pool:
    """Read an archived pool file; it must be exactly `Pool.serialise()` of its content.

    Accepts exactly what reading it line by line, building the pool and comparing its
    `serialise()` with the file accepts, and returns the same pool
    (tests/audit/test_audit_pool_file.py holds it to that reference), but checks the lines
    with numpy (a 1,000,000-ticket round has 200,000 of them) and takes the commitment from
    the file's bytes. A refusal names
    the first problem and its line (the header is line 1). Totals beyond an int64 are refused.
    """
    try:
        return _read_pool(data)
    except ValueError as exc:  # UnicodeDecodeError is one
        raise AuditFormatError(f"pool file: {exc}") from exc


def header_fields(header: str) -> list[str]:
    """The fields after the magic of a pool file's header line (without its LF);
    `ValueError` naming the first problem: not a pool file, a field not `name=value`, no
    `draw=`, `tombola=` or `round=`. (Whether they are canonical is `parse_pool`'s.)"""
    magic, *fields = header.split(" ")
    if magic != POOL_MAGIC:
        raise ValueError(f"not a {POOL_MAGIC} file")
    if bad := [f for f in fields if "=" not in f]:
        raise ValueError(f"header field {bad[0]!r} is not name=value")
    named = {f.split("=", 1)[0] for f in fields}
    if missing := [name for name in ("draw", "tombola", "round") if name not in named]:
        raise ValueError(f"the header has no {missing[0]}=")
    return fields


def _read_pool(data: bytes) -> Pool:
    if not data.startswith(f"{POOL_MAGIC} ".encode()):
        raise ValueError(f"not a {POOL_MAGIC} file")
    try:
        header, newline, text = data.decode().partition("\n")
    except UnicodeDecodeError as exc:
        raise ValueError(f"line {data.count(10, 0, exc.start) + 1}: not UTF-8") from exc
    if not newline:
        raise ValueError("line 1: the header does not end with LF")
    fields = header_fields(header)
    meta = dict(f.split("=", 1) for f in fields)
    tickets, total = _ticket_counts(data[data.index(b"\n") + 1 :])
    try:
        draw_id, tombola, round_no = meta["draw"], meta["tombola"], int(meta["round"])
    except ValueError:
        raise ValueError(f"header round={meta['round']!r} is not an integer") from None
    canonical = [f"draw={draw_id}", f"tombola={tombola}", f"round={round_no}"]
    canonical += [f"members={len(tickets)}", f"tickets={total}"]
    for got, want in itertools.zip_longest(fields, canonical):
        if got == want:
            continue
        if want is None or got is None:
            raise ValueError(
                f"header ends before {want!r}"
                if got is None
                else f"header field {got!r} after tickets="
            )
        if want.startswith(("members=", "tickets=")):
            raise ValueError(f"header counts {got!r} but the lines give {want!r}")
        raise ValueError(f"header field {got!r} is not canonical, expected {want!r}")
    cards = tuple(text.replace(":", "\n").split("\n")[0:-1:2])  # one ':' per line: checked
    try:
        pool = Pool(draw_id, tombola, round_no, cards, tickets)
    except ValueError as exc:
        raise ValueError(f"{exc}{_card_problem(str(exc), cards)}") from None
    # data is now known to be pool.serialise(): fill the cached commitment from it
    pool.__dict__["commitment"] = hashlib.sha256(data).hexdigest()
    return pool


def _ticket_counts(body: bytes) -> tuple[npt.NDArray[np.int64], int]:
    """The ticket count of each `card:tickets` line, all lines checked at once: one ':',
    a non-empty card without '=', a decimal integer >= 1 without leading zeros."""
    raw = np.frombuffer(body, dtype=np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    starts = np.concatenate(([0], ends + 1))[:-1]

    def check(wrong: npt.NDArray[np.bool_], what: str) -> None:
        if wrong.any():
            row = int(np.argmax(wrong))
            line = body[starts[row] : ends[row]].decode(errors="replace")
            raise ValueError(f"line {row + 2} {line!r}: {what}")

    if body and not body.endswith(b"\n"):
        raise ValueError(f"line {len(ends) + 2}: the last line does not end with LF")
    colons = np.flatnonzero(raw == ord(":"))
    lines_of = np.bincount(np.searchsorted(ends, colons), minlength=len(ends))
    check(lines_of != 1, "not one card:tickets pair (one ':' per line)")
    check(colons == starts, "an empty card")
    digits = ends - colons - 1
    check(digits == 0, "no ticket count")
    check(digits > _MAX_DIGITS, "the ticket count is too large")
    check(raw[colons + 1] == ord("0"), "a ticket count of 0 or with a leading zero")
    counts, wrong = np.zeros(len(ends), dtype=np.uint64), np.zeros(len(ends), dtype=np.bool_)
    # place 0 is each count's last digit, place 1 the one before it, and so on
    for place in range(int(digits.max(initial=0))):
        has, digit = digits > place, raw[np.maximum(ends - 1 - place, 0)] - np.uint8(ord("0"))
        wrong |= has & (digit > 9)
        counts += np.where(has, digit, 0).astype(np.uint64) * np.uint64(10**place)
    check(wrong, "the ticket count is not a decimal integer")
    check(counts > _INT64_MAX, "the ticket count is too large")
    equals = np.flatnonzero(raw == ord("="))
    check(np.bincount(np.searchsorted(ends, equals), minlength=len(ends)) > 0, "'=' in the card")
    tickets = counts.astype(np.int64)
    total = int(tickets.sum())
    if len(tickets) and int(tickets.max()) > _INT64_MAX // len(tickets):  # may overflow
        total = sum(tickets.tolist())
        if total > _INT64_MAX:
            raise ValueError(f"{total} tickets in all: more than an int64 holds")
    return tickets, total


def _card_problem(error: str, cards: Sequence[str]) -> str:
    """Where `Pool` found fault with the cards: the first out of order, or the first card
    a pool file cannot hold (empty, whitespace anywhere, ':', '=')."""
    if "order" in error:
        index = next(k for k in range(1, len(cards)) if not cards[k - 1] < cards[k])
        return f" (line {index + 2}: {cards[index]!r} after {cards[index - 1]!r})"
    if "card" not in error:
        return ""
    found = next((k for k, card in enumerate(cards) if not card or bad_token(card)), None)
    return "" if found is None else f" (line {found + 2}: card {cards[found]!r})"
