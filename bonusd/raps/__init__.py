"""RAPS bonus jackpots (Random Application Player Selection): eligibility and picks
(pure), the floor snapshot at the jackpot instant, the in-memory floor mirror used to
judge it fast, a session's plan, book and claim, and the desk that runs them against
Redis. Builds on `draws` (fairness, claims), never the reverse."""
