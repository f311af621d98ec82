"""The `bonusd` command line, the top of the stack: it may import every package. The
development tools (`bonusd demo`, `bonusd rehearse`) live in `simulators` and are imported
only when their command runs."""
