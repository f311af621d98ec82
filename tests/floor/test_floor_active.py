"""`GET /floor/active` in pages: real sessions from telemetry over MQTT, read back whole
and with `limit`/`cursor`; the pages hold every active card exactly once, in card order,
and say where the next page starts until the last."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import SAST, Daemon
from tests.telemetry_helpers import Publisher, event, game, rating

EVENING = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)
DEVICES_CSV = "device,kind,area,bank,position\n" + "".join(
    f"EGM-{n},egm,{'main' if n % 2 else 'smoking'},B{n},{n}\n" for n in range(1, 8)
)


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


async def test_the_active_floor_in_pages_holds_every_card_once(
    daemon: Daemon, pub: Publisher
) -> None:
    r = await daemon.http.post(
        "/devices/import", content=DEVICES_CSV, headers={"content-type": "text/csv"}
    )
    assert r.status_code == 200, r.text
    t = EVENING
    sent = 0
    for n in range(1, 8):  # seven EGM players, one of them has played
        sent += pub.egm(f"EGM-{n}", event("card_in", f"50{n}", t + dt.timedelta(seconds=n)))
    sent += pub.egm("EGM-3", game("503", t + dt.timedelta(minutes=1), wager=100, points=1))
    sent += pub.table("T1", rating("rating_start", "901", t, seat=2))
    await daemon.wait_committed(sent)

    whole = await daemon.get("/floor/active?kind=egm")
    assert [a["card"] for a in whole] == [f"50{n}" for n in range(1, 8)]  # card order
    played = next(a for a in whole if a["card"] == "503")
    assert played["device"] == "EGM-3" and played["area"] == "main" and played["seat"] is None
    assert played["last_play"] is not None and played["since"] is not None

    pages, cursor = [], ""
    while True:
        response = await daemon.http.get(f"/floor/active?kind=egm&limit=3&cursor={cursor}")
        assert response.status_code == 200, response.text
        pages.append(response.json())
        cursor = response.headers.get("X-Next-Cursor", "")
        if not cursor:
            break
        assert cursor == pages[-1][-1]["card"]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [a for p in pages for a in p] == whole  # every card once, the same rows

    table = await daemon.get("/floor/active?kind=table&limit=5")
    assert [(a["card"], a["seat"]) for a in table] == [("901", 2)]
    assert (await daemon.http.get("/floor/active?limit=0")).status_code == 422
