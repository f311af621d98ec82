"""Whole-project checks: the import contracts, the key layout's one owner, every path the docs name, the contract docs, no personal data in logs, the settings."""
