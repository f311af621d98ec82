"""A receipt for the kiosk receipt tests (`test_receipt`, `test_receipttext`,
`test_printer`): the site key and a receipt with every field filled."""

from __future__ import annotations

import dataclasses
import datetime as dt

from bonusd.kiosk.receipt import Receipt

KEY = bytes(range(32))
SAST = dt.timezone(dt.timedelta(hours=2))


def make_receipt(**changes: object) -> Receipt:
    base = Receipt(
        site="gold-reef",
        casino="Gold Reef City Casino",
        promotion="winter-millions",
        promotion_name="Winter Millions",
        draw="launch",
        draw_name="Launch draw",
        draw_times=(dt.datetime(2025, 3, 1, 20, 0, tzinfo=SAST),),
        card="6001009123456",
        masked_name="T. M****",
        tickets=25,
        breakdown=("20 from slots play", "+5 app bonus"),
        activated_at=dt.datetime(2025, 3, 1, 18, 4, tzinfo=SAST),
        printed_at=dt.datetime(2025, 3, 1, 18, 5, 7, tzinfo=SAST),
        kiosk="kiosk-3",
        number=123,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


RECEIPT = make_receipt()
