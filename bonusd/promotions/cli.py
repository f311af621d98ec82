"""`bonusd promotions ...`: check and render promotion files without a running daemon.

A typer sub-app; the main CLI mounts it with `app.add_typer(promotions_app, name="promotions")`.
`check` exits 2 with one line per problem (file: path: problem) when a file is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bonusd.promotions.checks import promotion_warnings
from bonusd.promotions.errors import PromotionFileError
from bonusd.promotions.loader import load_promotion
from bonusd.promotions.render import write_terms
from bonusd.promotions.schema import Promotion

app = typer.Typer(help="Promotion files: check and render.", no_args_is_help=True)

FileArg = Annotated[Path, typer.Argument(help="A promotion file (.toml).", dir_okay=False)]


def _load_or_exit(file: Path) -> Promotion:
    try:
        return load_promotion(file)
    except PromotionFileError as exc:
        for problem in exc.problems:
            typer.echo(str(problem), err=True)
        typer.echo(f"{file.name}: refused ({len(exc.problems)} problem(s))", err=True)
        raise typer.Exit(2) from None


@app.command()
def check(file: FileArg) -> None:
    """Validate a promotion file: every problem is listed; exit 2 if there are any."""
    promotion = _load_or_exit(file)
    for warning in promotion_warnings(promotion):
        typer.echo(f"{file.name}: warning: {warning}", err=True)
    typer.echo(
        f"{file.name}: ok: {promotion.id}, {len(promotion.draw_list)} draw(s), "
        f"{len(promotion.multipliers)} multiplier window(s), "
        f"{len(promotion.jackpot_sessions)} jackpot session(s)"
    )


@app.command()
def render(
    file: FileArg,
    out: Annotated[Path, typer.Option("--out", help="Folder for <id>.md and <id>.html.")],
) -> None:
    """Write the player-facing schedule of the terms as Markdown and HTML."""
    promotion = _load_or_exit(file)
    for path in write_terms(promotion, out):
        typer.echo(f"wrote {path}")
