"""RAPS jackpots: eligibility, the floor snapshot and mirror, the jackpot desk and its records."""
