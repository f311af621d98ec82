"""A kiosk's printed receipt: the `Receipt` record (kept in Redis as JSON), its MAC under
the site's receipt key, the two forms a crew member presents at a claim (the typed short
code and the scanned QR payload), and the check of a presented code against the stored
receipt (docs/kiosk.md, "Receipts").

The MAC is HMAC-SHA256 over a canonical JSON array of what the receipt asserts: site,
promotion, draw, full card, tickets, the original print's time (UTC, to the second), the
site's receipt number and the reprint's index. Its Crockford base32 text is cut to 16
characters (80 bits) in the short code and 26 (130 bits) in the QR. The QR carries no
card number: anyone can scan paper. Pure: no I/O; the key comes from `receiptkey`.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import re
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from bonusd.errors import ReceiptCodeError, ReceiptKeyError

MAC_VERSION = "bonusd-receipt/1"
MIN_KEY_BYTES = 16
SHORT_MAC_CHARS = 16  # 80 bits
QR_MAC_CHARS = 26  # 130 bits
QR_PREFIX = "BR1"
QR_MAX_CHARS = 200
MAX_CODE_CHARS = 512
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_FROM_RFC4648 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", CROCKFORD)
_ALIASES = str.maketrans("OIL", "011")  # what a person types for 0 and 1
_TIME_FORMAT = "%Y%m%dT%H%M%SZ"
_SITE = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_NUMBER = re.compile(r"R?([0-9]{1,12})")
_REPRINT = re.compile(r"[0-9]{1,4}")
_COUNT = re.compile(r"[0-9]{1,12}")
_TIME = re.compile(r"[0-9]{8}T[0-9]{6}Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Receipt:
    """One printed receipt, as stored; reprints print the same record again.
    `printed_at` is the original print's time, kept to the second (what the MAC covers)."""

    site: str
    casino: str
    promotion: str
    promotion_name: str
    draw: str
    draw_name: str
    draw_times: tuple[dt.datetime, ...]  # the draw's rounds
    card: str  # full card: in the MAC; printed as its last 4 only
    masked_name: str  # as signage masks it (bonusd.registry.masking)
    tickets: int  # at print time
    breakdown: tuple[str, ...]  # plain-words lines ("+5 app bonus")
    activated_at: dt.datetime | None  # None: the draw needs no activation
    printed_at: dt.datetime
    kiosk: str  # the kiosk token's name
    number: int  # the site's receipt number, from 1
    tombola_tickets: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = field(default=())

    def __post_init__(self) -> None:
        times = (*self.draw_times, self.printed_at, self.activated_at)
        if any(at is not None and at.utcoffset() is None for at in times):
            raise ValueError("a receipt's times must be timezone-aware")
        if self.number < 1 or self.tickets < 0:
            raise ValueError(f"receipt number {self.number} / tickets {self.tickets} invalid")
        object.__setattr__(self, "printed_at", self.printed_at.replace(microsecond=0))

    def to_json(self) -> str:
        """The stored form (compact JSON, ISO 8601 times)."""
        data = asdict(self)
        data["draw_times"] = [at.isoformat() for at in self.draw_times]
        data["printed_at"] = self.printed_at.isoformat()
        data["activated_at"] = self.activated_at.isoformat() if self.activated_at else None
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Receipt:
        """The receipt `to_json` wrote; `ValueError` naming the problem for damaged data."""
        try:
            data: dict[str, Any] = json.loads(text)
            activated = data["activated_at"]
            return cls(
                site=str(data["site"]),
                casino=str(data["casino"]),
                promotion=str(data["promotion"]),
                promotion_name=str(data["promotion_name"]),
                draw=str(data["draw"]),
                draw_name=str(data["draw_name"]),
                draw_times=tuple(dt.datetime.fromisoformat(at) for at in data["draw_times"]),
                card=str(data["card"]),
                masked_name=str(data["masked_name"]),
                tickets=int(data["tickets"]),
                breakdown=tuple(str(line) for line in data["breakdown"]),
                activated_at=dt.datetime.fromisoformat(activated) if activated else None,
                printed_at=dt.datetime.fromisoformat(data["printed_at"]),
                kiosk=str(data["kiosk"]),
                number=int(data["number"]),
                tombola_tickets=tuple(
                    (str(name), tuple((int(first), int(last)) for first, last in ranges))
                    for name, ranges in data.get("tombola_tickets", ())
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"a stored receipt is damaged: {exc!r}") from None


def _utc_text(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime(_TIME_FORMAT)


def mac(key: bytes, receipt: Receipt, reprint: int) -> str:
    """HMAC-SHA256 of the receipt's asserted fields and `reprint`, as 52 Crockford base32
    characters (the codes carry a prefix of it)."""
    if len(key) < MIN_KEY_BYTES:
        raise ReceiptKeyError(f"a receipt key is at least {MIN_KEY_BYTES} bytes, not {len(key)}")
    fields = [
        MAC_VERSION,
        receipt.site,
        receipt.promotion,
        receipt.draw,
        receipt.card,
        receipt.tickets,
        _utc_text(receipt.printed_at),
        receipt.number,
        reprint,
    ]
    message = json.dumps(fields, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return base64.b32encode(digest).decode("ascii").rstrip("=").translate(_FROM_RFC4648)


def short_code(key: bytes, receipt: Receipt, reprint: int) -> str:
    """`R123-0-7K3M-9QXD-4T2P-ABCD`: number, reprint, 80 bits of the MAC in groups of four;
    typed back in any case, with I/L for 1 and O for 0, spaces for dashes."""
    check = mac(key, receipt, reprint)[:SHORT_MAC_CHARS]
    groups = "-".join(check[start : start + 4] for start in range(0, SHORT_MAC_CHARS, 4))
    return f"R{receipt.number}-{reprint}-{groups}"


def qr_payload(key: bytes, receipt: Receipt, reprint: int) -> str:
    """`BR1|site|promotion|draw|tickets|printed_at|number|reprint|MAC` (never the card),
    at most 200 characters: promotion and draw are left empty if they would not fit."""
    head = [QR_PREFIX, receipt.site, receipt.promotion, receipt.draw]
    tail = [
        str(receipt.tickets),
        _utc_text(receipt.printed_at),
        str(receipt.number),
        str(reprint),
        mac(key, receipt, reprint)[:QR_MAC_CHARS],
    ]
    payload = "|".join(head + tail)
    if len(payload) > QR_MAX_CHARS:
        payload = "|".join([QR_PREFIX, receipt.site, "", "", *tail])
    return payload


@dataclass(frozen=True, slots=True)
class Presented:
    """A code as presented: the short code carries number, reprint and MAC; the QR also
    site, tickets, print time and (when they fit) promotion and draw."""

    number: int
    reprint: int
    mac: str
    site: str | None = None
    promotion: str | None = None
    draw: str | None = None
    tickets: int | None = None
    printed_at: dt.datetime | None = None


def parse_code(text: str) -> Presented:
    """A typed short code or a scanned QR payload; `ReceiptCodeError` saying what is wrong."""
    if len(text) > MAX_CODE_CHARS:
        raise ReceiptCodeError(
            f"not a receipt code: {len(text)} characters, a code is at most {MAX_CODE_CHARS}"
        )
    text = text.strip()  # a scanner ends what it reads with Enter
    bad = _CONTROL.search(text)
    if bad:
        raise ReceiptCodeError(
            f"not a receipt code: it holds a control character at position {bad.start() + 1}"
        )
    if not text:
        raise ReceiptCodeError("no receipt code given: type the code under the receipt's QR")
    if text[:4].upper() == QR_PREFIX + "|":
        return _parse_qr(text)
    return _parse_short(text)


def _parse_short(text: str) -> Presented:
    shape = "R<number>-<reprint>-XXXX-XXXX-XXXX-XXXX"
    tokens = [token for token in re.split(r"[\s-]+", text.upper()) if token]
    if len(tokens) < 3:
        raise ReceiptCodeError(f"not a receipt code: expected {shape}, the code under the QR")
    number = _NUMBER.fullmatch(tokens[0])
    if not number:
        raise ReceiptCodeError(f"not a receipt code: it must start R<number>, as in {shape}")
    if not _REPRINT.fullmatch(tokens[1]):
        raise ReceiptCodeError(
            f"not a receipt code: after the number comes the reprint (0 for the original), "
            f"as in {shape}"
        )
    check = _check_chars("".join(tokens[2:]), SHORT_MAC_CHARS, "the code")
    return Presented(number=int(number.group(1)), reprint=int(tokens[1]), mac=check)


def _check_chars(text: str, length: int, what: str) -> str:
    check = text.upper().translate(_ALIASES)
    wrong = next((char for char in check if char not in CROCKFORD), None)
    if wrong is not None:
        raise ReceiptCodeError(
            f"not a receipt code: {wrong!r} is not a letter or digit of a receipt code"
        )
    if len(check) != length:
        raise ReceiptCodeError(
            f"not a receipt code: {what} has {len(check)} check characters, not {length} "
            "(a character missing or one too many)"
        )
    return check


def _parse_qr(text: str) -> Presented:
    names = ("", "site", "promotion", "draw", "tickets", "time", "number", "reprint", "MAC")
    parts = text.split("|")
    if len(parts) != len(names):
        raise ReceiptCodeError(
            f"not a receipt QR: {len(parts)} fields, a receipt QR has {len(names)} (damaged "
            "or cut short: scan it again or type the code under it)"
        )
    _, site, promotion, draw, tickets, printed, number, reprint, check = parts
    shapes = (
        ("site", site, _SITE),
        ("tickets", tickets, _COUNT),
        ("time", printed, _TIME),
        ("number", number, _COUNT),
        ("reprint", reprint, _REPRINT),
    )
    for name, value, pattern in shapes:
        if not pattern.fullmatch(value):
            raise ReceiptCodeError(f"not a receipt QR: its {name} field is malformed")
    for name, value in (("promotion", promotion), ("draw", draw)):
        if value and not _SLUG.fullmatch(value):
            raise ReceiptCodeError(f"not a receipt QR: its {name} field is malformed")
    try:
        at = dt.datetime.strptime(printed, _TIME_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        raise ReceiptCodeError("not a receipt QR: its time field is not a date") from None
    return Presented(
        number=int(number),
        reprint=int(reprint),
        mac=_check_chars(check, QR_MAC_CHARS, "the QR"),
        site=site,
        promotion=promotion or None,
        draw=draw or None,
        tickets=int(tickets),
        printed_at=at,
    )


class Verdict(StrEnum):
    """What a presented receipt is, for the claim at hand."""

    VALID = "valid"
    OTHER_MEMBER = "other_member"
    OTHER_DRAW = "other_draw"
    OTHER_SITE = "other_site"
    FORGED = "forged"


@dataclass(frozen=True, slots=True)
class Check:
    """A verdict in plain words, with the receipt's number, reprint and print count."""

    verdict: Verdict
    message: str
    number: int | None
    reprint: int | None
    prints: int | None


def _fields_differ(presented: Presented, stored: Receipt) -> bool:
    carried = (
        (presented.site, stored.site),
        (presented.promotion, stored.promotion),
        (presented.draw, stored.draw),
        (presented.tickets, stored.tickets),
        (presented.printed_at, stored.printed_at),
    )
    return any(shown is not None and shown != kept for shown, kept in carried)


def _times(count: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(count, f"{count} times")


def check(
    key: bytes,
    site: str,
    presented: Presented,
    stored: Receipt | None,
    prints: int,
    *,
    card: str,
    promotion: str,
    draw: str,
) -> Check:
    """The verdict on `presented` at a claim of `card` in (`promotion`, `draw`): `stored`
    is this site's receipt of the presented number (None: there is none), `prints` how
    many times it was printed (original included)."""
    number, reprint = presented.number, presented.reprint

    def verdict(kind: Verdict, message: str) -> Check:
        return Check(kind, message, number, reprint, prints if stored is not None else None)

    if presented.site is not None and presented.site != site:
        return Check(
            Verdict.OTHER_SITE,
            f"a receipt of another site ({presented.site}) — it proves nothing here",
            number,
            reprint,
            None,
        )
    if stored is None or stored.number != number:
        return verdict(Verdict.FORGED, f"forged — no receipt number {number} was printed here")
    expected = mac(key, stored, reprint)[: len(presented.mac)]
    if len(presented.mac) < SHORT_MAC_CHARS or not hmac.compare_digest(
        expected.encode("ascii"), presented.mac.encode("ascii")
    ):
        return verdict(
            Verdict.FORGED,
            f"forged — the code does not match receipt {number} as printed (altered or made up)",
        )
    if _fields_differ(presented, stored):
        return verdict(
            Verdict.FORGED, f"forged — the QR's details differ from receipt {number} as printed"
        )
    if reprint >= prints:
        return verdict(
            Verdict.FORGED,
            f"forged — receipt {number} was printed {_times(prints)}; reprint {reprint} never was",
        )
    if (stored.promotion, stored.draw) != (promotion, draw):
        return verdict(Verdict.OTHER_DRAW, f"a receipt of another draw ({stored.draw_name})")
    if stored.card != card:
        return verdict(Verdict.OTHER_MEMBER, "another member's receipt")
    if reprint == 0:
        return verdict(Verdict.VALID, f"valid — original ({prints} printed)")
    return verdict(Verdict.VALID, f"valid — reprint {reprint} of {prints} printed")
