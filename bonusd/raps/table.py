"""Tab-separated lines read as columns of byte offsets with numpy, so a floor of 20,000
players (a RAPS floor snapshot, or the `floor-row` index it is read from) is checked and
judged in a few milliseconds instead of being split into 200,000 Python strings.

A `FieldTable` holds the bytes and, for every line and field, where the field starts and
ends; columns are then read on demand as integers, fixed-width byte strings or text.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

Bools = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]
Offsets = npt.NDArray[np.int32]  # positions in the data (Redis strings stay under 512 MB)
TAB, LF, ZERO = 9, 10, 48
MAX_DIGITS = 18  # fits an int64


class FieldError(ValueError):
    """The bytes are not lines of `width` tab-separated fields."""


@dataclass(frozen=True, eq=False)
class FieldTable:
    """`rows` lines of `width` fields: field (i, j) is `data[starts[i, j]:ends[i, j]]`."""

    data: bytes
    starts: Offsets
    ends: Offsets
    _fixed: dict[int, npt.NDArray[np.bytes_]] = field(default_factory=dict, repr=False)
    _ints: dict[int, Ints | None] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, data: bytes, width: int) -> FieldTable:
        """Index `data`: empty, or lines each ending in LF with exactly `width` fields."""
        if not data:
            empty = np.zeros((0, width), dtype=np.int32)
            return cls(data, empty, empty)
        if len(data) >= 2**31:
            raise FieldError("more than 2 GB of lines")
        if not data.endswith(b"\n"):
            raise FieldError("the last line does not end with a line feed")
        buf = np.frombuffer(data, dtype=np.uint8)
        seps = np.flatnonzero((buf == TAB) | (buf == LF))
        rows = data.count(b"\n")
        if len(seps) != rows * width:
            raise FieldError(f"a line does not have {width} fields")
        ends = seps.astype(np.int32).reshape(rows, width)
        kinds = buf[ends]
        if (kinds[:, -1] != LF).any() or (kinds[:, :-1] != TAB).any():
            raise FieldError(f"a line does not have {width} fields")
        starts = np.empty_like(ends)
        starts[0, 0] = 0
        starts[1:, 0] = ends[:-1, -1] + 1
        starts[:, 1:] = ends[:, :-1] + 1
        return cls(data, starts, ends)

    @property
    def rows(self) -> int:
        return len(self.starts)

    @cached_property
    def _buf(self) -> npt.NDArray[np.uint8]:
        return np.frombuffer(self.data, dtype=np.uint8)

    @cached_property
    def _lengths(self) -> Offsets:
        return self.ends - self.starts

    def lengths(self, col: int) -> Offsets:
        return self._lengths[:, col]

    def _gather(self, col: int, width: int, *, right: bool = False) -> npt.NDArray[np.uint8]:
        """The bytes of each field in a `width`-wide row, left-aligned and padded with NUL
        (or right-aligned and padded with "0" when `right`)."""
        steps = np.arange(width, dtype=self.ends.dtype)
        lengths = self.lengths(col)[:, None]
        if right:
            at = self.ends[:, col][:, None] + (steps - width)
            np.maximum(at, 0, out=at)
            outside = steps < width - lengths
        else:
            at = self.starts[:, col][:, None] + steps
            np.minimum(at, len(self.data) - 1, out=at)
            outside = steps >= lengths
        got: npt.NDArray[np.uint8] = self._buf[at]
        np.copyto(got, ZERO if right else 0, where=outside)
        return got

    def integers(self, col: int) -> Ints | None:
        """The column as integers, or None unless every field is 1 to 18 ASCII digits."""
        if col not in self._ints:
            self._ints[col] = self._integers(col)
        return self._ints[col]

    def _integers(self, col: int) -> Ints | None:
        if not self.rows:
            return np.zeros(0, dtype=np.int64)
        lengths = self.lengths(col)
        widest = int(lengths.max())
        if int(lengths.min()) < 1 or widest > MAX_DIGITS:
            return None
        digits = self._gather(col, widest, right=True) - np.uint8(ZERO)  # wraps below "0"
        if (digits > 9).any():
            return None
        powers = 10 ** np.arange(widest - 1, -1, -1, dtype=np.int64)
        return digits.astype(np.int64) @ powers

    def fixed(self, col: int) -> npt.NDArray[np.bytes_]:
        """The column as numpy fixed-width byte strings, to compare and sort (trailing
        NULs do not count: `has_nul` tells whether the data holds any)."""
        if col not in self._fixed:
            widest = max(int(self.lengths(col).max()) if self.rows else 0, 1)
            got = np.ascontiguousarray(self._gather(col, widest))
            self._fixed[col] = got.view(f"S{widest}").ravel()
        return self._fixed[col]

    @cached_property
    def has_nul(self) -> bool:
        return b"\x00" in self.data

    def equals(self, col: int, value: bytes) -> Bools:
        """Where the field is exactly `value` (which holds no NUL)."""
        same: Bools = self.fixed(col) == value
        return same

    def among(self, col: int, values: Collection[str]) -> Bools:
        """Where the field is one of `values`."""
        if not values:
            return np.zeros(self.rows, dtype=np.bool_)
        found: Bools = np.isin(self.fixed(col), [v.encode() for v in values])
        return found

    def texts(self, col: int, rows: Ints | None = None) -> list[str]:
        """The fields of `rows` (default: every line) as text."""
        which = range(self.rows) if rows is None else rows.tolist()
        starts, ends, data = self.starts[:, col].tolist(), self.ends[:, col].tolist(), self.data
        return [data[starts[i] : ends[i]].decode() for i in which]
