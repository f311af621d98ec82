"""The `bonusd` command run in the test's own process (no interpreter start-up per
command): its exit status and its two streams, as a separate process would give them."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from unittest import mock

from typer.testing import CliRunner

from bonusd.cli import main as cli


@dataclass(frozen=True)
class Ran:
    """What a `bonusd` command left: its exit status and its two streams."""

    returncode: int
    stdout: str
    stderr: str


def run_main(env: dict[str, str], *args: str) -> Ran:
    """`python -m bonusd ARGS` in this process: the console entry point itself
    (`bonusd.cli.main.main`, an operator error printed and exit status 2), with `env` over
    the environment and its own stdout and stderr. The command runs its own event loop:
    call it off a test's loop (`asyncio.to_thread`)."""
    with (
        CliRunner().isolation(env=env) as (out, err, _),
        mock.patch.object(sys, "argv", ["bonusd", *args]),
    ):
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        sys.stdout.flush()
        sys.stderr.flush()
        return Ran(code, out.getvalue().decode(), err.getvalue().decode())
