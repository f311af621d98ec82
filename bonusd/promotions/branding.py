"""A promotion's look on the floor screens: the optional `[signage]` table of a promotion
file (title, colours, logo file, how to enter). Pure: the shape and limits of the table,
and the colour arithmetic that keeps it legible; the logo file itself is read and bounded
in `bonusd.promotions.logofile`.

Every key has a default, so a file without `[signage]` shows the promotion's name in the
house colours. Colours are `#rrggbb`; the table is refused when its text would be hard to
read from across the floor (WCAG contrast: ink on the background at least 7:1, on the
panels at least 4.5:1, the accent on the background at least 3:1).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from bonusd.registry.text import plain_text

HEX_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
LOGO_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.(?:png|jpg|jpeg|webp)$"
MIN_INK, MIN_PANEL_INK, MIN_ACCENT = 7.0, 4.5, 3.0  # contrast ratios (WCAG 2)
DARK, LIGHT = "#10131c", "#ffffff"  # the text written on the accent colour: whichever reads


def _colour(value: str) -> str:
    if not HEX_COLOUR.match(value):
        raise ValueError(f"must be a colour written #rrggbb, got {value!r}")
    return value.lower()


Colour = Annotated[str, AfterValidator(_colour)]
ScreenText = Annotated[str, AfterValidator(plain_text)]


def luminance(colour: str) -> float:
    """The relative luminance of `#rrggbb` (WCAG 2)."""
    channels = []
    for start in (1, 3, 5):
        value = int(colour[start : start + 2], 16) / 255
        channels.append(value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4)
    red, green, blue = channels
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(first: str, second: str) -> float:
    """The contrast ratio of two colours, 1 (none) to 21 (black on white)."""
    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def ink_on(colour: str) -> str:
    """The text colour that reads best on `colour` (dark or white)."""
    return DARK if contrast(DARK, colour) >= contrast(LIGHT, colour) else LIGHT


class Colours(BaseModel):
    """The screen's colours; the defaults are the house colours."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    background: Colour = "#0b1020"
    panel: Colour = "#141b33"
    ink: Colour = "#f4f6fb"
    accent: Colour = "#ffc93c"

    @model_validator(mode="after")
    def _legible(self) -> Colours:
        pairs = (
            ("ink", self.ink, "background", self.background, MIN_INK),
            ("ink", self.ink, "panel", self.panel, MIN_PANEL_INK),
            ("accent", self.accent, "background", self.background, MIN_ACCENT),
        )
        for name, colour, on_name, on, least in pairs:
            ratio = contrast(colour, on)
            if ratio < least:
                raise ValueError(
                    f"{name} {colour} on {on_name} {on} has a contrast of {ratio:.1f}:1; "
                    f"at least {least:g}:1 is needed to read it across the floor"
                )
        return self

    @property
    def on_accent(self) -> str:
        return ink_on(self.accent)


class Signage(BaseModel):
    """What the floor screens show of the promotion besides its draws and jackpots."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: Annotated[ScreenText, Field(max_length=60)] = ""  # "": the promotion's name
    logo: Annotated[str, Field(pattern=LOGO_NAME)] | None = None  # a file beside the promotion
    colours: Colours = Field(default_factory=Colours)
    # the steps the "how to enter" slide shows; empty: written from the draws' entry rules
    how_to_enter: list[Annotated[ScreenText, Field(min_length=1, max_length=90)]] = Field(
        default_factory=list, max_length=4
    )
