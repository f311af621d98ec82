"""Building and publishing telemetry in tests: contract v1 (`event`, `game`, `rating`,
each with a fresh id) and v2 (`sequenced`, identified by the device's epoch and seq)."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from simulators.local.services import LocalMosquitto

_ids = itertools.count(1)


def event(kind: str, card: str, ts: dt.datetime, **fields: Any) -> dict[str, Any]:
    """One event with a fresh unique id; `fields` adds or overrides fields."""
    body: dict[str, Any] = {
        "id": f"ev-{next(_ids)}",
        "type": kind,
        "ts": ts.isoformat(timespec="milliseconds"),
        "card": card,
    }
    body.update(fields)
    return body


def sequenced(
    kind: str, card: str, ts: dt.datetime, epoch: str, seq: int, **fields: Any
) -> dict[str, Any]:
    """One contract v2 event: `epoch` and `seq` in place of an id; `fields` as `event`'s."""
    body = event(kind, card, ts, **fields)
    del body["id"]
    return {"epoch": epoch, "seq": seq, **body}


def game(card: str, ts: dt.datetime, wager: int, points: int, win: int = 0) -> dict[str, Any]:
    return event("game", card, ts, wager_cents=wager, win_cents=win, points=points)


def rating(kind: str, card: str, ts: dt.datetime, seat: int, **fields: Any) -> dict[str, Any]:
    body = {"seat": seat, "avg_bet_cents": 5000, **fields}
    if kind != "rating_start":
        body.setdefault("wager_cents", 0)
        body.setdefault("points", 0)
    return event(kind, card, ts, **body)


class Publisher:
    """A blocking paho publisher (QoS 1) for tests; `publish` waits for the broker's ack."""

    def __init__(self, broker: LocalMosquitto, site: str) -> None:
        self.site = site
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="")
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()

    def topic(self, kind: str, device: str) -> str:
        return f"bonusd/{self.site}/{kind}/{device}/events"

    def send(self, topic: str, payload: bytes | str | dict[str, Any]) -> None:
        data = json.dumps(payload) if isinstance(payload, dict) else payload
        self.client.publish(topic, data, qos=1).wait_for_publish(10)

    def egm(self, device: str, *events: dict[str, Any]) -> int:
        for e in events:
            self.send(self.topic("egm", device), e)
        return len(events)

    def table(self, device: str, *events: dict[str, Any]) -> int:
        for e in events:
            self.send(self.topic("table", device), e)
        return len(events)

    def close(self) -> None:
        # disconnect first: it wakes the network thread, which loop_stop() otherwise
        # waits for until its 1 s select times out
        self.client.disconnect()
        self.client.loop_stop()
