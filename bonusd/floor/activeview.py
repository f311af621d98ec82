"""Who is active on the floor now, for `GET /floor/active`: a page of sessions in card
order, read in one server-side script (one reply instead of a command per player) and
encoded straight to JSON."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

import msgspec
from redis.asyncio import Redis

from bonusd.infra.keys import Keys

_FIELDS = 8  # card, kind, device, seat, area, since, last_play, last_seen


def _when(ms: str | None) -> str | None:
    epoch_ms = int(ms or 0)
    return dt.datetime.fromtimestamp(epoch_ms / 1000, dt.UTC).isoformat() if epoch_ms else None


@dataclass(frozen=True)
class ActivePage:
    """One page: the JSON body (a list of sessions) and the cursor of the next page
    (None when this one is the last)."""

    body: bytes
    count: int
    next_cursor: str | None


class ActiveFloor:
    """Reads of the active floor of one site."""

    def __init__(self, redis: Redis, keys: Keys) -> None:
        self._redis = redis
        self._keys = keys
        text = resources.files("bonusd").joinpath("lua", "active_page.lua").read_text("utf-8")
        self._page = redis.register_script(text)

    async def page(
        self,
        *,
        area: str | None = None,
        kind: str | None = None,
        limit: int = 0,
        cursor: str = "",
    ) -> ActivePage:
        """Active cards after `cursor` in card order, at most `limit` (0: all), optionally
        in one area and of one device kind."""
        index = cast(set[str], await self._redis.smembers(self._keys.active_index))
        wanted: list[str] = []
        for rel in sorted(index):
            _, set_kind, set_area = rel.split(":", 2)
            if (kind is None or set_kind == kind) and (area is None or set_area == area):
                wanted.append(rel)
        if not wanted:
            return ActivePage(b"[]", 0, None)
        reply = cast(
            list[str | None],
            # the key only routes the call to the site's shard of a Redis Cluster
            await self._page(
                keys=[self._keys.active_index],
                args=[self._keys.base, cursor, str(limit), *wanted],
            ),
        )
        rows: list[dict[str, Any]] = []
        for at in range(1, len(reply), _FIELDS):
            card, row_kind, device, seat, row_area, since, last_play, last_seen = reply[
                at : at + _FIELDS
            ]
            if row_kind is None:  # the session ended between the set and the hash read
                continue
            rows.append(
                {
                    "card": card,
                    "kind": row_kind,
                    "device": device or "",
                    "seat": int(seat) if seat else None,
                    "area": row_area or "",
                    "since": _when(since),
                    "last_play": _when(last_play),
                    "last_seen": _when(last_seen),
                }
            )
        return ActivePage(msgspec.json.encode(rows), len(rows), reply[0] or None)
