"""Draws: fairness, rounds, books, claims, the draw desk and its races and crashes."""
