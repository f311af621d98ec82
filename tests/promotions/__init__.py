"""Promotion files, the rules engine, and the live standings, boards, summaries and rule sync."""
