"""Draws: fairness, rounds, books, claims, the draw runner and its races and crashes."""
