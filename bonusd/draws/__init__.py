"""Ticket-weighted electronic draws: verifiable randomness (`fairness`), pool files,
the claim state machines, a draw's plan, rounds and book (pure), the desk that runs them
against Redis, and the auditor's verification."""
