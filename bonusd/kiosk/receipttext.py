"""A receipt as the text lines an 80 mm thermal printer prints (42 columns of font A): the
same lines go to ESC/POS (`bonusd.kiosk.printer`) and to the browser's print page, so the
paper and the screen never differ. Times are shown in the site's time zone. Pure.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from zoneinfo import ZoneInfo

from bonusd.kiosk.receipt import Receipt
from bonusd.registry.masking import STARS, mask_card

WIDTH = 42
SITE_ZONE = ZoneInfo("Africa/Johannesburg")
DOTS = "••••"  # the hidden part of the card, as printed


def when(at: dt.datetime, zone: dt.tzinfo) -> str:
    """`Sat 1 Mar 2025 20:00` in `zone`."""
    local = at.astimezone(zone)
    return f"{local:%a} {local.day} {local:%b %Y %H:%M}"


def ranges_text(ranges: tuple[tuple[int, int], ...]) -> str:
    """`1001–1010, 1050` (a range of one ticket as its number)."""
    return ", ".join(str(first) if first == last else f"{first}–{last}" for first, last in ranges)


def _wrapped(text: str, width: int, indent: str = "") -> list[str]:
    lines = textwrap.wrap(
        text, width=width, subsequent_indent=indent or "  ", break_on_hyphens=False
    )
    return lines or [""]


def _centred(text: str, width: int) -> list[str]:
    if not text.strip():
        return []
    return [line.center(width).rstrip() for line in _wrapped(text, width, " ")]


def _draw_lines(receipt: Receipt, width: int, zone: dt.tzinfo) -> list[str]:
    times = [when(at, zone) for at in receipt.draw_times]
    if len(times) == 1:
        return _wrapped(f"Draw: {times[0]}", width)
    return ["Draws:", *(f"  {text}" for text in times)] if times else []


def _member_lines(receipt: Receipt, width: int) -> list[str]:
    card = mask_card(receipt.card).replace(STARS, DOTS) or DOTS
    name = receipt.masked_name.strip()
    together = f"Member: {name}  card {card}" if name else f"Member: card {card}"
    if len(together) <= width:
        return [together]
    return [*_wrapped(f"Member: {name}", width), f"Card: {card}"]


def _ticket_lines(receipt: Receipt, width: int, zone: dt.tzinfo) -> list[str]:
    lines = [f"Tickets: {receipt.tickets:,}"]
    for part in receipt.breakdown:
        lines += _wrapped(f"  {part}", width, "    ")
    for tombola, ranges in receipt.tombola_tickets:
        lines += _wrapped(f"{tombola} tickets: {ranges_text(ranges)}", width)
    if receipt.activated_at is None:
        lines.append("No activation needed")
    else:
        lines += _wrapped(f"Activated: {when(receipt.activated_at, zone)}", width)
    return lines


def receipt_lines(
    receipt: Receipt,
    reprint: int,
    code: str,
    *,
    width: int = WIDTH,
    zone: dt.tzinfo = SITE_ZONE,
) -> list[str]:
    """The printed lines, none longer than `width`, the short `code` last; `zone` is the
    site's time zone (settings.zone)."""
    rule = "-" * width
    lines = [
        *_centred(receipt.casino, width),
        *_centred(receipt.promotion_name, width),
        *_centred(receipt.draw_name, width),
        *_draw_lines(receipt, width, zone),
        rule,
        *_member_lines(receipt, width),
        *_ticket_lines(receipt, width, zone),
        rule,
        *_wrapped(f"Kiosk: {receipt.kiosk}", width),
        f"Receipt no. {receipt.number}",
        f"{'First printed' if reprint > 0 else 'Printed'}: {when(receipt.printed_at, zone)}",
    ]
    if reprint > 0:
        lines.append(f"*** REPRINT {reprint} ***".center(width).rstrip())
    fitted = [
        part
        for line in lines
        for part in (_wrapped(line, width, "  ") if len(line) > width else [line])
    ]
    labelled = f"Code: {code}"
    return [*fitted, *([labelled] if len(labelled) <= width else ["Code:", code])]
