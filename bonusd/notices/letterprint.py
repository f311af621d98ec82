"""The printable prize letter: one self-contained HTML page (no external files) with a
print stylesheet for A5 or A4, that the desk prints and hands to the verified winner.

It carries the letter number, the casino, promotion and draw, the winner's name and card
(`****3456`, never the full number), the prize, the issue date and the last day it can
be redeemed (the draw's `prize_letter_days`, 15 by default), and lines to sign. A letter
already redeemed or lapsed prints across its face that it is not payable. Pure.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

from bonusd.notices.announcements import local_date
from bonusd.promotions.terms import rands
from bonusd.registry.masking import mask_card

Paper = Literal["A5", "A4"]
_VOID = {"redeemed": "REDEEMED: a copy, not payable", "lapsed": "LAPSED: not payable"}
# the print button's one line of script, admitted by the pages' CSP by its hash (no inline
# event handler, which a CSP can only allow by allowing them all)
_PRINT_SCRIPT = 'document.getElementById("print").addEventListener("click",()=>window.print())'
PRINT_SCRIPT_HASH = (
    "sha256-" + base64.b64encode(hashlib.sha256(_PRINT_SCRIPT.encode()).digest()).decode()
)


@dataclass(frozen=True)
class LetterFacts:
    """What a printed letter says (from the draw's book and the member registry)."""

    number: str
    casino: str
    promotion: str
    draw: str
    claim: int
    winner_name: str  # "" when the card is not registered
    card: str  # the full card: only its masked form is printed
    prize: str  # the prize's label
    value_cents: int
    issued_at: dt.datetime
    expires_at: dt.datetime  # the instant it lapses (00:00 after its last day)
    state: str  # the claim's state: letter_issued, redeemed, lapsed
    zone: ZoneInfo


_STYLE = """
@page { size: %(paper)s portrait; margin: 12mm; }
* { box-sizing: border-box; }
body { font: 11pt/1.4 Georgia, "Times New Roman", serif; color: #000; margin: 0; }
main { max-width: %(width)s; margin: 0 auto; padding: 4mm; position: relative; }
header { text-align: center; border-bottom: 2px solid #000; padding-bottom: 3mm; }
header .casino { font-size: 16pt; font-weight: bold; letter-spacing: .05em; }
h1 { font-size: 20pt; margin: 4mm 0 1mm; letter-spacing: .15em; }
.number { font: bold 13pt monospace; }
dl { display: grid; grid-template-columns: 32mm 1fr; gap: 2mm 4mm; margin: 6mm 0; }
dt { font-weight: bold; }
dd { margin: 0; }
.prize { font-size: 16pt; font-weight: bold; }
.terms { font-size: 9pt; border-top: 1px solid #000; padding-top: 3mm; }
.signatures { display: grid; grid-template-columns: 1fr 1fr 1fr; gap: 6mm; margin-top: 14mm; }
.signatures div { border-top: 1px solid #000; font-size: 9pt; padding-top: 1mm; }
.void { position: absolute; top: 45%%; left: 0; right: 0; text-align: center;
  transform: rotate(-20deg); font: bold 22pt sans-serif; color: #b00;
  border: 4px solid #b00; padding: 2mm; opacity: .8; }
.tools { text-align: center; margin: 4mm; }
@media print { .tools { display: none; } }
"""


def letter_page(facts: LetterFacts, *, paper: Paper = "A5") -> str:
    """The letter as one HTML page, laid out for `paper` (A5 or A4, portrait)."""
    escape = html.escape
    zone = facts.zone
    issued = facts.issued_at.astimezone(zone)
    last_day = local_date(facts.expires_at - dt.timedelta(seconds=1), zone)
    value = rands(facts.value_cents)
    prize = value if facts.prize in ("", value, f"{value}.00") else f"{value} ({facts.prize})"
    void = _VOID.get(facts.state)
    style = _STYLE % {"paper": paper, "width": "124mm" if paper == "A5" else "170mm"}
    rows = [
        ("Winner", escape(facts.winner_name) or "(name not on file)"),
        ("Card", escape(mask_card(facts.card))),
        ("Prize", f'<span class="prize">{escape(prize)}</span>'),
        ("Draw", f"{escape(facts.draw)}, claim {facts.claim}"),
        ("Issued", escape(f"{local_date(issued, zone)} at {issued:%H:%M}")),
        ("Valid until", escape(f"{last_day} (end of day)")),
    ]
    fields = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>Prize letter {escape(facts.number)}</title><style>{style}</style></head><body>"
        '<div class="tools"><button id="print" type="button">Print</button></div><main>'
        + (f'<div class="void">{escape(void)}</div>' if void else "")
        + f'<header><div class="casino">{escape(facts.casino)}</div>'
        f"<div>{escape(facts.promotion)}</div><h1>PRIZE LETTER</h1>"
        f'<div class="number">No. {escape(facts.number)}</div></header>'
        f"<dl>{fields}</dl>"
        '<p class="terms">Redeemable for the prize above at the Cash Desk by the winner named '
        "here in person, on presentation of this letter and the winner's identity document, "
        f"until the end of {escape(last_day)}; after that it lapses. A proxy may not receive "
        "the prize. Prizes are not transferable and cannot be exchanged.</p>"
        '<div class="signatures"><div>Issued by (Tsogo Rewards Desk)</div>'
        "<div>Winner's signature</div><div>Paid by (Cash Desk), date</div></div>"
        f"</main><script>{_PRINT_SCRIPT}</script></body></html>"
    )
