"""The writes a step makes beside its audit records, taken down as data for
`AuditStore.commit`. Two sorts:

* *files* (`file`, `hfile`): large, content-addressed archives (a pool file under its
  commitment, a floor snapshot under its SHA-256). They are written ahead of the commit,
  with the read that precedes it, whether or not the commit then lands: a name that is its
  content's hash can only ever hold that content, and nothing refers to it until a
  committed record does. (Large values cost several times more inside a Lua script than
  as plain commands, so they stay out of it.)
* *writes* (`set`, `hset`, `hsetnx`, `zadd`, `zrem`): small state (indexes, references),
  applied in the same atomic script call as the records (`lua/audit_commit.lua`), so
  they land exactly when the records do.
"""

from __future__ import annotations

from collections.abc import Mapping

Value = str | bytes | int | float
StepFile = tuple[str, str | None, Value]  # (key, hash field or None, value)


class StepWrites:
    """A step's writes, in order: each a command, its key and its arguments."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, str, list[Value]]] = []
        self.files: list[StepFile] = []

    def file(self, name: str, value: Value) -> None:
        """A content-addressed file kept under `name` (written ahead, never replaced)."""
        self.files.append((name, None, value))

    def hfile(self, name: str, field: str, value: Value) -> None:
        """A content-addressed file kept in field `field` of hash `name` (likewise)."""
        self.files.append((name, field, value))

    def set(self, name: str, value: Value, *, nx: bool = False) -> None:
        self.ops.append(("SET", name, [value, "NX"] if nx else [value]))

    def hset(self, name: str, *, mapping: Mapping[str, Value]) -> None:
        if mapping:
            self.ops.append(("HSET", name, [x for pair in mapping.items() for x in pair]))

    def hsetnx(self, name: str, key: str, value: Value) -> None:
        self.ops.append(("HSETNX", name, [key, value]))

    def zadd(self, name: str, mapping: Mapping[str, float]) -> None:
        if mapping:
            self.ops.append(("ZADD", name, [x for m, s in mapping.items() for x in (s, m)]))

    def zrem(self, name: str, *members: str) -> None:
        if members:
            self.ops.append(("ZREM", name, list(members)))

    def encoded(self, first_key: int) -> tuple[list[str], list[Value]]:
        """The writes' keys (KEYS from `first_key` on, each once) and their arguments as
        the script reads them: command, key index, count, arguments."""
        keys: dict[str, int] = {}
        args: list[Value] = []
        for command, name, values in self.ops:
            index = keys.setdefault(name, first_key + len(keys))
            args += [command, index, len(values), *values]
        return list(keys), args
