"""Files that appear under their name only once whole: written under a temporary name
beside it, flushed to disk, then renamed over it (a crash or an error leaves the name
as it was, never half a file)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def written_whole(path: Path) -> Iterator[IO[str]]:
    """A UTF-8 text file (no newline translation) opened under a temporary name beside
    `path`, readable by its owner only, renamed to `path` once the block ends without an
    error; removed otherwise."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
