"""`python -m bonusd` is the `bonusd` command."""

from bonusd.cli import main

main()
