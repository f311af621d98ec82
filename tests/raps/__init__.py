"""RAPS jackpots: eligibility, the floor snapshot and mirror, the RAPS runner and its records."""
