"""`bonusd demo`: the daemon, a simulated floor and the pages in one command."""
