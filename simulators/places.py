"""Free places on the floor: EGMs, or table seats, grouped by area.

A player takes a random free place in the area they prefer, or anywhere when that area is
full; leaving puts the place back. Taking and putting back are O(1) (swap with the last).
"""

from __future__ import annotations

import random


class FreePlaces:
    """Free places (opaque ints) by area."""

    __slots__ = ("_by_area",)

    def __init__(self) -> None:
        self._by_area: dict[str, list[int]] = {}

    def __len__(self) -> int:
        return sum(len(items) for items in self._by_area.values())

    def put(self, area: str, place: int) -> None:
        self._by_area.setdefault(area, []).append(place)

    def take(self, preferred: str, rng: random.Random) -> int:
        """Remove and return a random free place, in `preferred` if it has one; -1 if none."""
        items = self._by_area.get(preferred) or self._any(rng)
        if not items:
            return -1
        i = int(rng.random() * len(items))
        place = items[i]
        last = items.pop()
        if i < len(items):
            items[i] = last
        return place

    def _any(self, rng: random.Random) -> list[int]:
        """An area's free list, chosen in proportion to its size (empty if all are full)."""
        k = int(rng.random() * len(self))
        for items in self._by_area.values():
            if k < len(items):
                return items
            k -= len(items)
        return []

    def discard(self, area: str, place: int) -> bool:
        """Remove `place` if it is free (a machine going offline); True if it was."""
        items = self._by_area.get(area)
        if not items or place not in items:
            return False
        i = items.index(place)
        last = items.pop()
        if i < len(items):
            items[i] = last
        return True
