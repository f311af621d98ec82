"""Where the daemon finds its pages (`displays/`): next to the package in a checkout or
an editable install, or under `{sys.prefix}/share/bonusd/displays` when bonusd was
installed from a wheel (`[tool.setuptools.data-files]` in pyproject.toml)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)
PAGES = {
    "/signage": "signage.html",
    "/crew": "crew.html",
    "/desk": "desk.html",
    "/kiosk": "kiosk.html",
}


@dataclass(frozen=True, slots=True)
class DisplayFiles:
    """The folder of the pages, or why there is none (`missing`): without `displays/`
    the daemon still runs (ingest and draws matter more than pages) and the page routes
    answer 503 naming where the files were looked for."""

    folder: Path
    missing: str = ""

    @classmethod
    def locate(cls) -> DisplayFiles:
        try:
            return cls(find_displays())
        except FileNotFoundError as exc:
            logger.error("%s; the pages answer 503", exc)
            return cls(Path("/nonexistent"), str(exc))


def displays_candidates() -> tuple[Path, ...]:
    """Where `displays/` may be, in the order looked at."""
    return (
        Path(__file__).resolve().parents[2] / "displays",
        Path(sys.prefix) / "share" / "bonusd" / "displays",
    )


def find_displays(candidates: Iterable[Path] | None = None) -> Path:
    """The folder holding the pages; `FileNotFoundError` naming where it looked."""
    looked = tuple(candidates if candidates is not None else displays_candidates())
    for folder in looked:
        if all((folder / page).is_file() for page in PAGES.values()):
            return folder
    pages, where = ", ".join(PAGES.values()), ", ".join(str(p) for p in looked)
    raise FileNotFoundError(f"the display pages ({pages}) are in none of: {where}")
