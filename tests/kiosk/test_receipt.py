"""The receipt's MAC, codes and check (`bonusd.kiosk.receipt`) and the site's receipt key
file (`bonusd.kiosk.receiptkey`): a code checks only against its own receipt, reprint and
site key; any altered field is FORGED; garbage never crashes the parser."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bonusd.errors import ReceiptCodeError, ReceiptKeyError
from bonusd.kiosk.receipt import (
    CROCKFORD,
    QR_MAX_CHARS,
    Presented,
    Receipt,
    Verdict,
    check,
    mac,
    parse_code,
    qr_payload,
    short_code,
)
from bonusd.kiosk.receiptkey import load_receipt_key
from tests.kiosk.receipt_helpers import KEY, RECEIPT, make_receipt


def verdict_of(code: str, stored: Receipt | None, prints: int = 3, **claim: str) -> Verdict:
    claim = {"card": RECEIPT.card, "promotion": RECEIPT.promotion, "draw": RECEIPT.draw} | claim
    site = claim.pop("site", RECEIPT.site)
    return check(KEY, site, parse_code(code), stored, prints, **claim).verdict


# -- the MAC'd fields ----------------------------------------------------------------------

slugs = st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True)
changes = st.one_of(
    st.tuples(st.just("site"), slugs),
    st.tuples(st.just("promotion"), slugs),
    st.tuples(st.just("draw"), slugs),
    st.tuples(st.just("card"), st.from_regex(r"[A-Za-z0-9-]{1,32}", fullmatch=True)),
    st.tuples(st.just("tickets"), st.integers(0, 10**9)),
    st.tuples(st.just("number"), st.integers(1, 10**9)),
    st.tuples(
        st.just("printed_at"),
        st.integers(-(10**8), 10**8)
        .filter(lambda seconds: seconds != 0)
        .map(lambda seconds: RECEIPT.printed_at + dt.timedelta(seconds=seconds)),
    ),
)


@given(change=changes, reprint=st.integers(0, 2), qr=st.booleans())
def test_any_change_to_a_macd_field_is_forged(
    change: tuple[str, object], reprint: int, qr: bool
) -> None:
    name, value = change
    altered = make_receipt(**{name: value})
    if altered == RECEIPT:
        return
    make = qr_payload if qr else short_code
    expected = {Verdict.FORGED, Verdict.OTHER_SITE} if qr and name == "site" else {Verdict.FORGED}
    # the site keeps `altered` and the code was made for RECEIPT, or the other way round
    for stored, made_for in ((altered, RECEIPT), (RECEIPT, altered)):
        presented = parse_code(make(KEY, made_for, reprint))
        claim = {"card": stored.card, "promotion": stored.promotion, "draw": stored.draw}
        result = check(KEY, stored.site, presented, stored, 3, **claim)
        assert result.verdict in expected, (name, value, result)


@given(shown=st.integers(0, 50), printed=st.integers(0, 2))
def test_a_changed_reprint_is_forged(shown: int, printed: int) -> None:
    code = parse_code(short_code(KEY, RECEIPT, printed))
    altered = dataclasses.replace(code, reprint=shown)
    result = check(
        KEY,
        "gold-reef",
        altered,
        RECEIPT,
        60,
        card=RECEIPT.card,
        promotion=RECEIPT.promotion,
        draw=RECEIPT.draw,
    )
    assert result.verdict is (Verdict.VALID if shown == printed else Verdict.FORGED)


@given(other=st.binary(min_size=32, max_size=32))
def test_a_receipt_checks_only_with_its_own_site_key(other: bytes) -> None:
    for make in (short_code, qr_payload):
        code = make(other, RECEIPT, 0)
        expected = Verdict.VALID if other == KEY else Verdict.FORGED
        assert verdict_of(code, RECEIPT) is expected


def test_fields_outside_the_mac_do_not_matter() -> None:
    stored = make_receipt(casino="Other", draw_name="X", kiosk="k9", breakdown=(), masked_name="")
    assert verdict_of(short_code(KEY, RECEIPT, 0), stored) is Verdict.VALID


def test_the_mac_covers_the_time_to_the_second_in_utc() -> None:
    same_instant = make_receipt(printed_at=RECEIPT.printed_at.astimezone(dt.UTC))
    assert mac(KEY, same_instant, 0) == mac(KEY, RECEIPT, 0)
    assert make_receipt(printed_at=RECEIPT.printed_at.replace(microsecond=999)) == RECEIPT
    assert len(mac(KEY, RECEIPT, 0)) == 52 and set(mac(KEY, RECEIPT, 0)) <= set(CROCKFORD)
    with pytest.raises(ReceiptKeyError):
        mac(b"short", RECEIPT, 0)


# -- verdicts ------------------------------------------------------------------------------


def test_verdicts_in_plain_words() -> None:
    code, qr = short_code(KEY, RECEIPT, 0), qr_payload(KEY, RECEIPT, 2)
    claim = {"card": RECEIPT.card, "promotion": RECEIPT.promotion, "draw": RECEIPT.draw}
    result = check(KEY, "gold-reef", parse_code(code), RECEIPT, 1, **claim)
    assert (result.verdict, result.message) == (Verdict.VALID, "valid — original (1 printed)")
    assert (result.number, result.reprint, result.prints) == (123, 0, 1)
    result = check(KEY, "gold-reef", parse_code(qr), RECEIPT, 3, **claim)
    assert result.message == "valid — reprint 2 of 3 printed"
    result = check(KEY, "gold-reef", parse_code(qr), RECEIPT, 2, **claim)
    assert (
        result.verdict is Verdict.FORGED and "printed twice; reprint 2 never was" in result.message
    )
    assert verdict_of(code, RECEIPT, card="6001009999999") is Verdict.OTHER_MEMBER
    result = check(KEY, "gold-reef", parse_code(code), RECEIPT, 1, **(claim | {"draw": "finale"}))
    assert result.verdict is Verdict.OTHER_DRAW
    assert result.message == "a receipt of another draw (Launch draw)"
    result = check(KEY, "gold-reef", parse_code(code), None, 0, **claim)
    assert result.verdict is Verdict.FORGED and "no receipt number 123" in result.message
    assert result.prints is None
    result = check(KEY, "emperors", parse_code(qr), RECEIPT, 3, **claim)
    assert result.verdict is Verdict.OTHER_SITE and "gold-reef" in result.message


def test_a_qr_whose_details_were_edited_is_forged() -> None:
    qr = qr_payload(KEY, RECEIPT, 0)
    assert verdict_of(qr.replace("|25|", "|250|"), RECEIPT) is Verdict.FORGED
    assert verdict_of(qr.replace("|launch|", "|finale|"), RECEIPT) is Verdict.FORGED


# -- the codes -----------------------------------------------------------------------------


def test_short_code_shape_and_forgiving_typing() -> None:
    code = short_code(KEY, RECEIPT, 1)
    head, reprint, *groups = code.split("-")
    assert head == "R123" and reprint == "1" and [len(g) for g in groups] == [4, 4, 4, 4]
    typed = code.lower().replace("-", " ").replace("0", "o").replace("1", "l")
    typed = "r123 1" + typed[len("r123 l") :]
    assert parse_code(f"  {typed}\r\n") == parse_code(code)
    assert verdict_of(typed, RECEIPT) is Verdict.VALID


def test_the_qr_never_holds_the_card_and_fits_200_characters() -> None:
    qr = qr_payload(KEY, RECEIPT, 0)
    assert RECEIPT.card not in qr and RECEIPT.card[-4:] not in qr
    longest = make_receipt(
        site="s" * 32, promotion="p" * 64, draw="d" * 64, number=10**11, tickets=10**11
    )
    long_qr = qr_payload(KEY, longest, 9999)
    assert len(long_qr) <= QR_MAX_CHARS
    presented = parse_code(long_qr)
    assert presented.promotion is None and presented.draw is None
    assert (
        check(
            KEY,
            "s" * 32,
            presented,
            longest,
            10**4,
            card=longest.card,
            promotion=longest.promotion,
            draw=longest.draw,
        ).verdict
        is Verdict.VALID
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no receipt code"),
        ("hello", "expected R<number>"),
        ("x" * 513, "at most 512"),
        ("R123-0-ABCD\x00-ABCD", "control character"),
        ("R123-0-ABCD-ABCD-ABCD-ABC", "has 15 check characters"),
        ("R123-0-ABCD-ABCD-ABCD-ABCU", "'U' is not"),
        ("RX-0-ABCD-ABCD-ABCD-ABCD", "start R<number>"),
        ("R1-A-ABCD-ABCD-ABCD-ABCD", "reprint"),
        ("BR1|gold-reef|x", "3 fields"),
        ("BR1|Gold|a|b|1|20250301T160503Z|1|0|" + "A" * 26, "site field"),
        ("BR1|g|a|b|1|20251301T160503Z|1|0|" + "A" * 26, "not a date"),
    ],
)
def test_garbage_is_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(ReceiptCodeError, match=problem.replace("|", r"\|")):
        parse_code(text)


@given(
    text=st.one_of(
        st.text(max_size=600), st.binary(max_size=300).map(lambda raw: raw.decode("latin-1"))
    )
)
def test_garbage_never_crashes(text: str) -> None:
    try:
        presented = parse_code(text)
    except ReceiptCodeError:
        return
    assert isinstance(presented, Presented)
    assert verdict_of(text, RECEIPT) is not Verdict.VALID


@given(data=st.data(), qr=st.booleans(), reprint=st.integers(0, 2))
def test_a_truncated_or_altered_code_is_refused_or_forged(
    data: st.DataObject, qr: bool, reprint: int
) -> None:
    code = (qr_payload if qr else short_code)(KEY, RECEIPT, reprint)
    cut = data.draw(st.integers(0, len(code) - 1))
    at = data.draw(st.integers(0, len(code) - 1))
    char = data.draw(st.sampled_from(CROCKFORD + "abcxyz-|9"))
    altered = code[:at] + char + code[at + 1 :]
    for text in (code[:cut], altered):
        try:
            presented = parse_code(text)
        except ReceiptCodeError:
            continue
        if presented == parse_code(code):
            continue  # the same code typed another way (case, I/L/O)
        assert verdict_of(text, RECEIPT) in {Verdict.FORGED, Verdict.OTHER_SITE}, text


# -- the stored form -----------------------------------------------------------------------


def test_json_round_trip_and_validation() -> None:
    receipt = make_receipt(tombola_tickets=(("Red", ((1, 10), (15, 15))),), activated_at=None)
    assert Receipt.from_json(receipt.to_json()) == receipt
    assert Receipt.from_json(RECEIPT.to_json().encode()) == RECEIPT
    with pytest.raises(ValueError, match="damaged"):
        Receipt.from_json('{"site": "x"}')
    with pytest.raises(ValueError, match="timezone-aware"):
        make_receipt(printed_at=dt.datetime(2025, 3, 1, 18, 5))
    with pytest.raises(ValueError, match="invalid"):
        make_receipt(number=0)


# -- the key file --------------------------------------------------------------------------


def test_a_missing_key_file_is_made_once_0600_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "keys" / "receipt-key"
    with caplog.at_level(logging.WARNING, logger="bonusd.infra.keyfile"):
        key = load_receipt_key(path)
    assert (path.stat().st_mode & 0o777) == 0o600 and len(key) == 32
    assert "created a new receipt key" in caplog.text
    caplog.clear()
    assert load_receipt_key(path) == key
    assert "created" not in caplog.text


def test_daemons_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    path = tmp_path / "receipt-key"
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: load_receipt_key(path), range(16)))
    assert len(keys) == 1


def test_an_open_or_malformed_key_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "receipt-key"
    path.write_text(os.urandom(32).hex())
    path.chmod(0o640)
    with pytest.raises(ReceiptKeyError, match="chmod 600"):
        load_receipt_key(path)
    path.chmod(0o600)
    path.write_text("abc")
    with pytest.raises(ReceiptKeyError, match="64 hex characters"):
        load_receipt_key(path)
    path.write_text("zz" * 32)
    with pytest.raises(ReceiptKeyError, match="64 hex characters"):
        load_receipt_key(path)
