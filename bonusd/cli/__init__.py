"""The `bonusd` command line. The development tools (`bonusd demo`, `bonusd rehearse`)
live in `simulators` and are imported only when their command runs."""
