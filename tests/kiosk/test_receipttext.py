"""A receipt's printed lines (`bonusd.kiosk.receipttext`): every field in plain words, site
time, never the full card, nothing wider than the paper, the short code last."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from bonusd.kiosk.receipt import short_code
from bonusd.kiosk.receipttext import receipt_lines
from tests.kiosk.receipt_helpers import KEY, RECEIPT, make_receipt


def test_the_lines_of_an_original() -> None:
    code = short_code(KEY, RECEIPT, 0)
    lines = receipt_lines(RECEIPT, 0, code)
    text = "\n".join(lines)
    assert [line.strip() for line in lines[:3]] == [
        "Gold Reef City Casino",
        "Winter Millions",
        "Launch draw",
    ]
    assert "Draw: Sat 1 Mar 2025 20:00" in lines
    assert "Member: T. M****  card ••••3456" in lines
    assert "Tickets: 25" in lines and "  +5 app bonus" in lines
    assert "Activated: Sat 1 Mar 2025 18:04" in lines
    assert "Kiosk: kiosk-3" in lines and "Receipt no. 123" in lines
    assert "Printed: Sat 1 Mar 2025 18:05" in lines
    assert "REPRINT" not in text and RECEIPT.card not in text
    assert lines[-1] == f"Code: {code}"


def test_a_reprint_with_tombola_ranges_and_no_activation() -> None:
    receipt = make_receipt(
        activated_at=None,
        draw_times=(
            dt.datetime(2025, 3, 1, 18, 0, tzinfo=dt.UTC),
            dt.datetime(2025, 3, 8, 18, 0, tzinfo=dt.UTC),
        ),
        tombola_tickets=(("Red", ((1001, 1010), (1050, 1050))),),
        tickets=12_345,
    )
    lines = receipt_lines(receipt, 2, short_code(KEY, receipt, 2))
    assert lines[lines.index("Draws:") + 1 : lines.index("Draws:") + 3] == [
        "  Sat 1 Mar 2025 20:00",
        "  Sat 8 Mar 2025 20:00",
    ]
    assert "No activation needed" in lines and "Tickets: 12,345" in lines
    assert "Red tickets: 1001–1010, 1050" in lines
    assert "*** REPRINT 2 ***" in [line.strip() for line in lines]
    assert "First printed: Sat 1 Mar 2025 18:05" in lines


def test_times_follow_the_zone_given() -> None:
    lines = receipt_lines(RECEIPT, 0, "R1", zone=ZoneInfo("UTC"))
    assert "Draw: Sat 1 Mar 2025 18:00" in lines


@given(
    width=st.integers(32, 64),
    name=st.text(min_size=0, max_size=120),
    kiosk=st.text(st.characters(categories=("L", "N")), min_size=1, max_size=80),
    breakdown=st.lists(st.text(max_size=150), max_size=4),
    reprint=st.integers(0, 40),
)
def test_nothing_is_wider_than_the_paper_and_the_code_is_last(
    width: int, name: str, kiosk: str, breakdown: list[str], reprint: int
) -> None:
    receipt = make_receipt(
        casino=name, promotion_name=name, kiosk=kiosk, breakdown=tuple(breakdown)
    )
    code = short_code(KEY, receipt, reprint)
    lines = receipt_lines(receipt, reprint, code, width=width)
    assert all(len(line) <= width for line in lines if line != code), lines
    assert lines[-1].endswith(code)
    assert receipt.card not in "\n".join(lines)
