"""`python -m bonusd` is the `bonusd` command."""

from bonusd.cli.main import main

main()
