"""RAPS jackpots (Random Application Player Selection): eligibility and picks (pure),
the floor snapshot at the jackpot instant, the in-memory floor mirror used to judge it
fast, a session's plan, book and claim, and the runner that takes their steps against
Redis. Builds on `draws` (fairness, claims, the ledger) and `floor`, never the reverse."""
