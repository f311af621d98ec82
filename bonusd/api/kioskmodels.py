"""What the kiosk and receipt routes (`bonusd.api.kiosk`) take and answer: a card at a
kiosk, its PIN, a printed receipt, a receipt check at a claim, a receipt looked up by the
desk. The player's view itself is `bonusd.api.playermodels.PlayerViewOut`."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bonusd.errors import ReceiptCodeError
from bonusd.kiosk.desk import Printed
from bonusd.kiosk.receipt import Check, Receipt, parse_code
from bonusd.kiosk.store import Print
from bonusd.registry.masking import STARS, mask_card

# a card reader types digits (a keyboard wedge): letters, spaces or controls are no card
KioskCard = Annotated[
    str,
    Field(
        pattern=r"^[0-9]{4,32}$",
        description="The card number as the reader types it: 4 to 32 digits",
        examples=["7000001234"],
    ),
]
Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,79}$")]
Verdict = Literal["valid", "other_member", "other_draw", "other_site", "forged"]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VisitIn(_In):
    card: KioskCard


class VisitOut(BaseModel):
    visit: str = Field(description="Send it back as the X-Kiosk-Visit header; ends on its own")
    needs_pin: bool
    expires_in_s: int


class VisitEndOut(BaseModel):
    ended: bool


class PinIn(_In):
    pin: Annotated[str, Field(pattern=r"^[0-9]{4,8}$", description="4 to 8 digits")]


class PinOut(BaseModel):
    ok: bool


class PrintIn(_In):
    promotion: Slug
    draw: Slug


class TombolaTicketsOut(BaseModel):
    tombola: str
    ranges: list[tuple[int, int]]  # first and last ticket number, inclusive


class ReceiptFieldsOut(BaseModel):
    number: int
    casino: str
    promotion: str
    promotion_name: str
    draw: str
    draw_name: str
    draw_times: list[dt.datetime]
    masked_name: str
    card_last4: str
    tickets: int
    breakdown: list[str]
    activated_at: dt.datetime | None
    printed_at: dt.datetime  # the original print's time
    kiosk: str
    tombola_tickets: list[TombolaTicketsOut]


class ReceiptOut(ReceiptFieldsOut):
    """A receipt as printed now: `reprint` 0 is the original, n the n-th reprint."""

    reprint: int
    prints: int
    code: str  # the short code a crew member can type
    qr: str  # the QR code's payload
    qr_svg: str  # the QR code as an SVG data URI, for the browser's print
    lines: list[str]  # the receipt's text, line by line, as the printer prints it
    printed_to: Literal["browser", "printer"]


class PrintOut(BaseModel):
    reprint: int
    at: dt.datetime
    kiosk: str


class ReceiptCheckRowOut(BaseModel):
    at: dt.datetime
    draw: str
    claim: int
    verdict: Verdict
    by: str


class ReceiptRecordOut(ReceiptFieldsOut):
    """A receipt as the desk looks it up: its prints and the checks made at claims."""

    card: str
    prints: list[PrintOut]
    checks: list[ReceiptCheckRowOut]


class ReceiptCheckIn(_In):
    code: Annotated[
        str,
        Field(
            min_length=1,
            max_length=512,
            description="The receipt's short code as typed, or its QR code's text as scanned",
        ),
    ]

    @field_validator("code")
    @classmethod
    def _a_receipt_code(cls, value: str) -> str:
        """Text that is no receipt code at all is refused (422) here, saying what is wrong;
        a well-formed code is checked against the receipts, and recorded."""
        try:
            parse_code(value)
        except ReceiptCodeError as exc:
            raise ValueError(str(exc)) from None
        return value


class ReceiptCheckOut(BaseModel):
    verdict: Verdict
    message: str
    number: int | None
    reprint: int | None
    prints: int | None


def fields_of(receipt: Receipt) -> dict[str, object]:
    return {
        "number": receipt.number,
        "casino": receipt.casino,
        "promotion": receipt.promotion,
        "promotion_name": receipt.promotion_name,
        "draw": receipt.draw,
        "draw_name": receipt.draw_name,
        "draw_times": list(receipt.draw_times),
        "masked_name": receipt.masked_name,
        "card_last4": mask_card(receipt.card).removeprefix(STARS),  # as the kiosk shows it
        "tickets": receipt.tickets,
        "breakdown": list(receipt.breakdown),
        "activated_at": receipt.activated_at,
        "printed_at": receipt.printed_at,
        "kiosk": receipt.kiosk,
        "tombola_tickets": [
            TombolaTicketsOut(tombola=name, ranges=list(ranges))
            for name, ranges in receipt.tombola_tickets
        ],
    }


def receipt_out(printed: Printed) -> ReceiptOut:
    return ReceiptOut.model_validate(
        fields_of(printed.receipt)
        | {
            "reprint": printed.reprint,
            "prints": printed.prints,
            "code": printed.code,
            "qr": printed.qr,
            "qr_svg": printed.qr_svg,
            "lines": printed.lines,
            "printed_to": printed.printed_to,
        }
    )


def record_out(
    receipt: Receipt, prints: list[Print], checks: list[dict[str, object]]
) -> ReceiptRecordOut:
    return ReceiptRecordOut.model_validate(
        fields_of(receipt)
        | {
            "card": receipt.card,
            "prints": [PrintOut(reprint=p.reprint, at=p.at, kiosk=p.kiosk) for p in prints],
            "checks": checks,
        }
    )


def check_out(found: Check) -> ReceiptCheckOut:
    return ReceiptCheckOut(
        verdict=found.verdict.value,
        message=found.message,
        number=found.number,
        reprint=found.reprint,
        prints=found.prints,
    )
