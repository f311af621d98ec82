"""Rule changes between two versions of a promotion, in words, for the audit record.

Management may vary rules mid-promotion (Festa Fortuna cl. 29; Golden Horse cl. 20); each
change is recorded. `diff_promotions` compares two loaded versions key by key and returns
one `Change` per setting that differs, with its path in the file ("draws.halfway.
qualification.threshold: 20000 -> 25000"). Multiplier windows are matched by id, so a
reordered file is no change; list values show what was added and removed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bonusd.promotions.checks import path_of
from bonusd.promotions.schema import Promotion

_ABSENT = object()


@dataclass(frozen=True)
class Change:
    path: str
    before: Any  # `None` with `added`; JSON-shaped values
    after: Any
    added: bool = False
    removed: bool = False

    def __str__(self) -> str:
        if self.added:
            return f"{self.path}: added {_show(self.after)}"
        if self.removed:
            return f"{self.path}: removed (was {_show(self.before)})"
        if isinstance(self.before, list) and isinstance(self.after, list):
            gone = [v for v in self.before if v not in self.after]
            new = [v for v in self.after if v not in self.before]
            if gone or new:
                parts = [f"added {_show(new)}"] * bool(new) + [f"removed {_show(gone)}"] * bool(
                    gone
                )
                return f"{self.path}: {'; '.join(parts)}"
            return f"{self.path}: reordered {_show(self.before)} -> {_show(self.after)}"
        return f"{self.path}: {_show(self.before)} -> {_show(self.after)}"


def diff_promotions(old: Promotion, new: Promotion) -> list[Change]:
    """Every setting that differs between `old` and `new`, in file order."""
    changes: list[Change] = []
    _diff(_comparable(old), _comparable(new), [], changes)
    return changes


def _comparable(promotion: Promotion) -> dict[str, Any]:
    doc = promotion.model_dump(mode="json")
    doc["multipliers"] = {m["id"]: m for m in doc["multipliers"]}
    return doc


def _diff(before: Any, after: Any, at: list[str | int], out: list[Change]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
            here = [*at, str(key)]
            if old is _ABSENT:
                out.append(Change(path_of(here), None, new, added=True))
            elif new is _ABSENT:
                out.append(Change(path_of(here), old, None, removed=True))
            else:
                _diff(old, new, here, out)
        return
    if (
        isinstance(before, list)
        and isinstance(after, list)
        and len(before) == len(after)
        and any(isinstance(v, dict) for v in before)
    ):
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            _diff(old, new, [*at, index], out)
        return
    if before != after:
        out.append(Change(path_of(at), before, after))


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
