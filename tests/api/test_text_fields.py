"""Free text and ids in request bodies: a proxy's name, an exclusion's note, an ID
document number, a card, a tombola, a pool hash. Control, line-separator and
text-direction characters, markup and over-long values are refused with 422 naming the
field, before any route acts (bonusd/api/fields.py); ordinary names and notes pass."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.daemon_helpers import Daemon

DRAW = "/promotions/no-such-promotion/draws/no-such-draw"
HOSTILE_TEXT = {
    "right-to-left override": "Anna \u202e",
    "escape sequence": "\x1b[2J\x1b]0;owned\x07",
    "newline": "line one\nline two",
    "line separator": "a\u2028b",
    "lone surrogate": "\ud800",
}


def _field_of(answer: dict[str, Any]) -> list[str]:
    return [str(e["loc"][-1]) for e in answer["detail"]]


async def _post(daemon: Daemon, path: str, body: dict[str, Any]) -> httpx.Response:
    """JSON with escapes (ASCII only), so a lone surrogate travels as a client may send it."""
    headers = {"Content-Type": "application/json"}
    return await daemon.http.post(path, content=json.dumps(body), headers=headers)


@pytest.mark.parametrize("text", HOSTILE_TEXT.values(), ids=HOSTILE_TEXT.keys())
async def test_hostile_names_and_notes_are_refused(daemon: Daemon, text: str) -> None:
    proxy = await _post(
        daemon, f"{DRAW}/proxies", {"card": "1001", "proxy_id": "8001015009087", "name": text}
    )
    assert proxy.status_code == 422, proxy.text
    assert _field_of(proxy.json()) == ["name"]
    note = await _post(daemon, f"{DRAW}/exclusions", {"card": "1001", "note": text})
    assert note.status_code == 422, note.text
    assert _field_of(note.json()) == ["note"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/proxies", {"card": "1001", "proxy_id": "80\x0001", "name": "B"}, "proxy_id"),
        ("/proxies", {"card": "<script>", "proxy_id": "8001015009087"}, "card"),
        ("/proxies", {"card": "1001", "proxy_id": "x" * 40}, "proxy_id"),
        ("/claims/1/present", {"proxy_id": "\u202e123"}, "proxy_id"),
        ("/exclusions", {"card": "1001\n", "note": ""}, "card"),
        ("/exclusions", {"card": "1001", "note": "n" * 201}, "note"),
        ("/tickets", {"tombola": "pooled\u202e", "number": 3}, "tombola"),
        ("/tickets", {"tombola": "pooled", "number": 3, "pool": "<b>"}, "pool"),
        ("/prizes", {"tombola": "POOLED;", "round": 1, "values_cents": [100]}, "tombola"),
    ],
)
async def test_ids_out_of_their_pattern_are_refused(
    daemon: Daemon, path: str, body: dict[str, Any], field: str
) -> None:
    answer = await daemon.http.post(DRAW + path, json=body)
    assert answer.status_code == 422, answer.text
    assert field in _field_of(answer.json())


async def test_a_card_in_an_activation_or_a_decline_keeps_its_pattern(daemon: Daemon) -> None:
    activation = await daemon.http.post(
        "/promotions/no-such-promotion/draws/no-such-draw/activations",
        json={"card": "1001\u202e", "channel": "kiosk"},
    )
    assert activation.status_code == 422, activation.text
    decline = await daemon.http.post(
        "/promotions/no-such-promotion/jackpots/no-such-session/declines",
        json={"card": "../1001"},
    )
    assert decline.status_code == 422, decline.text


async def test_ordinary_names_notes_and_document_numbers_pass_the_fields(daemon: Daemon) -> None:
    """Accents, apostrophes, hyphens, a no-break space: past the fields, to the route
    (which then answers that the promotion does not run here)."""
    proxy = await daemon.http.post(
        f"{DRAW}/proxies",
        json={"card": "1001", "proxy_id": "M 1234/56-7", "name": "Zoë O'Neil-Nkosi\u00a0Jr"},
    )
    assert proxy.status_code == 404, proxy.text
    note = await daemon.http.post(
        f"{DRAW}/exclusions", json={"card": "1001", "note": "asked at the desk — self-exclusion"}
    )
    assert note.status_code == 404, note.text
