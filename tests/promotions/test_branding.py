"""A promotion's look on the floor screens (`[signage]`): every key optional with a
default, colours legible from across the floor or refused with their path, and a logo
file named beside the promotion, bounded in size and type (a file that is not the image
its name says, one too large or one outside the folder is refused, by the loader and
again by the reader the screens' route uses)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from bonusd.promotions import PromotionFileError, load_promotion, parse_promotion
from bonusd.promotions.branding import Colours, contrast, ink_on
from bonusd.promotions.logofile import LOGO_MAX_BYTES, LogoError, read_logo
from tests.daemon_helpers import PROJECT

GH = PROJECT / "promotions" / "golden-horse-mega-points-chase.toml"


def png(width: int = 4, height: int = 2) -> bytes:
    """A valid RGBA PNG of one gold colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\xc9\x3c\xff" * width for _ in range(height))
    head = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows))


def with_signage(table: str) -> str:
    return GH.read_text(encoding="utf-8") + f"\n[signage]\n{table}\n"


def problems(text: str) -> list[str]:
    with pytest.raises(PromotionFileError) as caught:
        parse_promotion(text, source="gh.toml")
    return [str(p) for p in caught.value.problems]


def test_a_file_without_signage_gets_the_house_look() -> None:
    promotion = load_promotion(GH)
    look = promotion.signage
    assert look.title == "" and look.logo is None and look.how_to_enter == []
    assert look.colours == Colours()
    assert look.colours.on_accent == "#10131c"  # dark text on the gold accent


def test_colours_titles_and_steps_are_read_and_checked() -> None:
    text = with_signage(
        'title = "Golden Evening"\n'
        'how_to_enter = ["Activate at any eHost", "Be here at 19:00"]\n'
        'colours = { background = "#101010", panel = "#202020", accent = "#33CC99" }'
    )
    look = parse_promotion(text, source="gh.toml").signage
    assert look.title == "Golden Evening"
    assert look.colours.accent == "#33cc99" and look.colours.ink == "#f4f6fb"
    assert look.how_to_enter == ["Activate at any eHost", "Be here at 19:00"]
    found = problems(with_signage('colours = { accent = "gold" }'))
    assert found == [
        "gh.toml: signage.colours.accent: must be a colour written #rrggbb, got 'gold'"
    ]
    dim = problems(with_signage('colours = { background = "#0b1020", accent = "#1a1a40" }'))
    assert len(dim) == 1 and dim[0].startswith("gh.toml: signage.colours: accent #1a1a40 on")
    assert "needed to read it across the floor" in dim[0]
    pale = problems(with_signage('colours = { background = "#9aa6c4" }'))
    assert "ink #f4f6fb on background #9aa6c4" in pale[0]
    assert problems(with_signage('title = "Gold\\u202eEvening"'))[0].startswith(
        "gh.toml: signage.title: contains the control or text-direction character U+202E"
    )
    assert (
        "signage.how_to_enter" in problems(with_signage("how_to_enter = [" + '"a", ' * 5 + "]"))[0]
    )
    assert "unknown key" in problems(with_signage('colour = "#000000"'))[0]


def test_contrast_is_wcag() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#777777") == pytest.approx(1.0)
    assert ink_on("#ffc93c") == "#10131c" and ink_on("#5b1a8c") == "#ffffff"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../logo.png", "must match"),
        ("logo.svg", "must match"),
        ("sub/logo.png", "must match"),
    ],
)
def test_a_logo_name_is_a_plain_image_file_name(name: str, problem: str) -> None:
    assert problem in problems(with_signage(f'logo = "{name}"'))[0]


def test_the_loader_refuses_a_logo_it_could_not_show(tmp_path: Path) -> None:
    path = tmp_path / "gh.toml"
    path.write_text(with_signage('logo = "gh-logo.png"'), encoding="utf-8")
    with pytest.raises(PromotionFileError) as caught:
        load_promotion(path)
    (problem,) = caught.value.problems
    assert str(problem).startswith("gh.toml: signage.logo: gh-logo.png cannot be read")
    (tmp_path / "gh-logo.png").write_bytes(b"GIF89a" + bytes(40))
    with pytest.raises(PromotionFileError, match="named image/png but its contents are not"):
        load_promotion(path)
    (tmp_path / "gh-logo.png").write_bytes(png() + bytes(LOGO_MAX_BYTES))
    with pytest.raises(PromotionFileError, match=r"at most 262,144"):
        load_promotion(path)
    (tmp_path / "gh-logo.png").write_bytes(png())
    assert load_promotion(path).signage.logo == "gh-logo.png"


def test_the_reader_stays_in_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "promotions"
    folder.mkdir()
    (tmp_path / "secret.png").write_bytes(png())
    (folder / "link.png").symlink_to(tmp_path / "secret.png")
    with pytest.raises(LogoError, match="leads out of the promotions folder"):
        read_logo(folder, "link.png")
    with pytest.raises(LogoError, match="not a plain"):
        read_logo(folder, "../secret.png")
    (folder / "real.png").write_bytes(png())
    (folder / "inside.png").symlink_to(folder / "real.png")
    data, media_type = read_logo(folder, "inside.png")
    assert media_type == "image/png" and data.startswith(b"\x89PNG")
    (folder / "shot.jpg").write_bytes(png())
    with pytest.raises(LogoError, match="named image/jpeg but its contents are image/png"):
        read_logo(folder, "shot.jpg")
