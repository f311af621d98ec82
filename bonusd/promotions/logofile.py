"""A promotion's logo file (`[signage] logo`, `bonusd.promotions.branding`), read within
bounds: a plain file name (no folder, no `..`) in the folder of promotion files, a regular
file (a link is followed only when it stays in that folder), at most `LOGO_MAX_BYTES`,
and a PNG, JPEG or WebP whose first bytes say so and agree with its name. The loader
refuses a promotion whose logo fails (`logo_problem`); the screens' logo route
(`bonusd.api.logos`) reads it again each time (`read_logo`), so a file replaced since is
bounded as well.
"""

from __future__ import annotations

import re
from pathlib import Path

from bonusd.promotions.branding import LOGO_NAME

LOGO_MAX_BYTES = 256 * 1024
MEDIA_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp"}
_NAME = re.compile(LOGO_NAME)


class LogoError(ValueError):
    """The logo cannot be shown; the message says why in an operator's words."""


def sniff(head: bytes) -> str | None:
    """The media type the file's first bytes declare, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_logo(folder: Path, name: str) -> tuple[bytes, str]:
    """The logo's bytes and media type; `LogoError` when it may not be served."""
    if not _NAME.match(name):
        raise LogoError(f"{name!r} is not a plain .png, .jpg or .webp file name")
    root = folder.resolve()
    path = (folder / name).resolve()
    if path.parent != root:
        raise LogoError(f"{name} leads out of the promotions folder")
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise LogoError(f"{name} is not a regular file")
        if size > LOGO_MAX_BYTES:
            raise LogoError(f"{name} is {size:,} bytes; at most {LOGO_MAX_BYTES:,}")
        with path.open("rb") as handle:
            data = handle.read(LOGO_MAX_BYTES + 1)
    except OSError as exc:
        raise LogoError(
            f"{name} cannot be read beside the promotion files: {exc.strerror}"
        ) from exc
    if len(data) > LOGO_MAX_BYTES:
        raise LogoError(f"{name} grew over {LOGO_MAX_BYTES:,} bytes")
    declared = MEDIA_TYPES[name.rsplit(".", 1)[1].lower()]
    found = sniff(data[:16])
    if found != declared:
        what = found or "not an image bonusd shows"
        raise LogoError(f"{name} is named {declared} but its contents are {what}")
    return data, declared


def logo_problem(folder: Path, name: str | None) -> str | None:
    """Why the logo named in a promotion file cannot be shown, or None."""
    if name is None:
        return None
    try:
        read_logo(folder, name)
    except LogoError as exc:
        return str(exc)
    return None
